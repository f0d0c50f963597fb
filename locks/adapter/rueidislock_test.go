package adapter

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/history"
	"splitbrain/workload"
)

// rueidislock on a real node: granted with no deadline and a Lost channel,
// refused while held, extended in place, released; the client's belief
// ends by itself when the keys vanish from the server (the lock's context
// is cancelled and the client releases), and an attempt against a killed
// node is an unknown outcome, not a refusal.
func TestRueidislock(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (%v): these tests need a real Redis", err)
	}
	setup, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl, err := local.Start(setup, cluster.Config{Nodes: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close(context.Background()) })
	node := cl.Processes()[0]
	const ttl = 2 * time.Second
	newLock := func() *Rueidislock {
		// A generous TryNextAfter: the default 20ms per key is shorter
		// than a loaded machine's hiccups.
		l, err := NewRueidislock(RueidislockOptions{Addr: node.Addr(), Password: cl.Password(), Validity: ttl, TryNextAfter: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	ctx := t.Context()
	key := "rueidis"
	keys := func() int64 {
		return node.Admin().Exists(ctx, "rueidislock:0:"+key, "rueidislock:1:"+key, "rueidislock:2:"+key).Val()
	}
	a, b := newLock(), newLock()

	if _, err := a.Acquire(ctx, key, time.Second); err == nil || errors.Is(err, workload.ErrNotAcquired) {
		t.Errorf("Acquire with a ttl other than the validity: %v, want an argument error", err)
	}
	lease, err := a.Acquire(ctx, key, ttl)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if !lease.Deadline.IsZero() || lease.Lost == nil || lease.Value == "" || lease.Token != nil {
		t.Errorf("lease %+v: want no deadline, a Lost channel, a value and no token", lease)
	}
	if n := keys(); n < 2 {
		t.Errorf("%d of the 3 keys on the node after the acquire, want a majority", n)
	}
	if _, err := b.Acquire(ctx, key, ttl); !errors.Is(err, workload.ErrNotAcquired) {
		t.Errorf("second client's Acquire on a held lock: %v, want workload.ErrNotAcquired", err)
	}
	if ext, err := a.Extend(ctx, lease, ttl); err != nil || ext != lease {
		t.Errorf("Extend: %v, %p; want the same lease %p", err, ext, lease)
	}
	if err := a.Release(ctx, lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n := keys(); n != 0 {
		t.Errorf("%d keys left after Release", n)
	}
	if _, err := a.Extend(ctx, lease, ttl); !errors.Is(err, workload.ErrNotExtended) {
		t.Errorf("Extend after Release: %v, want workload.ErrNotExtended", err)
	}

	// Lost: the keys are deleted behind the holder's back. The
	// invalidations make rueidislock re-check, find its value gone and
	// cancel the context; the client releases at once.
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, time.Now())
	c := workload.NewClient("c1", b, rec)
	if err := c.Acquire(ctx, key, ttl); err != nil {
		t.Fatalf("client Acquire after the release: %v", err)
	}
	node.Admin().Del(ctx, "rueidislock:0:"+key, "rueidislock:1:"+key, "rueidislock:2:"+key)
	waitFor(t, 20*time.Second, "the client's belief to end after its keys were deleted", func() bool { return !c.Holds(key) })
	// The read stops at the lost lease, before it would reach a storage
	// (none here).
	if _, err := c.ReadCounter(ctx, nil, key); !errors.Is(err, workload.ErrLeaseLost) {
		t.Errorf("read after the lock said the lease was lost: %v, want workload.ErrLeaseLost", err)
	}
	if h := buf.String(); !strings.Contains(h, `"release"`) || !strings.Contains(h, "context had ended") {
		t.Errorf("history has no failed release marking when the client learned:\n%s", h)
	}
	// The lock is free again: the other client gets it.
	again, err := a.Acquire(ctx, key, ttl)
	if err != nil {
		t.Fatalf("Acquire after the loss: %v", err)
	}

	// A killed node: the holder is told (its connection closes), and an
	// attempt that cannot reach the node is unknown, not refused.
	if err := node.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the holder's context to end after the node was killed", func() bool {
		select {
		case <-again.Lost:
			return true
		default:
			return false
		}
	})
	if _, err := b.Acquire(ctx, key, ttl); err == nil || errors.Is(err, workload.ErrNotAcquired) {
		t.Errorf("Acquire against a killed node: %v, want an unknown outcome", err)
	}
}

// waitFor polls cond until it holds, failing the test after limit: a
// generous limit, since the condition comes from background work.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rueidislock through rueidis' own Sentinel client, on a real master, its
// replica and a sentinel: granted on the master the sentinel names; the
// master's death ends the holder's belief by itself (its connection
// closes, the lock's context is cancelled); once the sentinel promoted
// the replica, the same locker takes the lock there.
func TestRueidislockSentinel(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		t.Fatalf("redis-sentinel not found (%v): this test needs a real Sentinel", err)
	}
	setup, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl, err := local.Start(setup, cluster.Config{Nodes: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close(context.Background()) })
	master := cl.Processes()[0]
	if _, err := cl.AddReplica(setup, cluster.ReplicaSpec{Name: "r1", Of: "n1"}); err != nil {
		t.Fatal(err)
	}
	replica, _ := cl.Process("r1")
	addrs, err := cl.ReserveSentinels(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AddSentinel(setup, cluster.SentinelSpec{Name: "s1", Addr: addrs[0], Config: cluster.SentinelConfig{
		Master: master.Addr(), Quorum: 1, DownAfter: 300 * time.Millisecond, FailoverTimeout: time.Second}}); err != nil {
		t.Fatal(err)
	}
	s1, _ := cl.Process("s1")
	// No promotion without a replica the sentinel knows of: it learns of
	// it from the master's INFO, within seconds.
	for {
		v, err := s1.Admin().Do(setup, "sentinel", "replicas", cluster.SentinelMaster).Slice()
		if err == nil && len(v) == 1 {
			break
		}
		if setup.Err() != nil {
			t.Fatalf("the sentinel never listed r1: %v %v", v, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	const ttl = 2 * time.Second
	l, err := NewRueidislock(RueidislockOptions{Sentinels: []string{s1.Addr()}, MasterSet: cluster.SentinelMaster,
		Password: cl.Password(), Validity: ttl, TryNextAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	ctx := t.Context()
	lease, err := l.Acquire(ctx, "s", ttl)
	if err != nil {
		t.Fatalf("Acquire on the master: %v", err)
	}
	if n := master.Admin().Exists(ctx, "rueidislock:0:s", "rueidislock:1:s", "rueidislock:2:s").Val(); n < 2 {
		t.Errorf("%d of the lock's keys on the master, want a majority", n)
	}
	if err := master.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Lost:
	case <-time.After(5 * time.Second):
		t.Fatal("the master was killed and the lock's context still lives 5s later")
	}
	// The replica's promotion: down after 300ms, then the failover.
	deadline := time.Now().Add(20 * time.Second)
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		lease, err = l.Acquire(pctx, "s", ttl)
		pcancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no grant on the promoted replica within 20s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := replica.Admin().Exists(ctx, "rueidislock:0:s", "rueidislock:1:s", "rueidislock:2:s").Val(); n < 2 {
		t.Errorf("%d of the lock's keys on the promoted replica, want a majority", n)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Errorf("Release: %v", err)
	}

	if _, err := NewRueidislock(RueidislockOptions{Sentinels: []string{s1.Addr()}, Validity: ttl}); err == nil || !strings.Contains(err.Error(), "MasterSet") {
		t.Errorf("sentinels without MasterSet: %v, want an error naming MasterSet", err)
	}
	if _, err := NewRueidislock(RueidislockOptions{Validity: ttl}); err == nil || !strings.Contains(err.Error(), "no address") {
		t.Errorf("neither address nor sentinels: %v, want an error", err)
	}
}
