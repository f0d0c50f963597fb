package nemesis

import (
	"context"
	"errors"
	"slices"
	"strings"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// ClockReset sets nodes' clocks back to real time, as an NTP sync would
// after an operator's mistake. It is a point in time, not a window: its
// heal does nothing. Use Nemesis.ResetClocks, which first heals the clock
// faults still active on the nodes (a strobe would otherwise go on
// flipping, and a jump's later heal would restore its own base).
type ClockReset struct {
	Nodes []cluster.Node
}

// Available implements Fault: every node must be a cluster.Clock.
func (c ClockReset) Available() error {
	for _, n := range c.Nodes {
		if _, err := clockOf(n); err != nil {
			return err
		}
	}
	return nil
}

// Describe implements Fault.
func (c ClockReset) Describe() history.Fault {
	names := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		names[i] = n.Name()
	}
	return history.Fault{Kind: fault.KindClockReset, Nodes: names, Detail: strings.Join(names, ",") + " clock reset to real time"}
}

// Inject implements Fault.
func (c ClockReset) Inject(context.Context) (Heal, error) {
	var errs []error
	for _, n := range c.Nodes {
		clock, err := clockOf(n)
		if rc, ok := clock.(cluster.RateClock); ok && err == nil {
			err = rc.SetClockRate(1)
		}
		if err == nil {
			err = clock.SetClockOffset(0)
		}
		errs = append(errs, err)
	}
	return func(context.Context) error { return nil }, errors.Join(errs...)
}

// ResetClocks heals every clock fault on nodes and sets their clocks to real
// time, recorded as an instant clock-reset.
func (m *Nemesis) ResetClocks(ctx context.Context, nodes ...cluster.Node) error {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name()
	}
	err := m.StopMatching(ctx, func(f history.Fault) bool {
		return (f.Kind == fault.KindClockJump || f.Kind == fault.KindClockStrobe || f.Kind == fault.KindClockRate) &&
			slices.ContainsFunc(f.Nodes, func(n string) bool { return slices.Contains(names, n) })
	})
	id, serr := m.Start(ctx, ClockReset{Nodes: nodes})
	if serr != nil {
		return errors.Join(err, serr)
	}
	return errors.Join(err, m.Stop(ctx, id))
}
