package nemesis

import (
	"context"
	"fmt"
	"time"

	"splitbrain/fault"
	"splitbrain/history"
)

// ClockNode is a node whose wall clock the nemesis can move.
type ClockNode interface {
	Name() string
	SetClockOffset(time.Duration) error
	ClockOffset() time.Duration
}

// ClockJump moves a node's wall clock by By (forward or backward) at once,
// as an NTP step or an operator's `date -s` would. Keys whose expiry the new
// time has passed are gone at the next access. Healing restores the offset
// the node had before, which cannot bring expired keys back.
type ClockJump struct {
	Node ClockNode
	By   time.Duration
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
	before := c.Node.ClockOffset()
	if err := c.Node.SetClockOffset(before + c.By); err != nil {
		return nil, err
	}
	return func(context.Context) error { return c.Node.SetClockOffset(before) }, nil
}
