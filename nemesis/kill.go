package nemesis

import (
	"context"
	"errors"
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
// was written sits in the page cache, which survives the process. Set
// Power to model the machine's power failing too: the node's files are
// cut back to what it had fsynced (cluster.PowerCutter), so that
// appendfsync everysec forgets up to the last second or so of writes and
// always forgets nothing it acknowledged. Set Amnesia to lose everything:
// the node's data is deleted before it restarts. Healing restarts the
// node; Nemesis.StartFor restarts it after a delay.
type Kill struct {
	Node    cluster.Node
	Amnesia bool
	Power   bool
}

// Available implements Fault: the node must be a cluster.Killer, a
// cluster.Wiper for amnesia and a cluster.PowerCutter for a power loss.
func (k Kill) Available() error {
	if err := wipeAvailable(k.Node, k.Amnesia); err != nil {
		return err
	}
	if k.Power {
		if k.Amnesia {
			return fmt.Errorf("kill %s: a power loss loses what was not fsynced, amnesia everything: ask for one", k.Node.Name())
		}
		if _, err := cluster.Capable[cluster.PowerCutter](k.Node, fault.Power); err != nil {
			return err
		}
	}
	_, err := cluster.Capable[cluster.Killer](k.Node, fault.Kill)
	return err
}

// Describe implements Fault.
func (k Kill) Describe() history.Fault {
	detail := k.Node.Name() + " killed (SIGKILL)" + amnesiaNote(k.Amnesia)
	if k.Power {
		detail = k.Node.Name() + " lost power (SIGKILL, and what it had not fsynced lost)"
	}
	return history.Fault{Kind: fault.KindKill, Nodes: []string{k.Node.Name()}, Detail: detail}
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
	var pc cluster.PowerCutter
	if k.Power {
		if err := k.Available(); err != nil {
			return nil, err
		}
		pc = k.Node.(cluster.PowerCutter)
	}
	if err := kl.Kill(ctx); err != nil {
		return nil, err
	}
	if pc != nil {
		if _, err := pc.LoseUnsynced(ctx); err != nil {
			// Not injected, so nothing will heal it: the node comes
			// back at once, with what the cut left.
			return nil, errors.Join(err, k.Node.Start(ctx))
		}
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
