package nemesis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster/local"
	"splitbrain/fault"
	"splitbrain/nemesis"
	"splitbrain/redlock"
)

// hooks wires a lock's hook points to a client's gate, as the scenario
// runner does.
func hooks(g *nemesis.ClientGate) redlock.Hooks {
	return redlock.Hooks{
		AfterReplies:  func(ctx context.Context, _ string) { g.At(ctx, fault.AfterReplies) },
		AfterAcquire:  func(ctx context.Context, _ *redlock.Lease) { g.At(ctx, fault.AfterAcquire) },
		BeforeRelease: func(ctx context.Context, _ *redlock.Lease) { g.At(ctx, fault.BeforeRelease) },
	}
}

func locker(t *testing.T, cl *local.Cluster, g *nemesis.ClientGate) *redlock.Locker {
	t.Helper()
	var conns []*redis.Client
	for _, n := range cl.Processes() {
		c := redis.NewClient(redlock.ClientOptions(n.Addr(), cl.Password()))
		t.Cleanup(func() { _ = c.Close() })
		conns = append(conns, c)
	}
	l, err := redlock.New(conns, redlock.Options{NodeTimeout: 200 * time.Millisecond, Hooks: hooks(g)})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

type lockResult struct {
	lease *redlock.Lease
	err   error
}

// Kleppmann's GC pause at the lock level: c1 is paused right after it got
// the lock. Only c1 stops — c2 works on meanwhile, and takes the lock once
// c1's keys expire — and when c1 resumes, its lease's validity has run out
// on its own monotonic clock, exactly as after a real pause.
func TestClientPauseBlocksOnlyThatClient(t *testing.T) {
	cl := startNodes(t, 3)
	ctx := context.Background()
	g1, g2 := nemesis.NewClientGate("c1"), nemesis.NewClientGate("c2")
	c1, c2 := locker(t, cl, g1), locker(t, cl, g2)
	rec := &memRecorder{}
	nem := nemesis.New(rec)
	defer nem.HealAll(ctx)
	id, err := nem.Start(ctx, nemesis.ClientPause{Gate: g1, At: fault.AfterAcquire})
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 500 * time.Millisecond
	got := make(chan lockResult, 1)
	go func() {
		l, err := c1.TryLock(ctx, "lock", ttl)
		got <- lockResult{l, err}
	}()
	wctx, cancel := within(20 * time.Second)
	defer cancel()
	if err := g1.WaitBlocked(wctx); err != nil {
		t.Fatal(err)
	}
	l, err := c2.TryLock(ctx, "other", time.Second)
	if err != nil {
		t.Fatalf("c2 during c1's pause: %v", err)
	}
	if _, err := c2.Release(ctx, l); err != nil {
		t.Fatalf("c2 release during c1's pause: %v", err)
	}
	eventually(t, "c2 takes the lock c1 believes it holds", func() error {
		_, err := c2.TryLock(ctx, "lock", 2*time.Second)
		return err
	})
	select {
	case r := <-got:
		t.Fatalf("c1 returned during its pause: %+v", r)
	default:
	}
	if g1.Blocked() != 1 || g2.Blocked() != 0 {
		t.Errorf("blocked: c1 %d, c2 %d; want 1 and 0", g1.Blocked(), g2.Blocked())
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("c1 after its pause: %v", r.err)
	}
	if rem := r.lease.Remaining(); rem > 0 {
		t.Errorf("c1's lease after a pause longer than its TTL has %v left, want none", rem)
	}
	if fs := rec.faults(t); fs[0].Kind != fault.KindClientPause || fs[0].Nodes[0] != "c1" || fs[0].Detail != "c1 paused at after-acquire" {
		t.Errorf("recorded %+v", fs[0])
	}
}

// A pause waits for its own point: the other hook points pass. A timed pause
// at after-replies longer than the TTL makes the attempt fail — the
// elapsed-time check of Redlock (antirez's answer to the pause argument).
func TestClientPauseAtItsPoint(t *testing.T) {
	cl := startNodes(t, 3)
	ctx := context.Background()
	g := nemesis.NewClientGate("c1")
	c1 := locker(t, cl, g)
	nem := nemesis.New(&memRecorder{})
	defer nem.HealAll(ctx)

	id, err := nem.Start(ctx, nemesis.ClientPause{Gate: g, At: fault.BeforeRelease})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c1.TryLock(ctx, "lock", 5*time.Second)
	if err != nil {
		t.Fatalf("TryLock with a pause armed before release: %v", err)
	}
	released := make(chan error, 1)
	go func() { _, err := c1.Release(ctx, l); released <- err }()
	wctx, cancel := within(20 * time.Second)
	defer cancel()
	if err := g.WaitBlocked(wctx); err != nil {
		t.Fatal(err)
	}
	if _, err := nem.Start(ctx, nemesis.ClientPause{Gate: g, At: fault.AnyPoint}); err == nil {
		t.Error("a second pause armed on a paused client")
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Errorf("release after the pause: %v", err)
	}

	if _, err := nem.StartFor(ctx, nemesis.ClientPause{Gate: g, At: fault.AfterReplies}, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err = c1.TryLock(ctx, "lock", 300*time.Millisecond)
	var ae *redlock.AcquireError
	if !errors.As(err, &ae) || ae.Granted != 3 || ae.Validity > 0 {
		t.Errorf("TryLock paused ~2s after all replies with a 300ms TTL: %v, want all granted yet negative validity", err)
	}
	if _, err := nem.Start(ctx, nemesis.ClientPause{Gate: g, At: "in-the-middle"}); err == nil {
		t.Error("an unknown point was accepted")
	}
}
