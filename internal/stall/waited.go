package stall

import (
	"context"
	"time"
)

// WatchWaited watches another process, which cannot watch itself the way
// Watch does (a lock driver, in a language of its own): waited reads a
// running total of the time it had work and waited for a CPU — the
// kernel's count, a cgroup's cpu.pressure — every tick until ctx ends. A
// run of ticks in each of which that total grew by at least share of the
// tick is the process starved, standing still; found gets the run's
// summed growth once the run ends (or ctx does), if it is at least min.
// A process that got a CPU for more than 1 − share of each tick is
// slowed, not stopped, and is not reported. WatchWaited returns when ctx
// ends, or with the first error of waited (the process and its count
// gone).
func WatchWaited(ctx context.Context, tick, min time.Duration, share float64, waited func() (time.Duration, error), found func(stood time.Duration)) error {
	last, err := waited()
	if err != nil {
		return err
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	run := waitRun{min: min, share: share}
	at := time.Now()
	for {
		select {
		case <-ctx.Done():
			if stood := run.end(); stood > 0 {
				found(stood)
			}
			return nil
		case <-t.C:
		}
		now := time.Now()
		total, err := waited()
		if err != nil {
			if stood := run.end(); stood > 0 {
				found(stood)
			}
			return err
		}
		if stood := run.step(now.Sub(at), total-last); stood > 0 {
			found(stood)
		}
		at, last = now, total
	}
}

// waitRun is WatchWaited's arithmetic, apart from its clock and its
// counter.
type waitRun struct {
	min   time.Duration
	share float64
	run   time.Duration // the waiting summed over the current run
}

// step takes one tick of length elapsed in which the waiting grew by
// grew; it returns the run that tick ended, if it was at least min, else 0.
func (w *waitRun) step(elapsed, grew time.Duration) time.Duration {
	if elapsed > 0 && float64(grew) >= w.share*float64(elapsed) {
		w.run += grew
		return 0
	}
	return w.end()
}

// end ends the current run: its length if at least min, else 0.
func (w *waitRun) end() time.Duration {
	stood := w.run
	w.run = 0
	if stood >= w.min {
		return stood
	}
	return 0
}
