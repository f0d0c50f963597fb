package nemesis

import (
	"context"
	"fmt"
	"time"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// ClockJump moves a node's wall clock by By (forward or backward) at once,
// as an NTP step or an operator's `date -s` would. Keys whose expiry the new
// time has passed are gone at the next access. Healing restores the offset
// the node had before, which cannot bring expired keys back.
type ClockJump struct {
	Node cluster.Node
	By   time.Duration
}

// Available implements Fault: the node must be a cluster.Clock.
func (c ClockJump) Available() error {
	_, err := clockOf(c.Node)
	return err
}

// clockOf is node's clock, or the refusal of clock faults on it.
func clockOf(node cluster.Node) (cluster.Clock, error) {
	return cluster.Capable[cluster.Clock](node, fault.Clock)
}

// Describe implements Fault.
func (c ClockJump) Describe() history.Fault {
	return history.Fault{
		Kind:   "clock-jump",
		Nodes:  []string{c.Node.Name()},
		Offset: int64(c.By),
		Detail: fmt.Sprintf("%s clock %s", c.Node.Name(), fault.FormatOffset(c.By)),
	}
}

// Inject implements Fault.
func (c ClockJump) Inject(ctx context.Context) (Heal, error) {
	clock, err := clockOf(c.Node)
	if err != nil {
		return nil, err
	}
	before := clock.ClockOffset()
	if err := clock.SetClockOffset(before + c.By); err != nil {
		return nil, err
	}
	return func(context.Context) error { return clock.SetClockOffset(before) }, nil
}
