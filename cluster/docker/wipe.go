package docker

import (
	"context"
	"fmt"

	"splitbrain/fault"
)

// WipeData empties a stopped node's data folder before it starts again, so
// that the nemesis's amnesia restarts work on Docker nodes as they do on
// local ones. Without persistence the data folder is a tmpfs the engine
// wiped at the stop, so there is nothing to do; with AOF the container and
// its volume are replaced by fresh ones.
func (n *Container) WipeData(ctx context.Context) error {
	if err := n.Refuse(fault.Wipe); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	st, err := n.cluster.eng.containerState(ctx, n.id)
	if err != nil {
		return fmt.Errorf("node %s: wipe data: %w", n.Name(), err)
	}
	if st.Running {
		return fmt.Errorf("node %s: wipe data: the node is running; stop or kill it first", n.Name())
	}
	if n.dataDir != "" {
		if err := n.wipeDataDirLocked(); err != nil {
			return fmt.Errorf("node %s: wipe data: %w", n.Name(), err)
		}
		return nil
	}
	if n.spec.DataVolume == "" {
		return nil
	}
	if err := n.recreateLocked(ctx); err != nil {
		return fmt.Errorf("node %s: wipe data: %w", n.Name(), err)
	}
	return nil
}
