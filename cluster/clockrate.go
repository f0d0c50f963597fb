package cluster

import (
	"fmt"
	"time"

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

// FsyncDelayer is a node whose disk can be made slow: each fsync and
// fdatasync waits a while before it starts (the shim holds it), as on a
// disk too busy to sync — what Redis logs as "Asynchronous AOF fsync is
// taking too long (disk is busy?)". With appendfsync everysec the writes
// after the last fsync stay in the page cache meanwhile, for a power loss
// to take; with always, each write waits. NodeBase has it, where the
// node's kind takes fault.Fsync.
type FsyncDelayer interface {
	// SetFsyncDelay makes each fsync wait d before it starts; zero heals.
	SetFsyncDelay(d time.Duration) error
}

// SetFsyncDelay implements FsyncDelayer.
func (b *NodeBase) SetFsyncDelay(d time.Duration) error {
	if err := b.Refuse(fault.Fsync); err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("node %s: fsync delay %v is negative", b.name, d)
	}
	if err := b.clock.SetFsyncDelay(d); err != nil {
		return fmt.Errorf("node %s: %w", b.name, err)
	}
	return nil
}
