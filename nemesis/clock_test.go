package nemesis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"splitbrain/cluster/local"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/nemesis"
)

func nodeTime(t *testing.T, n *local.Process) time.Time {
	t.Helper()
	ctx, cancel := within(5 * time.Second)
	defer cancel()
	tm, err := n.Admin().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// Redis keeps absolute expiry times, so moving a node's clock moves every
// TTL on it: back lengthens them, forward expires them; the heal restores
// real time.
func TestClockJumpMovesTTLs(t *testing.T) {
	cl := startNodes(t, 1)
	ctx := context.Background()
	n := cl.Processes()[0]
	nem := nemesis.New(&memRecorder{})
	defer nem.HealAll(ctx)
	const ttl = 10 * time.Second
	if err := n.Admin().Set(ctx, "lease", "v", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	back, err := nem.Start(ctx, nemesis.ClockJump{Node: n, By: -30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if pttl := n.Admin().PTTL(ctx, "lease").Val(); pttl <= ttl {
		t.Errorf("PTTL after the clock went back 30s: %v, want more than the %v it was set with", pttl, ttl)
	}
	if err := nem.Stop(ctx, back); err != nil {
		t.Fatal(err)
	}
	if pttl := n.Admin().PTTL(ctx, "lease").Val(); pttl <= 0 || pttl > ttl {
		t.Errorf("PTTL after the heal: %v, want within (0, %v]", pttl, ttl)
	}
	if _, err := nem.Start(ctx, nemesis.ClockJump{Node: n, By: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if exists(t, n, "lease") {
		t.Error("a 10s key survived a 1-minute jump forward")
	}
	if err := nem.HealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if off := n.ClockOffset(); off != 0 {
		t.Errorf("offset after heal: %v", off)
	}
}

// A strobe flips the node's clock between two offsets until healed; the
// heal stops the flipping and restores the offset from before.
func TestClockStrobeFlipsUntilHealed(t *testing.T) {
	cl := startNodes(t, 1)
	ctx := context.Background()
	n := cl.Processes()[0]
	if err := n.SetClockOffset(time.Minute); err != nil {
		t.Fatal(err)
	}
	nem := nemesis.New(&memRecorder{})
	defer nem.HealAll(ctx)
	id, err := nem.Start(ctx, nemesis.ClockStrobe{Node: n, Delta: time.Hour, Period: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var sawBase, sawHigh bool
	eventually(t, "the strobe shows both clocks", func() error {
		ahead := time.Until(nodeTime(t, n))
		sawBase = sawBase || (ahead > 50*time.Second && ahead < 10*time.Minute)
		sawHigh = sawHigh || ahead > time.Hour
		if !sawBase || !sawHigh {
			return errors.New("only one of the two offsets seen so far")
		}
		return nil
	})
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if off := n.ClockOffset(); off != time.Minute {
			t.Fatalf("offset after the heal: %v, want the 1m from before", off)
		}
		time.Sleep(30 * time.Millisecond) // longer than a period: a live strobe would have flipped
	}
	for _, bad := range []nemesis.ClockStrobe{{Node: n, Delta: time.Second}, {Node: n, Period: time.Second}} {
		if _, err := nem.Start(ctx, bad); err == nil {
			t.Errorf("strobe %+v accepted", bad)
		}
	}
}

// A reset heals the clock faults of the nodes it resets, sets their clocks
// to real time and leaves other nodes alone.
func TestResetClocks(t *testing.T) {
	cl := startNodes(t, 3)
	ctx := context.Background()
	n1, _ := cl.Process("n1")
	n2, _ := cl.Process("n2")
	n3, _ := cl.Process("n3")
	rec := &memRecorder{}
	nem := nemesis.New(rec)
	defer nem.HealAll(ctx)
	// Off by hand before any fault: healing the faults alone would bring
	// n1 back to 42s, the reset to real time.
	if err := n1.SetClockOffset(42 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, f := range []nemesis.Fault{
		nemesis.ClockJump{Node: n1, By: 5 * time.Second},
		nemesis.ClockStrobe{Node: n1, Delta: time.Second, Period: 10 * time.Millisecond},
		nemesis.ClockJump{Node: n2, By: -time.Second},
		nemesis.ClockJump{Node: n3, By: 7 * time.Second},
	} {
		if _, err := nem.Start(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := nem.ResetClocks(ctx, n1, n2); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*local.Process{n1, n2} {
		if off := n.ClockOffset(); off != 0 {
			t.Errorf("%s offset after reset: %v", n.Name(), off)
		}
	}
	if off := n3.ClockOffset(); off != 7*time.Second {
		t.Errorf("n3 offset after resetting n1, n2: %v, want untouched 7s", off)
	}
	if act := nem.Active(); len(act) != 1 || act[0].Nodes[0] != "n3" {
		t.Errorf("active after reset: %+v, want n3's jump only", act)
	}
	fs := rec.faults(t)
	last := fs[len(fs)-2:]
	if last[0].Kind != fault.KindClockReset || last[0].Phase != history.PhaseStart || last[1].Phase != history.PhaseStop ||
		last[0].Detail != "n1,n2 clock reset to real time" {
		t.Errorf("last events %+v, want an instant clock-reset", last)
	}
}
