package scenarios

import (
	"context"
	"errors"
	"fmt"
	"time"

	"splitbrain/docker"
)

// dockerBackend runs the nodes as containers on a bridge network of their
// own. The clients' proxies stay on the host and dial the containers'
// addresses, so link faults work as they do locally; node faults (pause,
// kill, stop, clock) go through the engine and the clock shim.
type dockerBackend struct {
	eng *docker.Engine
	cl  *docker.Cluster
}

func startDockerBackend(ctx context.Context, cfg backendConfig) (_ backend, err error) {
	eng, err := docker.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("backend docker: %w", err)
	}
	defer func() {
		if err != nil {
			_ = eng.Close()
		}
	}()
	// StartCluster reaps too; doing it here first puts what was reaped in
	// the run's log.
	reaped, err := eng.Reap(ctx, cfg.cacheDir)
	for _, line := range reaped {
		cfg.logf("docker: removed the leftovers of %s", line)
	}
	if err != nil {
		return nil, fmt.Errorf("backend docker: reaping leftovers: %w", err)
	}
	cl, err := docker.StartCluster(ctx, eng, docker.Config{Nodes: cfg.sc.Nodes, Dir: cfg.dir, CacheDir: cfg.cacheDir, NodePersistence: cfg.sc.Persistence})
	if err != nil {
		return nil, fmt.Errorf("backend docker: %w", err)
	}
	cfg.logf("docker: run %s, image %s", cl.RunID(), cl.Image().Tag)
	return &dockerBackend{eng: eng, cl: cl}, nil
}

func (b *dockerBackend) Nodes() []backendNode {
	var out []backendNode
	for _, n := range b.cl.Nodes() {
		out = append(out, n)
	}
	return out
}

func (b *dockerBackend) Node(name string) (backendNode, bool) {
	n, ok := b.cl.Node(name)
	if !ok {
		return nil, false
	}
	return n, true
}

func (b *dockerBackend) Password() string { return b.cl.Password() }

// AddReplica implements replicaBackend: the replica is one more container
// on the run's network, with its master's persistence. via is the proxy on
// this host that the replication link goes through; the container reaches
// it through a relay on the network's gateway, so the link's faults work
// as they do locally.
func (b *dockerBackend) AddReplica(ctx context.Context, name string, master backendNode, via string) (backendNode, error) {
	m, ok := b.cl.Node(master.Name())
	if !ok {
		return nil, fmt.Errorf("replica %s: no master %s", name, master.Name())
	}
	rep, err := b.cl.AddReplica(ctx, docker.ReplicaSpec{Name: name, Persistence: m.Persistence(), Master: via})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := rep.WaitSynced(sctx); err != nil {
		return nil, err
	}
	return rep, nil
}

// Close removes every container, volume and network of the run, then lets
// go of the engine.
func (b *dockerBackend) Close(ctx context.Context) error {
	return errors.Join(b.cl.Close(ctx), b.eng.Close())
}
