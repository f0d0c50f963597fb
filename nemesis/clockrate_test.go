package nemesis_test

import (
	"context"
	"testing"
	"time"

	"splitbrain/cluster/local"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/nemesis"
)

// bracketedTime reads n's wall clock (Redis's TIME) between two readings
// of the real one: the node read its clock somewhere in [before, after].
func bracketedTime(t *testing.T, n *local.Process) (node, before, after time.Time) {
	t.Helper()
	before = time.Now()
	node = nodeTime(t, n)
	after = time.Now()
	return node, before, after
}

// A clock rate makes the node's clock gain on real time at that rate: the
// node's time advances rate times as fast as the real time between two
// readings, a TTL set on it runs out that much sooner, and the heal puts
// the clock back at real rate and at its offset from before.
func TestClockRateGrowsOffsetAtRate(t *testing.T) {
	cl := startNodes(t, 1)
	ctx := context.Background()
	n := cl.Processes()[0]
	rec := &memRecorder{}
	nem := nemesis.New(rec)
	defer nem.HealAll(ctx)
	const rate = 1.5
	id, err := nem.Start(ctx, nemesis.ClockRate{Node: n, Rate: rate})
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 2 * time.Second
	setAt := time.Now()
	if err := n.Admin().Set(ctx, "lease", "v", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	n0, b0, a0 := bracketedTime(t, n)
	time.Sleep(600 * time.Millisecond)
	n1, b1, a1 := bracketedTime(t, n)
	// Between the node's two readings lies real time in [b1-a0, a1-b0];
	// its own clock must have advanced rate times that (TIME has
	// microseconds; a millisecond spares the rounding).
	got := n1.Sub(n0)
	lo, hi := time.Duration(float64(b1.Sub(a0))*rate)-time.Millisecond, time.Duration(float64(a1.Sub(b0))*rate)+time.Millisecond
	if got < lo || got > hi {
		t.Errorf("the node's clock advanced %v while real time advanced %v..%v: want %v..%v at rate %v", got, b1.Sub(a0), a1.Sub(b0), lo, hi, rate)
	}
	// The key's TTL counts the node's clock: after real time e it has
	// ttl - rate·e left.
	before := time.Now()
	pttl, err := n.Admin().PTTL(ctx, "lease").Result()
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	maxLeft := ttl - time.Duration(float64(before.Sub(set))*rate) + time.Millisecond
	minLeft := ttl - time.Duration(float64(after.Sub(setAt))*rate) - time.Millisecond
	if pttl < minLeft || pttl > maxLeft {
		t.Errorf("PTTL %v after %v of real time at rate %v, want %v..%v", pttl, before.Sub(set), rate, minLeft, maxLeft)
	}
	if off := n.ClockOffset(); off <= 0 {
		t.Errorf("offset while the clock runs fast: %v, want > 0", off)
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if off, r := n.ClockOffset(), n.ClockRate(); off != 0 || r != 1 {
		t.Errorf("after the heal: offset %v, rate %v; want 0 and 1", off, r)
	}
	nt, b, a := bracketedTime(t, n)
	if nt.Before(b.Truncate(time.Microsecond)) || nt.After(a) {
		t.Errorf("after the heal the node's clock reads %v, outside the real %v..%v", nt, b, a)
	}
	fs := rec.faults(t)
	if len(fs) != 2 || fs[0].Kind != fault.KindClockRate || fs[0].Rate != rate || fs[0].Phase != history.PhaseStart || fs[1].Phase != history.PhaseStop {
		t.Errorf("recorded %+v, want a clock-rate ×%v start and stop", fs, rate)
	}
	for _, bad := range []float64{1, 0, -1, 11} {
		if _, err := nem.Start(ctx, nemesis.ClockRate{Node: n, Rate: bad}); err == nil {
			t.Errorf("rate %v accepted", bad)
		}
	}
}

// A reset to real time also ends a clock rate.
func TestResetClocksEndsClockRate(t *testing.T) {
	cl := startNodes(t, 1)
	ctx := context.Background()
	n := cl.Processes()[0]
	nem := nemesis.New(&memRecorder{})
	defer nem.HealAll(ctx)
	if _, err := nem.Start(ctx, nemesis.ClockRate{Node: n, Rate: 0.5}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := nem.ResetClocks(ctx, n); err != nil {
		t.Fatal(err)
	}
	if off, r := n.ClockOffset(), n.ClockRate(); off != 0 || r != 1 {
		t.Errorf("after the reset: offset %v, rate %v; want 0 and 1", off, r)
	}
	if act := nem.Active(); len(act) != 0 {
		t.Errorf("active after the reset: %+v", act)
	}
}
