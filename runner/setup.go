package runner

import (
	"context"

	"splitbrain/cluster"
	"splitbrain/nemesis"
	"splitbrain/workload"
)

// setUp starts, in order, what a run plays on: the backend's nodes (the
// consensus ensemble's peer links first, setup_consensus.go), the storage,
// the proxies (setup_links.go), the nemesis and the fault rig with the
// replicas and Sentinel (setup_faults.go, setup_sentinel.go), and a client
// per name over the lock under test (setup_locks.go, setup_drivers.go).
func (r *runner) setUp(ctx context.Context, dir, cacheDir, backend string) error {
	sc := r.sc
	r.runDir, r.cacheDir = dir, cacheDir
	persist := map[string]cluster.Persistence{}
	for node, mode := range sc.Persistence {
		persist[node] = cluster.Persistence(mode)
	}
	cfg := cluster.Config{
		Nodes: sc.Nodes, NodePersistence: persist, Dir: dir, CacheDir: cacheDir, Logf: r.logf,
	}
	if err := r.consensusConfig(&cfg); err != nil {
		return err
	}
	cl, err := startBackend(ctx, backends, backend, cfg)
	if err != nil {
		return err
	}
	r.cluster = cl
	var eps []nemesis.Endpoint
	for _, n := range cl.Nodes() {
		eps = append(eps, nemesis.Endpoint{Name: n.Name(), Addr: n.Addr(), Kind: n.Kind()})
	}
	server := "redis-server"
	if cfg.Kind != nil {
		server = cfg.Kind.Name
	}
	r.logf("started %d %s nodes (%s): %s", len(eps), server, backend, r.nodeList())
	storage, err := r.startStorage(ctx, dir, cacheDir)
	if err != nil {
		return err
	}
	links := eps
	if storage != nil {
		links = append(append([]nemesis.Endpoint(nil), eps...), *storage)
	}
	if r.net != nil {
		// Made before the nodes, for the links between them.
		err = r.addClientLinks(links)
	} else {
		r.net, err = newNet(sc)(sc.Clients, links)
	}
	if err != nil {
		return err
	}
	if r.net.Direct() {
		r.logf("no fault of this story touches a link: everyone dials the nodes directly, without proxies")
	}
	r.nem = nemesis.New(r.rec)
	if err := r.setUpFaults(ctx); err != nil {
		return err
	}
	r.clients = map[string]*workload.Client{}
	for _, name := range sc.Clients {
		lock, err := r.newLock(name, eps, cl.Password())
		if err != nil {
			return err
		}
		r.clients[name] = workload.NewClient(name, lock, r.rec)
	}
	return r.connectStorage()
}
