package runner

import (
	"context"
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

// watchStalls records in the history each moment the harness stood still
// while it plays, until the returned stop is called.
func (r *runner) watchStalls(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		stall.Watch(ctx, stallTick, stallMin, func(stood time.Duration) {
			r.rec.Record(history.Event{Process: history.ProcessHarness, Type: history.Info, F: history.Stall,
				Value: history.MustValue(history.StallValue{For: int64(stood)})})
		})
	}()
	return func() {
		cancel()
		<-done
	}
}
