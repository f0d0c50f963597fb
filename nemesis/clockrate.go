package nemesis

import (
	"context"
	"errors"
	"fmt"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// ClockRate makes a node's wall clock run at Rate times real time (1.05:
// it gains 50 ms every second) until healed, as a drifting oscillator or
// an NTP slew would: no jump, an offset that grows. Redis stamps a key's
// expiry with its wall clock at the SET and expires it when that clock
// passes, so on a fast node every TTL ends early in real time (by the
// fraction the clock gains) — what Redlock's drift allowance (1 % of the
// TTL) is there for. Healing makes the clock run at the rate it had
// before and steps it back to the offset it had then, as an NTP step
// would; keys expired meanwhile stay expired.
type ClockRate struct {
	Node cluster.Node
	Rate float64
}

// Available implements Limited: the node must be a cluster.RateClock.
func (c ClockRate) Available() error {
	_, err := rateClockOf(c.Node)
	return err
}

func rateClockOf(node cluster.Node) (cluster.RateClock, error) {
	return cluster.Capable[cluster.RateClock](node, fault.Clock)
}

// Describe implements Fault.
func (c ClockRate) Describe() history.Fault {
	return history.Fault{
		Kind:   fault.KindClockRate,
		Nodes:  []string{c.Node.Name()},
		Rate:   c.Rate,
		Detail: fmt.Sprintf("%s clock runs at ×%v (%s)", c.Node.Name(), c.Rate, fault.FormatRate(c.Rate)),
	}
}

// Inject implements Fault.
func (c ClockRate) Inject(context.Context) (Heal, error) {
	if err := fault.CheckRate(c.Rate); err != nil {
		return nil, err
	}
	clock, err := rateClockOf(c.Node)
	if err != nil {
		return nil, err
	}
	before, rate := clock.ClockOffset(), clock.ClockRate()
	if err := clock.SetClockRate(c.Rate); err != nil {
		return nil, err
	}
	return func(context.Context) error {
		return errors.Join(clock.SetClockRate(rate), clock.SetClockOffset(before))
	}, nil
}
