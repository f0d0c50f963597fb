package scenarios

import (
	"context"
	"fmt"

	"splitbrain/cluster"
	"splitbrain/docker"
)

// Backend names, as --backend takes them and results.Meta records them.
const (
	BackendLocal  = "local"
	BackendDocker = "docker"
)

// Backends are the names RunOptions.Backend accepts.
var Backends = []string{BackendLocal, BackendDocker}

// startFunc starts a run's nodes on one backend.
type startFunc func(context.Context, cluster.Config) (cluster.Backend, error)

// backends maps each backend's name to its start: redis-server processes
// on this machine, or Docker containers on a network of the run's own,
// whose clients' proxies stay on this host and dial the containers'
// addresses, so that link faults work as they do locally.
var backends = map[string]startFunc{
	BackendLocal: func(ctx context.Context, cfg cluster.Config) (cluster.Backend, error) {
		return started(cluster.StartLocal(ctx, cfg))
	},
	BackendDocker: func(ctx context.Context, cfg cluster.Config) (cluster.Backend, error) {
		return started(docker.Start(ctx, cfg))
	},
}

// started is a backend's start's result as a cluster.Backend, nil on error
// (not an interface holding a nil pointer).
func started[B cluster.Backend](b B, err error) (cluster.Backend, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}

// refusers say, for each backend, whether it runs nodes of a kind (nil: it
// does); the local backend runs every kind.
var refusers = map[string]func(*cluster.Kind) error{
	BackendLocal:  func(*cluster.Kind) error { return nil },
	BackendDocker: docker.Refuse,
}

// FitBackend says whether the scenario, as played against its lock, can
// run on the backend called name, and why not: the kinds of server it
// needs (its lock's, and Sentinel's when it has sentinels), each asked of
// the backend, so that a suite marks the cell n/a instead of playing it
// into an error.
func (sc *Scenario) FitBackend(name string) (bool, string) {
	refuse, ok := refusers[backendName(name)]
	if !ok {
		return false, fmt.Sprintf("backend %q: want one of %v", name, Backends)
	}
	kinds := []*cluster.Kind{ServerKind(sc.Lock.Kind)}
	if sc.Sentinel != nil {
		kinds = append(kinds, cluster.Sentinel)
	}
	for _, k := range kinds {
		if err := refuse(k); err != nil {
			return false, fmt.Sprintf("the %s backend cannot play it: %v (the local backend can)", backendName(name), err)
		}
	}
	return true, ""
}

// startBackend starts cfg's nodes on the backend called name in starts;
// empty means local.
func startBackend(ctx context.Context, starts map[string]startFunc, name string, cfg cluster.Config) (cluster.Backend, error) {
	start, ok := starts[backendName(name)]
	if !ok {
		return nil, fmt.Errorf("backend %q: want one of %v", name, Backends)
	}
	return start(ctx, cfg)
}

// backendName is the name a run records for RunOptions.Backend.
func backendName(name string) string {
	if name == "" {
		return BackendLocal
	}
	return name
}
