package local

import (
	"context"
	"fmt"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/internal/cpulimit"
)

var _ cluster.CPULimiter = (*Process)(nil)

// CPULimitAvailable implements cluster.CPULimiter: where the machine lets
// the harness set cgroup CPU limits.
func (n *Process) CPULimitAvailable() error {
	if err := n.Refuse(fault.CPU); err != nil {
		return err
	}
	return cpulimit.Available()
}

// LimitCPU implements cluster.CPULimiter: the server's process, and what
// it forks meanwhile, get share of one CPU until the undo. A node
// restarted meanwhile runs unlimited.
func (n *Process) LimitCPU(_ context.Context, share float64) (func(context.Context) error, error) {
	if err := n.CPULimitAvailable(); err != nil {
		return nil, err
	}
	pid := n.PID()
	if pid == 0 {
		return nil, fmt.Errorf("node %s: cpu limit: %w", n.Name(), cluster.ErrNotRunning)
	}
	undo, err := cpulimit.Limit(pid, share)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name(), err)
	}
	return func(context.Context) error { return undo() }, nil
}
