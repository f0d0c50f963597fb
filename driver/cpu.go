package driver

import (
	"context"
	"fmt"

	"splitbrain/internal/cpulimit"
)

// CPULimitAvailable says why a driver process cannot be starved of CPU
// here, or nil.
func (p *Proc) CPULimitAvailable() error { return cpulimit.Available() }

// LimitCPU gives the driver process share of one CPU until undo: its
// timers, renewals and replies run late, as on a loaded machine, without
// the clean stop of a pause.
func (p *Proc) LimitCPU(_ context.Context, share float64) (func(context.Context) error, error) {
	undo, err := cpulimit.Limit(p.Pid(), share)
	if err != nil {
		return nil, fmt.Errorf("driver %s of %s: %w", p.cfg.Name, p.cfg.Client, err)
	}
	return func(context.Context) error { return undo() }, nil
}
