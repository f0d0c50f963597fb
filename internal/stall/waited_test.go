package stall

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// A run of ticks each waited for at least share is one stall, reported
// when it ends if it summed to min; a tick under share ends it. Both
// sides of each edge.
func TestWaitRun(t *testing.T) {
	const tick = 25 * time.Millisecond
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		grew  []time.Duration // each tick's growth
		want  []time.Duration // the stalls reported, in order
		flush time.Duration   // what end() reports after the last tick
	}{
		{"idle", []time.Duration{0, 0, 0}, nil, 0},
		{"four full ticks, then one at rest: a stall of 100 ms", []time.Duration{tick, tick, tick, tick, 0}, []time.Duration{100 * ms}, 0},
		{"three full ticks: 75 ms, under min", []time.Duration{tick, tick, tick, 0}, nil, 0},
		{"ticks at the share count", []time.Duration{22500 * time.Microsecond, 22500 * time.Microsecond, 22500 * time.Microsecond, 22500 * time.Microsecond, 22500 * time.Microsecond, 0},
			[]time.Duration{112500 * time.Microsecond}, 0},
		{"a tick just under the share breaks the run", []time.Duration{tick, tick, 22 * ms, tick, tick, 0}, nil, 0},
		{"a run still going at the end is flushed", []time.Duration{0, tick, tick, tick, tick}, nil, 100 * ms},
		{"two runs, two stalls", []time.Duration{tick, tick, tick, tick, 0, tick, tick, tick, tick, tick, 0}, []time.Duration{100 * ms, 125 * ms}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := waitRun{min: 100 * ms, share: 0.9}
			var got []time.Duration
			for _, g := range tc.grew {
				if s := w.step(tick, g); s > 0 {
					got = append(got, s)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("stalls %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("stalls %v, want %v", got, tc.want)
				}
			}
			if f := w.end(); f != tc.flush {
				t.Errorf("at the end %v, want %v", f, tc.flush)
			}
		})
	}
}

// WatchWaited reads a running count: a count that grows with the wall
// clock (a process that waited all along) is reported, at the end at the
// latest; one that stands still is not; a count that fails ends the
// watch with its error.
func TestWatchWaited(t *testing.T) {
	start := time.Now()
	waitingAll := func() (time.Duration, error) { return time.Since(start), nil }
	idle := func() (time.Duration, error) { return 0, nil }
	for _, tc := range []struct {
		name   string
		waited func() (time.Duration, error)
		stall  bool
	}{
		{"waiting all along", waitingAll, true},
		{"never waiting", idle, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			var mu sync.Mutex
			var got time.Duration
			err := WatchWaited(ctx, 10*time.Millisecond, 100*time.Millisecond, 0.9, tc.waited, func(d time.Duration) {
				mu.Lock()
				got += d
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if (got >= 100*time.Millisecond) != tc.stall {
				t.Errorf("stood %v in 300 ms, want a stall: %v", got, tc.stall)
			}
		})
	}
	gone := errors.New("the cgroup is gone")
	n := 0
	err := WatchWaited(context.Background(), time.Millisecond, time.Second, 0.9, func() (time.Duration, error) {
		if n++; n > 3 {
			return 0, gone
		}
		return 0, nil
	}, func(time.Duration) {})
	if !errors.Is(err, gone) {
		t.Errorf("a failing count: %v, want its error", err)
	}
}
