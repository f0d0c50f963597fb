package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"splitbrain/fault"
)

// ScheduleNode is a node a random schedule may do anything to.
type ScheduleNode interface {
	ClockNode
	Pausable
	Stoppable
	Wipeable
}

// Env is what a schedule acts on.
type Env struct {
	Net   *Net
	Nodes map[string]ScheduleNode
	Gates map[string]*ClientGate
	// Procs are the clients that run as processes of their own (lock
	// drivers): a client pause drawn at fault.AnyPoint stops such a client's
	// process with SIGSTOP at once, wherever it is, rather than at its
	// next point. The draws are the same either way.
	Procs map[string]ProcessPauser
}

// Faults turns op into the faults that carry it out.
func (e Env) Faults(op fault.Op) ([]Fault, error) {
	node := func(name string) (ScheduleNode, error) {
		n, ok := e.Nodes[name]
		if !ok {
			return nil, fmt.Errorf("schedule: no node %q", name)
		}
		return n, nil
	}
	var out []Fault
	switch op.Kind {
	case fault.RandomPartition:
		return []Fault{Partition{Net: e.Net, Shape: op.Shape, Links: op.Links}}, nil
	case fault.RandomClientPause:
		for _, c := range op.Clients {
			if p, ok := e.Procs[c]; ok && op.Point == fault.AnyPoint {
				out = append(out, ClientStop{Client: c, Proc: p}, clientHeld{client: c, hold: op.For, signal: true})
				continue
			}
			g, ok := e.Gates[c]
			if !ok {
				return nil, fmt.Errorf("schedule: no client %q", c)
			}
			out = append(out, ClientPause{Gate: g, At: op.Point, For: op.For})
		}
		return out, nil
	}
	for i, name := range op.Nodes {
		n, err := node(name)
		if err != nil {
			return nil, err
		}
		switch op.Kind {
		case fault.RandomClock:
			if op.Strobe > 0 {
				out = append(out, ClockStrobe{Node: n, Delta: op.Offsets[0], Period: op.Strobe})
			} else {
				out = append(out, ClockJump{Node: n, By: op.Offsets[i]})
			}
		case fault.RandomPause:
			out = append(out, Pause{Node: n})
		case fault.RandomKill:
			if op.Graceful {
				out = append(out, Stop{Node: n})
			} else {
				out = append(out, Kill{Node: n})
			}
		case fault.RandomAmnesia:
			out = append(out, Kill{Node: n, Amnesia: true})
		default:
			return nil, fmt.Errorf("schedule: unknown kind %q", op.Kind)
		}
	}
	return out, nil
}

// RunSchedule plays ops in order, one goroutine, so that the history
// records the same faults in the same order for the same ops: each op's
// faults start at its time and are healed, newest first, when it ends.
// A client pause is the exception: it stays armed until the client reaches
// its point (at most until the next op is due) and then holds the client
// for the op's whole duration, so that a drawn pause is a pause however
// long the client takes to get there; the schedule goes on once it is
// over, late if need be. onStart, if set, is told of each op as it
// starts. When ctx ends it returns at once, leaving what is active to
// HealAll.
func (m *Nemesis) RunSchedule(ctx context.Context, ops []fault.Op, env Env, onStart func(fault.Op)) error {
	start := time.Now()
	for i, op := range ops {
		if !sleepUntil(ctx, start.Add(op.At)) {
			return nil
		}
		faults, err := env.Faults(op)
		if err != nil {
			return err
		}
		if onStart != nil {
			onStart(op)
		}
		var ids []int
		stopAll := func() error {
			var errs []error
			for i := len(ids) - 1; i >= 0; i-- {
				errs = append(errs, m.Stop(ctx, ids[i]))
			}
			return errors.Join(errs...)
		}
		if op.Kind == fault.RandomClientPause && gatePauses(faults) {
			within := op.For
			if i+1 < len(ops) {
				within = max(ops[i+1].At-op.At, time.Millisecond)
			}
			var overs []<-chan struct{}
			for _, f := range faults {
				cp, ok := f.(ClientPause)
				if !ok {
					return fmt.Errorf("schedule: client pause op carried %T", f)
				}
				_, over, err := m.StartClientPause(ctx, cp, within)
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
		for _, f := range faults {
			id, err := m.Start(ctx, f)
			if err != nil {
				return errors.Join(err, stopAll())
			}
			ids = append(ids, id)
		}
		if !sleepUntil(ctx, start.Add(op.At+op.For)) {
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
	return true
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
