package runner

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"splitbrain/history"
	"splitbrain/internal/stall"
)

// The harness's watch on itself during a play: a gap of stallMin past the
// tick, far below the stories' node timeouts (250 ms and up) and TTLs,
// is the harness standing still; at 25 ms a tick costs a play little.
const (
	stallTick = 25 * time.Millisecond
	stallMin  = 100 * time.Millisecond
)

// driverStallShare is the share of a tick a driver must have waited for a
// CPU for the tick to count as standing still: one that got a CPU for a
// tenth of each tick or less stood nearly as still as the harness whose
// own ticker did not run at all; one that ran more was slowed, not
// stopped. A stall is recorded a tick after its last stalled tick, when
// the watch sees it end: its window lies up to a tick late.
const driverStallShare = 0.9

// watchStalls records in the history each moment the harness stood
// still while it plays, and each moment a lock driver's process did
// (starved of the CPU, counted by the kernel: driver.Proc.CPUWaited),
// until the returned stop is called. A driver whose waiting the kernel
// does not count is said so in the log, once.
func (r *runner) watchStalls(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		stall.Watch(ctx, stallTick, stallMin, func(stood time.Duration) {
			r.recordStall(history.ProcessHarness, stood)
		})
	})
	procs := r.drivers.byClient()
	for _, c := range slices.Sorted(maps.Keys(procs)) {
		p := procs[c]
		if _, err := p.CPUWaited(); err != nil {
			r.logf("%s: its driver's standing still is not watched: %v", c, err)
			continue
		}
		wg.Go(func() {
			// An error ends the watch: the driver is gone.
			_ = stall.WatchWaited(ctx, stallTick, stallMin, driverStallShare, p.CPUWaited, func(stood time.Duration) {
				r.recordStall(c, stood)
			})
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// recordStall records that process (the harness, or a client's driver)
// stood still for stood, up to now.
func (r *runner) recordStall(process string, stood time.Duration) {
	r.rec.Record(history.Event{Process: process, Type: history.Info, F: history.Stall,
		Value: history.MustValue(history.StallValue{For: int64(stood)})})
}
