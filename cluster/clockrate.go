package cluster

import (
	"fmt"

	"splitbrain/fault"
)

// RateClock is a Clock whose rate can be changed: its offset grows (or
// shrinks) with real time, through the same clock shim. Every backend's
// nodes have it (NodeBase).
type RateClock interface {
	Clock
	// SetClockRate makes the clock run at rate times real time from now
	// on, from the offset it has now; 1 is real time.
	SetClockRate(rate float64) error
	// ClockRate is the clock's rate, 1 when it runs at real time.
	ClockRate() float64
}

// SetClockRate implements RateClock.
func (b *NodeBase) SetClockRate(rate float64) error {
	if err := b.Refuse(fault.Clock); err != nil {
		return err
	}
	if rate != 1 {
		if err := fault.CheckRate(rate); err != nil {
			return fmt.Errorf("node %s: %w", b.name, err)
		}
	}
	if err := b.clock.SetRate(fault.RatePPB(rate)); err != nil {
		return fmt.Errorf("node %s: %w", b.name, err)
	}
	return nil
}

// ClockRate implements RateClock.
func (b *NodeBase) ClockRate() float64 { return 1 + float64(b.clock.Rate())/1e9 }
