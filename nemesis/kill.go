package nemesis

import (
	"context"
	"fmt"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// runningNode is a node that can say whether it runs; the kill and stop
// faults use it, where a backend offers it, to refuse taking down a node
// that is down and to leave alone one that something else restarted.
type runningNode interface {
	Running() bool
}

func running(node cluster.Node) (bool, bool) {
	r, ok := node.(runningNode)
	if !ok {
		return false, false
	}
	return r.Running(), true
}

// Kill crashes a node with SIGKILL (kill -9): no shutdown, no last fsync.
// Under AOF that loses nothing, whatever appendfsync says, because what
// was written sits in the page cache, which survives the process; set
// Amnesia to model the machine losing it too (power loss, a crash before
// fsync): the node's data is deleted before it restarts. Healing restarts
// the node; Nemesis.StartFor restarts it after a delay.
type Kill struct {
	Node    cluster.Node
	Amnesia bool
}

// Available implements Fault: the node must be a cluster.Killer, and a
// cluster.Wiper for amnesia.
func (k Kill) Available() error {
	if err := wipeAvailable(k.Node, k.Amnesia); err != nil {
		return err
	}
	_, err := cluster.Capable[cluster.Killer](k.Node, fault.Kill)
	return err
}

// Describe implements Fault.
func (k Kill) Describe() history.Fault {
	return history.Fault{Kind: fault.KindKill, Nodes: []string{k.Node.Name()}, Detail: k.Node.Name() + " killed (SIGKILL)" + amnesiaNote(k.Amnesia)}
}

// Inject implements Fault.
func (k Kill) Inject(ctx context.Context) (Heal, error) {
	kl, err := cluster.Capable[cluster.Killer](k.Node, fault.Kill)
	if err != nil {
		return nil, err
	}
	if up, known := running(k.Node); known && !up {
		return nil, fmt.Errorf("kill %s: not running", k.Node.Name())
	}
	if err := kl.Kill(ctx); err != nil {
		return nil, err
	}
	return restart(k.Node, k.Amnesia), nil
}

// wipeAvailable is the refusal of amnesia on a node that cannot wipe its
// data; nil without amnesia.
func wipeAvailable(node cluster.Node, amnesia bool) error {
	if !amnesia {
		return nil
	}
	_, err := cluster.Capable[cluster.Wiper](node, fault.Wipe)
	return err
}

// restart returns the heal of a node that was taken down: start it again,
// with its data deleted first if amnesia is set. A node some other heal
// already started is left alone.
func restart(node cluster.Node, amnesia bool) Heal {
	return func(ctx context.Context) error {
		if up, _ := running(node); up {
			return nil
		}
		if amnesia {
			w, ok := node.(cluster.Wiper)
			if !ok {
				return fmt.Errorf("restart %s: amnesia asked, but the node cannot wipe its data", node.Name())
			}
			if err := w.WipeData(ctx); err != nil {
				return err
			}
		}
		return node.Start(ctx)
	}
}

func amnesiaNote(amnesia bool) string {
	if amnesia {
		return ", restarts with its data lost"
	}
	return ""
}
