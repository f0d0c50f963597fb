package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"splitbrain/fault"
	"splitbrain/history"
)

// ClockStrobe flips a node's wall clock back and forth between its offset
// at injection and that offset + Delta, every Period, until healed (Jepsen's
// strobe): expiry decisions on the node see time jump to and fro. Healing
// stops the flipping and restores the offset the node had before.
type ClockStrobe struct {
	Node   ClockNode
	Delta  time.Duration
	Period time.Duration
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
	base := s.Node.ClockOffset()
	if err := s.Node.SetClockOffset(base + s.Delta); err != nil {
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
			if err := s.Node.SetClockOffset(off); err != nil {
				done <- err
				return
			}
		}
	}()
	return func(context.Context) error {
		close(stop)
		return errors.Join(<-done, s.Node.SetClockOffset(base))
	}, nil
}
