package redlock_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/redlock"
)

// These tests run against real redis-server processes. A missing
// redis-server fails them instead of skipping: CI installs it, and a lock
// test that silently does not run proves nothing.

// testNodeTimeout is generous so that a slow CI machine running -race does
// not turn a test about quorum into a test about latency.
const testNodeTimeout = 200 * time.Millisecond

// startCluster starts n redis-server nodes and returns lock clients for them
// in node order (n1 is index 0). Everything is stopped when the test ends.
func startCluster(t *testing.T, n int) (*local.Cluster, []*redis.Client) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found in PATH (%v): these tests need a real Redis; install it (apt-get install -y redis-server)", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Debug: some tests stall a node with DEBUG SLEEP.
	cl, err := local.Start(ctx, cluster.Config{Nodes: n, Dir: dir, Debug: true})
	if err != nil {
		t.Fatalf("starting %d redis-server nodes: %v", n, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.Close(ctx); err != nil {
			t.Errorf("stopping cluster: %v", err)
		}
	})
	clients := make([]*redis.Client, n)
	for i, node := range cl.Nodes() {
		c := redis.NewClient(redlock.ClientOptions(node.Addr(), cl.Password()))
		t.Cleanup(func() { _ = c.Close() })
		// Dial now, so the first lock attempt measures the lock, not the
		// connection handshake.
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("ping %s: %v", node.Name(), err)
		}
		clients[i] = c
	}
	return cl, clients
}

func newLocker(t *testing.T, clients []*redis.Client, opts redlock.Options) *redlock.Locker {
	t.Helper()
	if opts.NodeTimeout == 0 {
		opts.NodeTimeout = testNodeTimeout
	}
	l, err := redlock.New(clients, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func kill(t *testing.T, cl *local.Cluster, idx ...int) {
	t.Helper()
	for _, i := range idx {
		if err := cl.Processes()[i].Kill(context.Background()); err != nil {
			t.Fatalf("kill %s: %v", cl.Processes()[i].Name(), err)
		}
	}
}

// valueOn returns key's value on the node behind c, or "" when absent.
func valueOn(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := c.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s on %s: %v", key, c.Options().Addr, err)
	}
	return v
}

// wantValues checks key's value on each listed node.
func wantValues(t *testing.T, clients []*redis.Client, key, want string, idx ...int) {
	t.Helper()
	for _, i := range idx {
		if got := valueOn(t, clients[i], key); got != want {
			t.Errorf("node %d: %s = %q, want %q", i, key, got, want)
		}
	}
}

func TestLockAndRelease(t *testing.T) {
	_, clients := startCluster(t, 5)
	var acquired, releasing *redlock.Lease
	l := newLocker(t, clients, redlock.Options{Hooks: redlock.Hooks{
		AfterAcquire:  func(_ context.Context, lease *redlock.Lease) { acquired = lease },
		BeforeRelease: func(_ context.Context, lease *redlock.Lease) { releasing = lease },
	}})
	other := newLocker(t, clients, redlock.Options{})
	const key, ttl = "lock:basic", 2 * time.Second

	lease, err := l.TryLock(t.Context(), key, ttl)
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if acquired != lease {
		t.Error("AfterAcquire hook did not see the returned lease")
	}
	if !slices.Equal(lease.Granted, []int{0, 1, 2, 3, 4}) || lease.Key != key || lease.TTL != ttl {
		t.Errorf("lease = %+v, want granted by all 5 nodes", lease)
	}
	wantValues(t, clients, key, lease.Value, 0, 1, 2, 3, 4)
	for i, c := range clients {
		if pttl := c.PTTL(t.Context(), key).Val(); pttl <= 0 || pttl > ttl {
			t.Errorf("node %d: PTTL = %v, want in (0, %v]", i, pttl, ttl)
		}
	}

	_, err = other.TryLock(t.Context(), key, ttl)
	var ae *redlock.AcquireError
	if !errors.As(err, &ae) || ae.Granted != 0 {
		t.Fatalf("second TryLock on a held lock: %v, want an AcquireError with 0 granted", err)
	}
	for i, e := range ae.NodeErrs {
		if e != nil {
			t.Errorf("NodeErrs[%d] = %v, want nil: 'held by someone else' is a definite answer", i, e)
		}
	}
	wantValues(t, clients, key, lease.Value, 0, 1, 2, 3, 4) // the loser's rollback left the holder alone

	deleted, err := l.Release(t.Context(), lease)
	if err != nil || !slices.Equal(deleted, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("Release = %v, %v; want all 5 nodes deleted", deleted, err)
	}
	if releasing != lease {
		t.Error("BeforeRelease hook did not see the lease")
	}
	wantValues(t, clients, key, "", 0, 1, 2, 3, 4)
}

func TestQuorumWithTwoNodesDown(t *testing.T) {
	cl, clients := startCluster(t, 5)
	kill(t, cl, 3, 4)
	l := newLocker(t, clients, redlock.Options{})
	const key = "lock:two-down"

	lease, err := l.TryLock(t.Context(), key, 2*time.Second)
	if err != nil {
		t.Fatalf("TryLock with 3 of 5 nodes up: %v", err)
	}
	if !slices.Equal(lease.Granted, []int{0, 1, 2}) {
		t.Errorf("Granted = %v, want [0 1 2]", lease.Granted)
	}
	wantValues(t, clients, key, lease.Value, 0, 1, 2)

	deleted, err := l.Release(t.Context(), lease)
	if err != nil || !slices.Equal(deleted, []int{0, 1, 2}) {
		t.Fatalf("Release = %v, %v; want [0 1 2], nil", deleted, err)
	}
	wantValues(t, clients, key, "", 0, 1, 2)
}

func TestNoQuorumWithThreeNodesDown(t *testing.T) {
	cl, clients := startCluster(t, 5)
	kill(t, cl, 2, 3, 4)
	l := newLocker(t, clients, redlock.Options{})
	const key = "lock:three-down"

	lease, err := l.TryLock(t.Context(), key, 5*time.Second)
	if lease != nil || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock with 2 of 5 nodes up = %v, %v; want ErrNotAcquired", lease, err)
	}
	var ae *redlock.AcquireError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not an *AcquireError", err)
	}
	if ae.Granted != 2 || ae.Quorum != 3 {
		t.Errorf("Granted, Quorum = %d, %d; want 2, 3", ae.Granted, ae.Quorum)
	}
	if ae.Validity <= 0 {
		t.Errorf("Validity = %v: the attempt failed for lack of quorum, not of time", ae.Validity)
	}
	for i, e := range ae.NodeErrs {
		if up := i < 2; up != (e == nil) {
			t.Errorf("NodeErrs[%d] = %v (node up: %v)", i, e, up)
		}
	}
	t.Logf("error: %v", err)
	// The TTL is 5s, so an absent key proves the rollback, not expiry.
	wantValues(t, clients, key, "", 0, 1)
}

func TestValidityAndDeadline(t *testing.T) {
	_, clients := startCluster(t, 5)
	l := newLocker(t, clients, redlock.Options{})
	tests := []struct {
		name    string
		ttl     time.Duration
		wantTTL time.Duration
	}{
		{"500ms", 500 * time.Millisecond, 500 * time.Millisecond},
		{"2s", 2 * time.Second, 2 * time.Second},
		{"sub-millisecond part truncated", 1500*time.Millisecond + 300*time.Microsecond, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			lease, err := l.TryLock(t.Context(), "lock:validity", tt.ttl)
			after := time.Now()
			if err != nil {
				t.Fatalf("TryLock: %v", err)
			}
			defer func() { _, _ = l.Release(context.Background(), lease) }()
			if lease.TTL != tt.wantTTL {
				t.Errorf("TTL = %v, want %v", lease.TTL, tt.wantTTL)
			}
			drift := l.Drift(lease.TTL)
			if want := lease.TTL/100 + 2*time.Millisecond; drift != want {
				t.Errorf("Drift(%v) = %v, want ttl·0.01 + 2ms = %v", lease.TTL, drift, want)
			}
			if got, want := lease.Deadline.Sub(lease.Start), lease.TTL-drift; got != want {
				t.Errorf("Deadline − Start = %v, want ttl − drift = %v", got, want)
			}
			if lease.Validity <= 0 || lease.Validity > lease.TTL-drift {
				t.Errorf("Validity = %v, want in (0, ttl − drift = %v]", lease.Validity, lease.TTL-drift)
			}
			// Validity is ttl − drift − elapsed, and elapsed is bounded by
			// the time TryLock took.
			if min := lease.TTL - drift - after.Sub(before); lease.Validity < min {
				t.Errorf("Validity = %v, less than ttl − drift − (time TryLock took) = %v", lease.Validity, min)
			}
			if lease.Start.Before(before) || lease.Start.After(after) {
				t.Errorf("Start %v outside the TryLock call [%v, %v]", lease.Start, before, after)
			}
			if r := lease.Remaining(); r > lease.Validity {
				t.Errorf("Remaining() = %v after acquisition, more than Validity %v", r, lease.Validity)
			}
		})
	}
}

func TestReleaseNeverDeletesOthersKey(t *testing.T) {
	t.Parallel() // mostly waiting
	_, clients := startCluster(t, 5)
	a := newLocker(t, clients, redlock.Options{})
	b := newLocker(t, clients, redlock.Options{})
	const key = "lock:expired"

	leaseA, err := a.TryLock(t.Context(), key, 300*time.Millisecond)
	if err != nil {
		t.Fatalf("a.TryLock: %v", err)
	}
	time.Sleep(leaseA.TTL + 100*time.Millisecond) // a's key expires everywhere
	leaseB, err := b.TryLock(t.Context(), key, 5*time.Second)
	if err != nil {
		t.Fatalf("b.TryLock after a's lease expired: %v", err)
	}

	deleted, err := a.Release(t.Context(), leaseA)
	if !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("a.Release of an expired lease: %v, want ErrNotHeld", err)
	}
	var re *redlock.ReleaseError
	if !errors.As(err, &re) || len(re.Deleted) != 0 || re.Quorum != 3 {
		t.Errorf("ReleaseError = %+v, want nothing deleted, quorum 3", re)
	}
	if len(deleted) != 0 {
		t.Errorf("a.Release deleted on %v", deleted)
	}
	wantValues(t, clients, key, leaseB.Value, 0, 1, 2, 3, 4)

	if _, err := b.Release(t.Context(), leaseB); err != nil {
		t.Errorf("b.Release: %v", err)
	}
}

func TestPartialAcquisitionRolledBack(t *testing.T) {
	_, clients := startCluster(t, 5)
	l := newLocker(t, clients, redlock.Options{})
	const key, foreign = "lock:partial", "someone-else"
	for _, c := range clients[:3] {
		if err := c.Set(t.Context(), key, foreign, 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}

	_, err := l.TryLock(t.Context(), key, 5*time.Second)
	var ae *redlock.AcquireError
	if !errors.As(err, &ae) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock against 3 foreign keys: %v, want an AcquireError", err)
	}
	if ae.Granted != 2 {
		t.Errorf("Granted = %d, want 2", ae.Granted)
	}
	if len(ae.Stranded) != 0 {
		t.Errorf("Stranded = %v, want none: every node answered the rollback", ae.Stranded)
	}
	// Our 5s keys are gone from the two nodes that granted them: rollback.
	wantValues(t, clients, key, "", 3, 4)
	wantValues(t, clients, key, foreign, 0, 1, 2)
	for i, c := range clients[:3] {
		if pttl := c.PTTL(t.Context(), key).Val(); pttl <= 5*time.Second {
			t.Errorf("node %d: foreign key's PTTL = %v, want it untouched (> 5s)", i, pttl)
		}
	}
}

// A rollback that gets no answer from a node says so: the failed
// attempt's key may stay there until it expires, keeping others out (the
// harness records the refusal with those nodes, and the liveness checker
// counts the key). Node 5 sleeps through the SET and the rollback's
// delete.
func TestRollbackWithoutAnswerIsStranded(t *testing.T) {
	t.Parallel() // mostly waiting
	cl, clients := startCluster(t, 5)
	const key, foreign = "lock:stranded", "someone-else"
	setAll(t, clients[:3], key, foreign, time.Minute)
	sleeper := redis.NewClient(&redis.Options{
		Addr: cl.Nodes()[4].Addr(), Password: cl.Password(),
		MaxRetries: -1, ReadTimeout: 10 * time.Second,
	})
	defer sleeper.Close()
	slept := make(chan error, 1)
	go func() { slept <- sleeper.Do(context.Background(), "debug", "sleep", "2").Err() }()
	defer func() {
		if err := <-slept; err != nil {
			t.Errorf("DEBUG SLEEP: %v", err)
		}
	}()
	time.Sleep(200 * time.Millisecond) // let the node fall asleep

	l := newLocker(t, clients, redlock.Options{NodeTimeout: 300 * time.Millisecond})
	_, err := l.TryLock(t.Context(), key, 5*time.Second)
	var ae *redlock.AcquireError
	if !errors.As(err, &ae) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock against 3 foreign keys and a sleeping node: %v, want an AcquireError", err)
	}
	// Nodes 1-3 refused: certainly not written. Node 5 never answered;
	// node 4 granted and answered its delete (on a machine too loaded to
	// answer in 300 ms it may be stranded too).
	if !slices.Contains(ae.Stranded, 4) {
		t.Errorf("Stranded = %v, want node index 4 (asleep) among them", ae.Stranded)
	}
	for _, i := range ae.Stranded {
		if i < 3 {
			t.Errorf("Stranded = %v: node index %d refused, it holds no key of ours", ae.Stranded, i)
		}
	}
	if !strings.Contains(err.Error(), "its rollback got no answer from") {
		t.Errorf("error %q does not say the rollback went unanswered", err)
	}
}

// TestAfterRepliesPauseCountsIntoElapsed is antirez's answer to the
// "pause during acquisition" objection: time spent between the replies and
// the validity check counts, so a long pause makes the attempt fail.
func TestAfterRepliesPauseCountsIntoElapsed(t *testing.T) {
	t.Parallel() // mostly waiting
	_, clients := startCluster(t, 5)
	// Long enough for a node timeout that no loaded machine reaches: every
	// node must answer before the hook looks for the keys.
	const ttl = 1500 * time.Millisecond
	tests := []struct {
		name   string
		pause  time.Duration
		wantOK bool
	}{
		{"short pause", 20 * time.Millisecond, true},
		{"pause longer than ttl", ttl + 200*time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "lock:pause:" + tt.name
			var sawKeys bool
			l := newLocker(t, clients, redlock.Options{NodeTimeout: time.Second, Hooks: redlock.Hooks{
				AfterReplies: func(ctx context.Context, k string) {
					sawKeys = true
					for i, c := range clients {
						if valueOn(t, c, k) == "" {
							sawKeys = false
							t.Errorf("node %d has no key when AfterReplies runs", i)
						}
						// Make the keys outlive the pause, as on nodes whose
						// clocks run slow: only the rollback can remove them.
						if err := c.PExpire(ctx, k, time.Minute).Err(); err != nil {
							t.Errorf("PEXPIRE on node %d: %v", i, err)
						}
					}
					time.Sleep(tt.pause)
				},
			}})
			lease, err := l.TryLock(t.Context(), key, ttl)
			if !sawKeys {
				t.Fatal("AfterReplies hook did not run after all SETs landed")
			}
			if tt.wantOK {
				if err != nil {
					t.Fatalf("TryLock with a %v pause: %v", tt.pause, err)
				}
				if max := ttl - l.Drift(ttl) - tt.pause; lease.Validity > max {
					t.Errorf("Validity = %v, more than ttl − drift − pause = %v", lease.Validity, max)
				}
				if _, err := l.Release(t.Context(), lease); err != nil {
					t.Errorf("Release: %v", err)
				}
				return
			}
			var ae *redlock.AcquireError
			if !errors.As(err, &ae) {
				t.Fatalf("TryLock with a %v pause: %v, want an AcquireError", tt.pause, err)
			}
			if ae.Granted != 5 {
				t.Errorf("Granted = %d, want 5: the attempt must fail on time alone", ae.Granted)
			}
			if ae.Validity > 0 || ae.Elapsed < tt.pause {
				t.Errorf("Validity, Elapsed = %v, %v; want ≤ 0 and ≥ the %v pause", ae.Validity, ae.Elapsed, tt.pause)
			}
			if want := ttl - ae.Elapsed - l.Drift(ttl); ae.Validity != want {
				t.Errorf("Validity = %v, want ttl − elapsed − drift = %v", ae.Validity, want)
			}
			wantValues(t, clients, key, "", 0, 1, 2, 3, 4)
		})
	}
}

// TestCancelledAcquireStillRollsBack cancels the caller's context after the
// SETs landed: the attempt must fail and its keys must still be deleted.
func TestCancelledAcquireStillRollsBack(t *testing.T) {
	_, clients := startCluster(t, 5)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	l := newLocker(t, clients, redlock.Options{Hooks: redlock.Hooks{
		AfterReplies: func(context.Context, string) { cancel() },
	}})
	const key = "lock:cancelled"

	lease, err := l.TryLock(ctx, key, 5*time.Second)
	if lease != nil || !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("TryLock cancelled after the replies = %v, %v; want ErrNotAcquired and context.Canceled", lease, err)
	}
	var ae *redlock.AcquireError
	if errors.As(err, &ae) && ae.Granted != 5 {
		t.Errorf("Granted = %d, want 5", ae.Granted)
	}
	wantValues(t, clients, key, "", 0, 1, 2, 3, 4)
}

func TestReleaseIgnoresCallerCancellation(t *testing.T) {
	_, clients := startCluster(t, 5)
	l := newLocker(t, clients, redlock.Options{})
	const key = "lock:release-cancelled"
	lease, err := l.TryLock(t.Context(), key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	deleted, err := l.Release(ctx, lease)
	if err != nil || len(deleted) != 5 {
		t.Fatalf("Release with a cancelled context = %v, %v; want all 5 deleted", deleted, err)
	}
	wantValues(t, clients, key, "", 0, 1, 2, 3, 4)
}

// TestNodeTimeoutBoundsSlowNode blocks one node with DEBUG SLEEP: the
// attempt must wait for it only NodeTimeout, not until it wakes up.
func TestNodeTimeoutBoundsSlowNode(t *testing.T) {
	t.Parallel() // mostly waiting
	cl, clients := startCluster(t, 5)
	const sleep = 1500 * time.Millisecond
	sleeper := redis.NewClient(&redis.Options{
		Addr: cl.Nodes()[4].Addr(), Password: cl.Password(),
		MaxRetries: -1, ReadTimeout: 10 * time.Second,
	})
	defer sleeper.Close()
	slept := make(chan error, 1)
	go func() { slept <- sleeper.Do(context.Background(), "debug", "sleep", sleep.Seconds()).Err() }()
	defer func() {
		if err := <-slept; err != nil {
			t.Errorf("DEBUG SLEEP: %v", err)
		}
	}()
	time.Sleep(200 * time.Millisecond) // let the node fall asleep

	l := newLocker(t, clients, redlock.Options{NodeTimeout: 100 * time.Millisecond})
	start := time.Now()
	lease, err := l.TryLock(t.Context(), "lock:slow", 3*time.Second)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("TryLock with one sleeping node: %v", err)
	}
	if took > 700*time.Millisecond {
		t.Errorf("TryLock took %v; the sleeping node should have cost at most about NodeTimeout (100ms)", took)
	}
	if !slices.Equal(lease.Granted, []int{0, 1, 2, 3}) {
		t.Errorf("Granted = %v, want [0 1 2 3]", lease.Granted)
	}
	if _, err := l.Release(context.Background(), lease); err != nil {
		t.Errorf("Release: %v", err)
	}
}
