package nemesis

import (
	"context"

	"splitbrain/fault"
	"splitbrain/history"
)

// Pausable is a node whose process can be frozen and thawed.
type Pausable interface {
	Name() string
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// Pause freezes a node (SIGSTOP, docker pause): it answers nothing, but the
// kernel still accepts TCP connections to it, so clients time out rather
// than being refused. Its keys do not expire while it is frozen and it
// notices the time that passed when it is thawed. Healing resumes it.
type Pause struct {
	Node Pausable
}

// Describe implements Fault.
func (p Pause) Describe() history.Fault {
	return history.Fault{Kind: fault.KindPause, Nodes: []string{p.Node.Name()}, Detail: p.Node.Name() + " paused"}
}

// Inject implements Fault.
func (p Pause) Inject(ctx context.Context) (Heal, error) {
	if err := p.Node.Pause(ctx); err != nil {
		return nil, err
	}
	return p.Node.Resume, nil
}
