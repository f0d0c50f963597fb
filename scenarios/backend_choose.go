package scenarios

import (
	"context"
	"fmt"

	"splitbrain/nemesis"
)

// Backend names, as --backend takes them and results.Meta records them.
const (
	BackendLocal  = "local"
	BackendDocker = "docker"
)

// Backends are the names RunOptions.Backend accepts.
var Backends = []string{BackendLocal, BackendDocker}

// backend is where a run's Redis nodes live: redis-server processes on this
// machine or Docker containers. The runner reaches the nodes only through
// it, so a scenario runs unchanged on either.
type backend interface {
	// Nodes are the lock's nodes, n1..nN, in order.
	Nodes() []backendNode
	// Node finds a node (a replica too) by name.
	Node(name string) (backendNode, bool)
	Password() string
	Close(ctx context.Context) error
}

// backendNode is a node as the runner and the node faults drive it. Faults
// only some backends support (failover, which needs Promotable) are found
// by type assertion, and a step asking for one on a backend without it
// fails naming the step.
type backendNode interface {
	Addr() string
	nemesis.ClockNode
	nemesis.Pausable
	nemesis.Stoppable
	nemesis.Wipeable
}

// replicaBackend is a backend that can start replicas for cluster.replicas.
type replicaBackend interface {
	// AddReplica starts a replica named name of master, replicating
	// through the proxy at via, and waits until it is in sync.
	AddReplica(ctx context.Context, name string, master backendNode, via string) (backendNode, error)
}

// backendConfig is what every backend starts a cluster from.
type backendConfig struct {
	sc       *Scenario
	dir      string
	cacheDir string
	logf     func(string, ...any)
}

// startBackend starts the scenario's nodes on the named backend; empty
// means local.
func startBackend(ctx context.Context, name string, cfg backendConfig) (backend, error) {
	switch name {
	case "", BackendLocal:
		return startLocalBackend(ctx, cfg)
	case BackendDocker:
		return startDockerBackend(ctx, cfg)
	}
	return nil, fmt.Errorf("backend %q: want one of %v", name, Backends)
}

// backendName is the name a run records for RunOptions.Backend.
func backendName(name string) string {
	if name == "" {
		return BackendLocal
	}
	return name
}
