package nemesis

import (
	"context"
	"fmt"

	"splitbrain/fault"
	"splitbrain/history"
)

// Killable is a node that can be killed and started again. Killing a node
// that is down does nothing; starting one that runs is an error.
type Killable interface {
	Name() string
	Kill(ctx context.Context) error
	Start(ctx context.Context) error
}

// Wipeable is a stopped node whose data can be deleted before it restarts.
type Wipeable interface {
	WipeData(ctx context.Context) error
}

// runningNode is a node that can say whether it runs; the kill and stop
// faults use it, where a backend offers it, to refuse taking down a node
// that is down and to leave alone one that something else restarted.
type runningNode interface {
	Running() bool
}

func running(node Killable) (bool, bool) {
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
	Node    Killable
	Amnesia bool
}

// Describe implements Fault.
func (k Kill) Describe() history.Fault {
	return history.Fault{Kind: fault.KindKill, Nodes: []string{k.Node.Name()}, Detail: k.Node.Name() + " killed (SIGKILL)" + amnesiaNote(k.Amnesia)}
}

// Inject implements Fault.
func (k Kill) Inject(ctx context.Context) (Heal, error) {
	if up, known := running(k.Node); known && !up {
		return nil, fmt.Errorf("kill %s: not running", k.Node.Name())
	}
	if err := k.Node.Kill(ctx); err != nil {
		return nil, err
	}
	return restart(k.Node, k.Amnesia), nil
}

// restart returns the heal of a node that was taken down: start it again,
// with its data deleted first if amnesia is set. A node some other heal
// already started is left alone.
func restart(node Killable, amnesia bool) Heal {
	return func(ctx context.Context) error {
		if up, _ := running(node); up {
			return nil
		}
		if amnesia {
			w, ok := node.(Wipeable)
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
