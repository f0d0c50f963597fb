package nemesis

import (
	"context"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// Pause freezes a node (SIGSTOP, docker pause): it answers nothing, but the
// kernel still accepts TCP connections to it, so clients time out rather
// than being refused. Its keys do not expire while it is frozen and it
// notices the time that passed when it is thawed. Healing resumes it.
type Pause struct {
	Node cluster.Node
}

// Available implements Fault: the node must be a cluster.Pauser.
func (p Pause) Available() error {
	_, err := cluster.Capable[cluster.Pauser](p.Node, fault.Pause)
	return err
}

// Describe implements Fault.
func (p Pause) Describe() history.Fault {
	return history.Fault{Kind: fault.KindPause, Nodes: []string{p.Node.Name()}, Detail: p.Node.Name() + " paused"}
}

// Inject implements Fault.
func (p Pause) Inject(ctx context.Context) (Heal, error) {
	pz, err := cluster.Capable[cluster.Pauser](p.Node, fault.Pause)
	if err != nil {
		return nil, err
	}
	if err := pz.Pause(ctx); err != nil {
		return nil, err
	}
	return pz.Resume, nil
}
