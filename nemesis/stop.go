package nemesis

import (
	"context"
	"fmt"

	"splitbrain/fault"
	"splitbrain/history"
)

// Stoppable is a node that can be shut down gracefully and started again.
type Stoppable interface {
	Killable
	Stop(ctx context.Context) error
}

// Stop shuts a node down gracefully (SIGTERM): Redis finishes its AOF
// (and, configured without `save ""`, would snapshot). A paused node is
// resumed first, or it would never act on the signal. Amnesia deletes the
// node's data before it restarts. Healing restarts the node;
// Nemesis.StartFor restarts it after a delay.
type Stop struct {
	Node    Stoppable
	Amnesia bool
}

// Describe implements Fault.
func (s Stop) Describe() history.Fault {
	return history.Fault{Kind: fault.KindStop, Nodes: []string{s.Node.Name()}, Detail: s.Node.Name() + " stopped (SIGTERM)" + amnesiaNote(s.Amnesia)}
}

// Inject implements Fault.
func (s Stop) Inject(ctx context.Context) (Heal, error) {
	if up, known := running(s.Node); known && !up {
		return nil, fmt.Errorf("stop %s: not running", s.Node.Name())
	}
	if err := s.Node.Stop(ctx); err != nil {
		return nil, err
	}
	return restart(s.Node, s.Amnesia), nil
}
