package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/nemesis"
	"splitbrain/redlock"
	"splitbrain/scenarios/spec"
	"splitbrain/workload"
)

// storageTimeout is how long a client waits on the storage. The storage is
// the resource, not the lock: no lock timing depends on it, and a write
// held on its way there (delayed-write) must still complete on the
// client's side once it lands, however slowly a loaded machine brought
// the other client to its own write first.
const storageTimeout = 5 * time.Second

// workloadRun is what a generated workload needs beyond the scripted
// runner: the storage node and every client's connection to it.
type workloadRun struct {
	storage  *local.Cluster
	harness  *redis.Client // the harness's own connection: initial writes, final reads
	storages map[string]*workload.Storage
}

// startStorage starts the storage node: one redis-server outside the lock
// quorum, in its own folder of the run.
func (r *runner) startStorage(ctx context.Context, dir, cacheDir string) (*nemesis.Endpoint, error) {
	if !r.sc.Workload.HasResource() {
		return nil, nil
	}
	st, err := local.Start(ctx, cluster.Config{Nodes: 1, Dir: filepath.Join(dir, spec.StorageNode), CacheDir: cacheDir})
	if err != nil {
		return nil, fmt.Errorf("storage node: %w", err)
	}
	r.wl.storage = st
	node := st.Nodes()[0]
	r.wl.harness = redis.NewClient(redlock.ClientOptions(node.Addr(), st.Password()))
	r.logf("started the storage node %s (outside the lock quorum)", node.Addr())
	return &nemesis.Endpoint{Name: spec.StorageNode, Addr: node.Addr()}, nil
}

// connectStorage gives every client its own connection to the storage,
// through its proxy.
func (r *runner) connectStorage() error {
	if r.wl.storage == nil {
		return nil
	}
	r.wl.storages = map[string]*workload.Storage{}
	for _, name := range r.sc.Clients {
		addr, err := r.net.Addr(name, spec.StorageNode)
		if err != nil {
			return err
		}
		opts := redlock.ClientOptions(addr, r.wl.storage.Password())
		opts.ReadTimeout, opts.WriteTimeout = storageTimeout, storageTimeout
		c := redis.NewClient(opts)
		r.conns = append(r.conns, c)
		r.wl.storages[name] = workload.NewStorage(c, r.sc.Workload.Fencing)
	}
	return nil
}

// closeStorage stops the storage node.
func (r *runner) closeStorage(ctx context.Context) error {
	if r.wl.harness != nil {
		_ = r.wl.harness.Close()
	}
	if r.wl.storage == nil {
		return nil
	}
	return r.wl.storage.Close(ctx)
}
