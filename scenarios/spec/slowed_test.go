package spec

import (
	"testing"
	"time"

	"splitbrain/locks"
)

func TestTTLFor(t *testing.T) {
	t.Parallel()
	min2 := &locks.Kind{Name: "min2", MinTTL: 2 * time.Second, WholeSeconds: true}
	whole := &locks.Kind{Name: "whole", WholeSeconds: true}
	free := &locks.Kind{Name: "free"}
	for _, tc := range []struct {
		kind *locks.Kind
		ttl  time.Duration
		want time.Duration
	}{
		{min2, time.Second, 2 * time.Second},
		{min2, 600 * time.Millisecond, 2 * time.Second},
		{min2, 2 * time.Second, 2 * time.Second},
		{min2, 2500 * time.Millisecond, 3 * time.Second},
		{min2, 30 * time.Second, 30 * time.Second},
		{whole, 600 * time.Millisecond, time.Second},
		{whole, time.Second, time.Second},
		{whole, 1001 * time.Millisecond, 2 * time.Second},
		{free, 600 * time.Millisecond, 600 * time.Millisecond},
		{nil, 600 * time.Millisecond, 600 * time.Millisecond},
	} {
		got, slowed := TTLFor(tc.kind, tc.ttl)
		if got != tc.want || slowed != (tc.want != tc.ttl) {
			t.Errorf("%v at %v: %v (slowed %v), want %v", tc.kind, tc.ttl, got, slowed, tc.want)
		}
	}
}

// A lock whose shortest TTL is above the story's plays every duration of
// it stretched by one factor, and the story itself, shared by every other
// play of it, is left as written.
func TestSlowedStretchesEveryDuration(t *testing.T) {
	t.Parallel()
	sc, err := Load("pause-during-acquire")
	if err != nil {
		t.Fatal(err)
	}
	asWritten := sc.PlayAgainst("redlock")
	play := sc.PlayAgainst(locks.MalkuschRedlock.Name)
	if asWritten.Scale != 0 || asWritten.ScaleWhy != "" || asWritten.Lock.TTL != time.Second {
		t.Fatalf("redlock plays it at %v, scale %v (%q): want as written", asWritten.Lock.TTL, asWritten.Scale, asWritten.ScaleWhy)
	}
	if play.Scale != 2 || play.Lock.TTL != 2*time.Second {
		t.Fatalf("malkusch-redlock plays it at %v, scale %v: want 2s, 2", play.Lock.TTL, play.Scale)
	}
	if want := "played 2× slower, at a TTL of 2s: malkusch-redlock cannot be asked for a TTL of 1s (2s at the least)"; play.ScaleWhy != want {
		t.Errorf("why %q, want %q", play.ScaleWhy, want)
	}
	for _, tc := range []struct {
		what      string
		got, want time.Duration
	}{
		{"node timeout", play.Lock.NodeTimeout, 2 * asWritten.Lock.NodeTimeout},
		{"workload duration", play.Workload.Duration, 2 * asWritten.Workload.Duration},
		{"think", play.Workload.Think.Min, 2 * asWritten.Workload.Think.Min},
		{"backoff (a pointer)", play.Workload.Backoff.Max, 2 * asWritten.Workload.Backoff.Max},
		{"the pause's length", play.Steps[0].For.Min, 6 * time.Second},
		{"the cut's length", play.Steps[1].For.Min, 2 * time.Second},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	if asWritten.Steps[0].For.Min != 3*time.Second || asWritten.Workload.Backoff.Max != 50*time.Millisecond {
		t.Errorf("the story changed under its slowed play: pause %v, backoff %v", asWritten.Steps[0].For.Min, asWritten.Workload.Backoff.Max)
	}
	if again := play.PlayAgainst(locks.MalkuschRedlock.Name); again.Lock.TTL != 2*time.Second || again.Steps[0].For.Min != 6*time.Second {
		t.Errorf("a slowed play played again: TTL %v, pause %v; want it as it was", again.Lock.TTL, again.Steps[0].For.Min)
	}
}

// A random schedule stretches too: its interval, its faults' lengths and
// its span, so that as many faults fall in the play, each outlasting a
// lease as often as written.
func TestSlowedStretchesSchedules(t *testing.T) {
	t.Parallel()
	sc, err := Load("random-pause-set")
	if err != nil {
		t.Fatal(err)
	}
	play := sc.PlayAgainst(locks.MalkuschRedlock.Name)
	s, written := play.Steps[1].Schedule, sc.PlayAgainst("redlock").Steps[1].Schedule
	f := play.Scale
	near := func(got, want time.Duration) bool {
		d := got - want
		return d < time.Millisecond && d > -time.Millisecond
	}
	if !near(s.Interval, time.Duration(f*float64(written.Interval))) || !near(s.MaxFor, time.Duration(f*float64(written.MaxFor))) ||
		!near(s.Total, time.Duration(f*float64(written.Total))) || s.Interval == written.Interval {
		t.Errorf("schedule at ×%.3g: interval %v, max %v, total %v; written %v, %v, %v", f, s.Interval, s.MaxFor, s.Total,
			written.Interval, written.MaxFor, written.Total)
	}
}
