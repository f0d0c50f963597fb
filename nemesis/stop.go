package nemesis

import (
	"context"
	"fmt"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// Stop shuts a node down gracefully (SIGTERM): Redis finishes its AOF
// (and, configured without `save ""`, would snapshot). A paused node is
// resumed first, or it would never act on the signal. Amnesia deletes the
// node's data before it restarts. Healing restarts the node;
// Nemesis.StartFor restarts it after a delay.
type Stop struct {
	Node    cluster.Node
	Amnesia bool
}

// Available implements Fault: the node must be a cluster.Stopper, and a
// cluster.Wiper for amnesia.
func (s Stop) Available() error {
	if err := wipeAvailable(s.Node, s.Amnesia); err != nil {
		return err
	}
	_, err := cluster.Capable[cluster.Stopper](s.Node, fault.Stop)
	return err
}

// Describe implements Fault.
func (s Stop) Describe() history.Fault {
	return history.Fault{Kind: fault.KindStop, Nodes: []string{s.Node.Name()}, Detail: s.Node.Name() + " stopped (SIGTERM)" + amnesiaNote(s.Amnesia)}
}

// Inject implements Fault.
func (s Stop) Inject(ctx context.Context) (Heal, error) {
	st, err := cluster.Capable[cluster.Stopper](s.Node, fault.Stop)
	if err != nil {
		return nil, err
	}
	if up, known := running(s.Node); known && !up {
		return nil, fmt.Errorf("stop %s: not running", s.Node.Name())
	}
	if err := st.Stop(ctx); err != nil {
		return nil, err
	}
	return restart(s.Node, s.Amnesia), nil
}
