package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"splitbrain/cluster"
	"splitbrain/fault"
)

var _ cluster.PowerCutter = (*Process)(nil)

// syncLog is where the clock shim records what the node's fsyncs made
// durable (cluster.SyncEnv); it is started afresh at each start.
func (n *Process) syncLog() string { return filepath.Join(n.stateDir, "synclog") }

// LoseUnsynced implements cluster.PowerCutter: the killed node's files are
// cut back to what it had fsynced since it started (what it found at its
// start counts as durable), as a power loss takes the page cache with
// it. The node's log says what was lost.
func (n *Process) LoseUnsynced(context.Context) (cluster.PowerLoss, error) {
	if err := n.Refuse(fault.Power); err != nil {
		return cluster.PowerLoss{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runningLocked() {
		return cluster.PowerLoss{}, fmt.Errorf("node %s: power loss: still running; kill it first", n.Name())
	}
	loss, err := cluster.LoseUnsynced(n.syncLog(), n.dataDir)
	if err != nil {
		return loss, fmt.Errorf("node %s: %w", n.Name(), err)
	}
	if f, err := os.OpenFile(n.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
		fmt.Fprintf(f, "splitbrain: power loss: %s\n", loss)
		f.Close()
	}
	return loss, nil
}
