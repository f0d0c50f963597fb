package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// CPULimiter is a process that can be starved of CPU: a node's
// (cluster.CPULimiter) or a client's lock driver (driver.Proc).
type CPULimiter interface {
	CPULimitAvailable() error
	LimitCPU(ctx context.Context, share float64) (undo func(context.Context) error, err error)
}

// Starve gives a node's server, or a client's lock driver process, a small
// share of one CPU until healed (a cgroup CPU quota): it runs in bursts,
// its timers fire late, its lock renewals and replies go out late, and
// nothing stops it cleanly as a pause would — what a loaded machine or a
// noisy neighbour does (rueidis issue 923: locks lost under CPU load).
// Healing lifts the limit.
type Starve struct {
	// Node is the node starved; or Client, a client's name, whose Proc
	// is its lock driver process (nil: the client runs inside the
	// harness, which cannot be starved without the whole run).
	Node   cluster.Node
	Client string
	Proc   CPULimiter
	// Share is the share of one CPU it gets (0.05: 5 ms of every 100 ms).
	Share float64
}

func (s Starve) target() string {
	if s.Node != nil {
		return s.Node.Name()
	}
	return s.Client
}

// limiter is what the fault limits, or why it cannot.
func (s Starve) limiter() (CPULimiter, error) {
	if s.Node != nil {
		l, err := cluster.Capable[cluster.CPULimiter](s.Node, fault.CPU)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	if s.Proc == nil {
		return nil, fmt.Errorf("starve %s: the client runs inside the harness (its lock is no driver process), so it cannot be starved apart from the run", s.Client)
	}
	return s.Proc, nil
}

// Available implements Limited: the node's kind and backend, or the
// client's driver, and the machine's cgroups must allow a CPU limit.
func (s Starve) Available() error {
	l, err := s.limiter()
	if err != nil {
		return err
	}
	return l.CPULimitAvailable()
}

// Describe implements Fault.
func (s Starve) Describe() history.Fault {
	return history.Fault{Kind: fault.KindStarve, Nodes: []string{s.target()},
		Detail: fmt.Sprintf("%s starved: %s%% of one CPU", s.target(), strconv.FormatFloat(s.Share*100, 'g', -1, 64))}
}

// Inject implements Fault.
func (s Starve) Inject(ctx context.Context) (Heal, error) {
	l, err := s.limiter()
	if err != nil {
		return nil, err
	}
	if s.Share <= 0 || s.Share >= 1 {
		return nil, errors.New("starve: share must be above 0 and below one CPU")
	}
	undo, err := l.LimitCPU(ctx, s.Share)
	if err != nil {
		return nil, err
	}
	return Heal(undo), nil
}
