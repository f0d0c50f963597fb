package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"splitbrain/cluster"
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
	if len(cfg.sc.Replicas) > 0 {
		// Checked before anything starts; setUpFaults would fail too, but
		// only once the containers are up.
		return nil, fmt.Errorf("%s: cluster.replicas: the docker backend cannot start replicas (nor promote them); use --backend local", cfg.sc.File)
	}
	persist, err := dockerPersistence(cfg.sc)
	if err != nil {
		return nil, err
	}
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
	cl, err := docker.StartCluster(ctx, eng, docker.Config{Nodes: cfg.sc.Nodes, Dir: cfg.dir, CacheDir: cfg.cacheDir, Persistence: persist})
	if err != nil {
		return nil, fmt.Errorf("backend docker: %w", err)
	}
	cfg.logf("docker: run %s, image %s", cl.RunID(), cl.Image().Tag)
	return &dockerBackend{eng: eng, cl: cl}, nil
}

// dockerPersistence is the one persistence mode of the scenario's nodes:
// a Docker cluster has one for all of them.
func dockerPersistence(sc *Scenario) (cluster.Persistence, error) {
	var modes []string
	for _, p := range sc.Persistence {
		if p == "" {
			p = cluster.PersistNone
		}
		if !slices.Contains(modes, string(p)) {
			modes = append(modes, string(p))
		}
	}
	switch len(modes) {
	case 0:
		return cluster.PersistNone, nil
	case 1:
		return cluster.Persistence(modes[0]), nil
	}
	slices.Sort(modes)
	return "", fmt.Errorf("%s: cluster.persistence: the docker backend runs every node with the same mode, this scenario mixes %s; use one mode or --backend local",
		sc.File, strings.Join(modes, ", "))
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

// Close removes every container, volume and network of the run, then lets
// go of the engine.
func (b *dockerBackend) Close(ctx context.Context) error {
	return errors.Join(b.cl.Close(ctx), b.eng.Close())
}
