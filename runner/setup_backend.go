package runner

import (
	"cmp"
	"context"
	"fmt"

	"splitbrain/cluster"
	"splitbrain/cluster/docker"
	"splitbrain/cluster/local"
	"splitbrain/scenarios/spec"
)

// startFunc starts a run's nodes on one backend.
type startFunc func(context.Context, cluster.Config) (cluster.Backend, error)

// backends maps each backend's name to its start: redis-server processes
// on this machine, or Docker containers on a network of the run's own,
// whose clients' proxies stay on this host and dial the containers'
// addresses, so that link faults work as they do locally.
var backends = map[string]startFunc{
	spec.BackendLocal: func(ctx context.Context, cfg cluster.Config) (cluster.Backend, error) {
		return started(local.Start(ctx, cfg))
	},
	spec.BackendDocker: func(ctx context.Context, cfg cluster.Config) (cluster.Backend, error) {
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

// FitBackend says whether the scenario, as played against its lock, can
// run on the backend called name, and why not. Both backends run every
// kind of server (Redis, Sentinel, ZooKeeper, etcd); what a kind cannot
// take (etcd's clock) is the story's fit with the lock (Fit), the same on
// either. So only a backend that does not exist is refused here, before a
// suite starts anything.
func FitBackend(sc *spec.Scenario, name string) (bool, string) {
	if _, ok := backends[Backend(name, "")]; !ok {
		return false, fmt.Sprintf("backend %q: want one of %v", name, spec.Backends)
	}
	return true, ""
}

// startBackend starts cfg's nodes on the backend called name in starts;
// empty means local.
func startBackend(ctx context.Context, starts map[string]startFunc, name string, cfg cluster.Config) (cluster.Backend, error) {
	start, ok := starts[Backend(name, "")]
	if !ok {
		return nil, fmt.Errorf("backend %q: want one of %v", name, spec.Backends)
	}
	return start(ctx, cfg)
}

// Backend is where a play's nodes run: the caller's choice (--backend,
// RunOptions.Backend, shrink's), else the scenario file's cluster.backend
// (or the recorded run's backend), else local. It is the name a run
// records.
func Backend(flag, file string) string {
	return cmp.Or(flag, file, spec.BackendLocal)
}
