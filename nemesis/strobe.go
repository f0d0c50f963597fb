package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// ClockStrobe flips a node's wall clock back and forth between its offset
// at injection and that offset + Delta, every Period, until healed (Jepsen's
// strobe): expiry decisions on the node see time jump to and fro. Healing
// stops the flipping and restores the offset the node had before.
type ClockStrobe struct {
	Node   cluster.Node
	Delta  time.Duration
	Period time.Duration
}

// Available implements Fault: the node must be a cluster.Clock.
func (s ClockStrobe) Available() error {
	_, err := clockOf(s.Node)
	return err
}

// Describe implements Fault.
func (s ClockStrobe) Describe() history.Fault {
	return history.Fault{
		Kind:   fault.KindClockStrobe,
		Nodes:  []string{s.Node.Name()},
		Offset: int64(s.Delta),
		Detail: fmt.Sprintf("%s clock strobes %s every %v", s.Node.Name(), fault.FormatOffset(s.Delta), s.Period),
	}
}

// Inject implements Fault.
func (s ClockStrobe) Inject(ctx context.Context) (Heal, error) {
	if s.Period <= 0 {
		return nil, fmt.Errorf("clock strobe: period %v, want > 0", s.Period)
	}
	if s.Delta == 0 {
		return nil, errors.New("clock strobe: delta is 0, want a non-zero offset")
	}
	clock, err := clockOf(s.Node)
	if err != nil {
		return nil, err
	}
	base := clock.ClockOffset()
	if err := clock.SetClockOffset(base + s.Delta); err != nil {
		return nil, err
	}
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		t := time.NewTicker(s.Period)
		defer t.Stop()
		high := true
		for {
			select {
			case <-stop:
				done <- nil
				return
			case <-t.C:
			}
			high = !high
			off := base
			if high {
				off += s.Delta
			}
			if err := clock.SetClockOffset(off); err != nil {
				done <- err
				return
			}
		}
	}()
	return func(context.Context) error {
		close(stop)
		return errors.Join(<-done, clock.SetClockOffset(base))
	}, nil
}
