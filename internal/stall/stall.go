// Package stall notices when this process stood still: starved of the CPU
// on a loaded machine, or stopped. A harness that stands still holds its
// in-process clients, their timers and its nemesis with it, a pause no
// scenario scripted; a play's history records each one (history.Stall) so
// that a reader can tell such a play from one that went as written.
package stall

import (
	"context"
	"time"
)

// Watch wakes every tick until ctx ends and calls found, from its own
// goroutine, with each gap between two wakes that was longer than the tick
// by at least min: the process (or at least this goroutine's scheduling)
// stood still for that long. found gets the length beyond the tick.
func Watch(ctx context.Context, tick, min time.Duration, found func(stood time.Duration)) {
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// time.Now carries the monotonic clock: a wall clock step does
		// not show as a stall.
		now := time.Now()
		if stood := now.Sub(last) - tick; stood >= min {
			found(stood)
		}
		last = now
	}
}
