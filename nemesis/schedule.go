package nemesis

import (
	"context"
	"errors"
	"time"

	"splitbrain/fault"
)

// Timed is one drawn fault of a random schedule as the faults that carry
// it out (built from the schedule's steps, see spec.ScheduleSteps): they
// start together at At, from the schedule's start, and are healed, newest
// first, For later. Client pauses at a gate are the exception: see
// RunSchedule.
type Timed struct {
	At, For time.Duration
	Faults  []Fault
	// Within bounds how long client pauses at a gate stay armed waiting for
	// their client to reach its point.
	Within time.Duration
	// What says what was drawn, for logs.
	What string
}

// ScheduledClientPause is the fault of a random schedule's client pause:
// at the gate, or, for a client that runs as a process of its own (proc
// set, a lock driver) drawn at fault.AnyPoint, its process stopped with
// SIGSTOP at once, wherever it is, rather than at its next point, and the
// stretch recorded as held. The draws are the same either way.
func ScheduledClientPause(g *ClientGate, proc ProcessPauser, at fault.Point, hold time.Duration) []Fault {
	if proc != nil && at == fault.AnyPoint {
		return []Fault{ClientStop{Client: g.Name(), Proc: proc}, clientHeld{client: g.Name(), hold: hold, signal: true}}
	}
	return []Fault{ClientPause{Gate: g, At: at, For: hold}}
}

// RunSchedule plays ts in order, one goroutine, so that the history
// records the same faults in the same order for the same schedule: each
// one's faults start at its time and are healed, newest first, when it
// ends. A client pause is the exception: it stays armed until the client
// reaches its point (at most Within) and then holds the client for the
// whole For, so that a drawn pause is a pause however long the client
// takes to get there; the schedule goes on once it is over, late if need
// be. onStart, if set, is told of each as it starts. When ctx ends it
// returns at once, leaving what is active to HealAll.
func (m *Nemesis) RunSchedule(ctx context.Context, ts []Timed, onStart func(Timed)) error {
	start := time.Now()
	for _, t := range ts {
		if !sleepUntil(ctx, start.Add(t.At)) {
			return nil
		}
		if onStart != nil {
			onStart(t)
		}
		var ids []int
		stopAll := func() error {
			var errs []error
			for i := len(ids) - 1; i >= 0; i-- {
				errs = append(errs, m.Stop(ctx, ids[i]))
			}
			return errors.Join(errs...)
		}
		if gatePauses(t.Faults) {
			var overs []<-chan struct{}
			for _, f := range t.Faults {
				_, over, err := m.StartClientPause(ctx, f.(ClientPause), t.Within)
				if err != nil {
					return err
				}
				overs = append(overs, over)
			}
			for _, over := range overs {
				select {
				case <-over:
				case <-ctx.Done():
					return nil
				}
			}
			continue
		}
		for _, f := range t.Faults {
			id, err := m.Start(ctx, f)
			if err != nil {
				return errors.Join(err, stopAll())
			}
			ids = append(ids, id)
		}
		if !sleepUntil(ctx, start.Add(t.At+t.For)) {
			return nil
		}
		if err := stopAll(); err != nil {
			return err
		}
	}
	return nil
}

// gatePauses reports whether faults are all pauses at a gate (not a
// process stopped by signal, which is timed as any other fault).
func gatePauses(faults []Fault) bool {
	for _, f := range faults {
		if _, ok := f.(ClientPause); !ok {
			return false
		}
	}
	return len(faults) > 0
}

// sleepUntil waits until t; false means ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
