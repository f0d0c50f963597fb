package cluster

import "context"

// CPULimiter is a node whose processes can be starved of CPU: they get a
// share of one CPU until the undo (package internal/cpulimit's cgroups on
// the local backend, the engine's CPU quota on Docker).
type CPULimiter interface {
	// CPULimitAvailable says why the node cannot be starved here (the
	// machine gives the harness no CPU controller), or nil.
	CPULimitAvailable() error
	// LimitCPU gives the running node share of one CPU until undo.
	LimitCPU(ctx context.Context, share float64) (undo func(context.Context) error, err error)
}
