package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// SlowFsync makes a node's disk slow to sync: each fsync and fdatasync
// waits Delay before it starts, until healed. Under appendfsync everysec
// the writes since the last fsync then stay in the page cache, where a
// power loss (Kill with Power) takes them — the window of "up to a
// second" of grants that antirez's answer to Kleppmann names, held open
// so that a story does not race it; under always each write waits for its
// fsync. Healing ends the delay, also of an fsync already waiting.
type SlowFsync struct {
	Node  cluster.Node
	Delay time.Duration
}

// Available implements Limited: the node's kind must sync through the
// shim.
func (s SlowFsync) Available() error {
	_, err := cluster.Capable[cluster.FsyncDelayer](s.Node, fault.Fsync)
	return err
}

// Describe implements Fault.
func (s SlowFsync) Describe() history.Fault {
	return history.Fault{Kind: fault.KindFsyncDelay, Nodes: []string{s.Node.Name()},
		Detail: fmt.Sprintf("%s's disk slow: each fsync waits %v", s.Node.Name(), s.Delay)}
}

// Inject implements Fault.
func (s SlowFsync) Inject(ctx context.Context) (Heal, error) {
	d, err := cluster.Capable[cluster.FsyncDelayer](s.Node, fault.Fsync)
	if err != nil {
		return nil, err
	}
	if s.Delay <= 0 {
		return nil, errors.New("fsync delay: the delay must be positive")
	}
	if err := d.SetFsyncDelay(s.Delay); err != nil {
		return nil, err
	}
	return func(context.Context) error { return d.SetFsyncDelay(0) }, nil
}
