package scenarios

import (
	"context"
	"fmt"
	"time"

	"splitbrain/cluster"
)

// localBackend runs the nodes as redis-server processes on this machine.
type localBackend struct{ cl *cluster.Local }

func startLocalBackend(ctx context.Context, cfg backendConfig) (backend, error) {
	cl, err := cluster.StartLocal(ctx, cluster.Config{Nodes: cfg.sc.Nodes, Dir: cfg.dir, CacheDir: cfg.cacheDir, NodePersistence: cfg.sc.Persistence})
	if err != nil {
		return nil, err
	}
	return localBackend{cl}, nil
}

func (b localBackend) Nodes() []backendNode {
	var out []backendNode
	for _, n := range b.cl.Nodes() {
		out = append(out, n.Controls())
	}
	return out
}

func (b localBackend) Node(name string) (backendNode, bool) {
	n, ok := b.cl.Node(name)
	if !ok {
		return nil, false
	}
	return n.Controls(), true
}

func (b localBackend) Password() string { return b.cl.Password() }

func (b localBackend) Close(ctx context.Context) error { return b.cl.Close(ctx) }

// AddReplica implements replicaBackend; the replica keeps its master's
// persistence.
func (b localBackend) AddReplica(ctx context.Context, name string, master backendNode, via string) (backendNode, error) {
	m, ok := b.cl.Node(master.Name())
	if !ok {
		return nil, fmt.Errorf("replica %s: no master %s", name, master.Name())
	}
	rep, err := b.cl.AddNode(ctx, cluster.NodeSpec{Name: name, Persistence: m.Persistence(), ReplicaOf: via})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := rep.WaitSynced(sctx); err != nil {
		return nil, err
	}
	return rep.Controls(), nil
}
