package workload

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/history"
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
	cl, err := cluster.StartLocal(setup, cluster.Config{Nodes: 1, Dir: t.TempDir()})
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

	if _, err := a.Acquire(ctx, key, time.Second); err == nil || errors.Is(err, ErrNotAcquired) {
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
	if _, err := b.Acquire(ctx, key, ttl); !errors.Is(err, ErrNotAcquired) {
		t.Errorf("second client's Acquire on a held lock: %v, want ErrNotAcquired", err)
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
	if _, err := a.Extend(ctx, lease, ttl); !errors.Is(err, ErrNotExtended) {
		t.Errorf("Extend after Release: %v, want ErrNotExtended", err)
	}

	// Lost: the keys are deleted behind the holder's back. The
	// invalidations make rueidislock re-check, find its value gone and
	// cancel the context; the client releases at once.
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, time.Now())
	c := NewClient("c1", b, rec)
	if err := c.Acquire(ctx, key, ttl); err != nil {
		t.Fatalf("client Acquire after the release: %v", err)
	}
	node.Admin().Del(ctx, "rueidislock:0:"+key, "rueidislock:1:"+key, "rueidislock:2:"+key)
	waitFor(t, 20*time.Second, "the client's belief to end after its keys were deleted", func() bool { return !c.Holds(key) })
	if err := c.read(ctx, key, func() (any, error) { return int64(0), nil }); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("read after the lock said the lease was lost: %v, want ErrLeaseLost", err)
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
	if _, err := b.Acquire(ctx, key, ttl); err == nil || errors.Is(err, ErrNotAcquired) {
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
