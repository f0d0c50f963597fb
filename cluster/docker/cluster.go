// Package docker is the Docker backend of package cluster, beside
// package cluster/local: each node is a
// container of an image built on this machine from the host's server binary
// (redis-server; no registry needed), on a private bridge network made for
// the run, with faults injected through the engine — pause, kill, restart
// with the data lost, disconnect from the network — and the clock shim
// moving each node's wall clock.
//
// Everything made for a run is labelled with the run id and the identity of
// the harness process, so Close removes exactly the run's objects and Reap
// removes those of runs whose harness died, and nothing else.
package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"splitbrain/cluster"
)

// stateRoot is the folder under the cache dir that holds one folder per
// live run.
const stateRoot = "docker-runs"

// Cluster is a run's containers and their network: the Docker backend.
type Cluster struct {
	eng *Engine
	// ownEngine: Close closes eng too (Start connected it).
	ownEngine bool
	cfg       cluster.Config // resolved
	password  string
	image     Image
	labels    map[string]string // on every object of the run
	netID     string
	netName   string
	subnet    subnet
	gateway   netip.Addr // where the run's containers reach this host
	stateDir  string
	logDir    string
	nodes     []*Container

	extraMu sync.Mutex
	extra   []*Container // replicas and sentinels, added later
	// ipsTaken counts the network's addresses given to nodes so far,
	// reserved sentinels' included.
	ipsTaken int
	// images are the run's images by kind: the nodes' and, once a
	// sentinel is added, Sentinel's.
	images map[*cluster.Kind]Image

	closeMu sync.Mutex
	closed  bool
}

var _ interface {
	cluster.Backend
	cluster.ReplicaStarter
	cluster.SentinelStarter
} = (*Cluster)(nil)

// Start connects to the engine named by the environment and starts a
// cluster on it, as StartCluster does; the cluster's Close lets go of the
// engine. What it reaped and the image it runs go to cfg.Logf.
func Start(ctx context.Context, cfg cluster.Config) (_ *Cluster, err error) {
	eng, err := Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("backend docker: %w", err)
	}
	c, err := StartCluster(ctx, eng, cfg)
	if err != nil {
		_ = eng.Close()
		return nil, fmt.Errorf("backend docker: %w", err)
	}
	c.ownEngine = true
	return c, nil
}

// StartCluster reaps leftovers of dead harnesses, builds the image if its
// inputs changed, creates the run's network and starts the nodes. On error
// nothing of the run is left behind.
func StartCluster(ctx context.Context, eng *Engine, cfg cluster.Config) (_ *Cluster, err error) {
	if cfg, err = cfg.Resolve(); err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	self, err := currentOwner()
	if err != nil {
		return nil, err
	}
	reaped, err := eng.Reap(ctx, cfg.CacheDir)
	for _, line := range reaped {
		cfg.Logf("docker: removed the leftovers of %s", line)
	}
	if err != nil {
		return nil, fmt.Errorf("docker: reaping leftovers: %w", err)
	}
	img, err := eng.BuildImage(ctx, ImageConfig{Kind: cfg.Kind, Binary: cfg.Binary, CacheDir: cfg.CacheDir})
	if err != nil {
		return nil, err
	}
	stateDir := filepath.Join(cfg.CacheDir, stateRoot, cfg.RunID)
	if err := writeStateDir(stateDir, self); err != nil {
		return nil, err
	}
	labels := map[string]string{labelApp: "1", labelRun: cfg.RunID}
	for k, v := range self.labels() {
		labels[k] = v
	}
	c := &Cluster{
		eng:      eng,
		cfg:      cfg,
		password: cluster.RandomHex(16),
		image:    img,
		images:   map[*cluster.Kind]Image{cfg.Kind: img},
		labels:   labels,
		netName:  "splitbrain-" + cfg.RunID,
		stateDir: stateDir,
		logDir:   filepath.Join(cfg.Dir, "logs"),
	}
	defer func() {
		if err != nil {
			_ = c.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	sn, err := c.createNetwork(ctx)
	if err != nil {
		return nil, err
	}
	c.subnet = sn
	if c.gateway, err = netip.ParseAddr(sn.Gateway); err != nil {
		return nil, fmt.Errorf("docker: network gateway %q: %w", sn.Gateway, err)
	}
	ips, err := c.takeIPs(cfg.Nodes)
	if err != nil {
		return nil, err
	}
	members, routes, err := ensemble(cfg, ips)
	if err != nil {
		return nil, err
	}
	for i, ip := range ips {
		name := cluster.NodeName(i + 1)
		ns := nodeSpec{name: name, ip: ip, kind: cfg.Kind, image: img, persist: cfg.PersistenceOf(name)}
		if members != nil {
			ns.member, ns.ensemble = &members[i], members
		}
		n, err := c.newContainer(ctx, ns)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		if err := n.SetRoutes(routes[name]); err != nil {
			return nil, err
		}
	}
	if err := inParallel(c.nodes, func(n *Container) error { return n.Start(ctx) }); err != nil {
		return nil, err
	}
	if k := cfg.Kind; k.Secure != nil {
		var addrs []string
		for _, n := range c.nodes {
			addrs = append(addrs, n.Addr())
		}
		if err := k.Secure(ctx, addrs, c.password); err != nil {
			return nil, fmt.Errorf("docker: %s: turning on access control: %w", k.Name, err)
		}
	}
	cfg.Logf("docker: run %s, image %s", cfg.RunID, img.Tag)
	return c, nil
}

// ensemble places the members of an ensemble (nil for a kind without
// peers) at their containers' addresses, every member on the kind's ports
// (its client port, then the next ones for its peers), and asks
// cfg.PeerRoutes for their routes.
func ensemble(cfg cluster.Config, ips []string) ([]cluster.Member, map[string]map[string]string, error) {
	k := cfg.Kind
	if k.PeerPorts == 0 {
		return nil, nil, nil
	}
	members := make([]cluster.Member, len(ips))
	for i, ip := range ips {
		m := cluster.Member{Name: cluster.NodeName(i + 1), ID: i + 1, Host: ip, Port: k.Port}
		for j := range k.PeerPorts {
			m.PeerPorts = append(m.PeerPorts, k.Port+1+j)
		}
		members[i] = m
	}
	if cfg.PeerRoutes == nil {
		return members, nil, nil
	}
	routes, err := cfg.PeerRoutes(members)
	if err != nil {
		return nil, nil, fmt.Errorf("docker: routes between the %s members: %w", k.Name, err)
	}
	return members, routes, nil
}

// takeIPs gives count more addresses of the run's network to nodes.
func (c *Cluster) takeIPs(count int) ([]string, error) {
	c.extraMu.Lock()
	defer c.extraMu.Unlock()
	ips, err := nodeIPs(c.subnet, c.ipsTaken+count)
	if err != nil {
		return nil, err
	}
	c.ipsTaken += count
	return ips[len(ips)-count:], nil
}

// imageOf is the run's image of kind k, built the first time it is asked
// for (Sentinel's, from the redis-sentinel in PATH).
func (c *Cluster) imageOf(ctx context.Context, k *cluster.Kind) (Image, error) {
	c.extraMu.Lock()
	img, ok := c.images[k]
	c.extraMu.Unlock()
	if ok {
		return img, nil
	}
	img, err := c.eng.BuildImage(ctx, ImageConfig{Kind: k, CacheDir: c.cfg.CacheDir})
	if err != nil {
		return Image{}, err
	}
	c.extraMu.Lock()
	c.images[k] = img
	c.extraMu.Unlock()
	c.cfg.Logf("docker: run %s, image %s", c.cfg.RunID, img.Tag)
	return img, nil
}

// writeStateDir creates the run's host-side folder with its owner first,
// so a reaper never mistakes a run being set up for a dead one.
func writeStateDir(dir string, self owner) error {
	// Private: the nodes' configs hold the run's password.
	if err := cluster.PrivateDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("docker: run %s exists already (%s); pick another RunID", filepath.Base(dir), dir)
		}
		return fmt.Errorf("docker: %w", err)
	}
	b, err := json.Marshal(self)
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.json"), b, 0o600); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}

// createNetwork makes the run's bridge network. It is internal: no route
// to the outside and nothing published, yet the harness reaches the nodes
// through the bridge's gateway address on this host. Its subnet is set
// explicitly (the engine's pick, taken from a probe network) because only
// then may a node rejoin under its old address after an isolation.
func (c *Cluster) createNetwork(ctx context.Context) (subnet, error) {
	var lastErr error
	for range 5 {
		probe, err := c.eng.createNetwork(ctx, c.netName+"-probe", true, subnet{}, c.labels)
		if err != nil {
			return subnet{}, err
		}
		sn, err := c.eng.networkSubnet(ctx, probe)
		if rerr := c.eng.removeNetwork(ctx, probe); err == nil {
			err = rerr
		}
		if err != nil {
			return subnet{}, err
		}
		// Another process may take the subnet between the probe's removal
		// and this create; then the engine refuses it and we probe again.
		id, err := c.eng.createNetwork(ctx, c.netName, true, sn, c.labels)
		if err == nil {
			c.netID = id
			return sn, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return subnet{}, lastErr
}

// nodeIPs picks n addresses of the subnet for the nodes, skipping the
// gateway.
func nodeIPs(sn subnet, n int) ([]string, error) {
	prefix, err := netip.ParsePrefix(sn.Subnet)
	if err != nil {
		return nil, fmt.Errorf("docker: network subnet %q: %w", sn.Subnet, err)
	}
	gw, err := netip.ParseAddr(sn.Gateway)
	if err != nil {
		return nil, fmt.Errorf("docker: network gateway %q: %w", sn.Gateway, err)
	}
	prefix = prefix.Masked()
	var ips []string
	for a := prefix.Addr().Next(); len(ips) < n; a = a.Next() {
		// The last address is the broadcast address.
		if !prefix.Contains(a) || !prefix.Contains(a.Next()) {
			return nil, fmt.Errorf("docker: subnet %s has room for %d nodes, want %d", sn.Subnet, len(ips), n)
		}
		if a != gw {
			ips = append(ips, a.String())
		}
	}
	return ips, nil
}

// Nodes returns the lock's nodes, n1..nN, in name order; replicas are not
// among them.
func (c *Cluster) Nodes() []cluster.Node { return cluster.AsNodes(c.nodes) }

// Node returns the node called name, replicas included.
func (c *Cluster) Node(name string) (cluster.Node, bool) {
	return cluster.FindNode(cluster.AsNodes(c.all()), name)
}

// All returns every node: n1..nN, then the replicas in the order added.
func (c *Cluster) All() []cluster.Node { return cluster.AsNodes(c.all()) }

// Containers are the lock's nodes, n1..nN, as containers.
func (c *Cluster) Containers() []*Container { return c.nodes }

// Container returns the container of node name, replicas included.
func (c *Cluster) Container(name string) (*Container, bool) { return cluster.FindNode(c.all(), name) }

func (c *Cluster) all() []*Container {
	c.extraMu.Lock()
	defer c.extraMu.Unlock()
	return append(append([]*Container(nil), c.nodes...), c.extra...)
}

// Password is the run's password, required by every node.
func (c *Cluster) Password() string { return c.password }

// StateDir is the run's private host-side folder (mode 0700, outside the
// run's folder): the nodes' configs and clock offset files, bind-mounted
// read-only into their containers.
func (c *Cluster) StateDir() string { return c.stateDir }

// RunID names the run's objects; they carry it in the label splitbrain.run.
func (c *Cluster) RunID() string { return c.cfg.RunID }

// Image is the image the nodes run.
func (c *Cluster) Image() Image { return c.image }

// Close writes the nodes' logs to the run's folder and removes every
// container, volume and network of the run, whatever state the nodes are
// in (paused, isolated, stopped), and the run's host-side files; it lets go
// of the engine if Start connected it. After a
// Ctrl-C, call it with a fresh context, not the cancelled one of the run.
// When it fails (its context ended, the engine went away) it can be called
// again and does what is left, unless Start connected the engine, which
// the first call lets go of; once it has succeeded, further calls do
// nothing. What it never manages to remove is reaped at the next start,
// once this process has exited.
func (c *Cluster) Close(ctx context.Context) error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil
	}
	if c.ownEngine {
		// Whatever this attempt leaves is reaped at the next start.
		defer func() {
			c.closed = true
			_ = c.eng.Close()
		}()
	}
	err := inParallel(c.all(), func(n *Container) error { return n.close(ctx) })
	// By label rather than by the ids we hold: this also catches what a
	// failed start created before its error.
	if err := errors.Join(err, c.eng.removeRun(ctx, c.cfg.RunID)); err != nil {
		// Keep the host-side files: the containers may still map them.
		return fmt.Errorf("docker: closing run %s: %w", c.cfg.RunID, err)
	}
	if err := os.RemoveAll(c.stateDir); err != nil {
		return fmt.Errorf("docker: closing run %s: %w", c.cfg.RunID, err)
	}
	c.closed = true
	return nil
}

// RunObjects lists what the engine holds of a run, by label: containers,
// volumes and networks, each as "kind name". Tests and doctor use it to
// check that nothing is left.
func (e *Engine) RunObjects(ctx context.Context, runID string) ([]string, error) {
	sel := map[string]string{labelRun: runID}
	var out []string
	ctrs, err := e.listContainers(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range ctrs {
		out = append(out, "container "+strings.TrimPrefix(o.Name, "/"))
	}
	vols, err := e.listVolumes(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range vols {
		out = append(out, "volume "+o.Name)
	}
	nets, err := e.listNetworks(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range nets {
		out = append(out, "network "+o.Name)
	}
	return out, nil
}

// RemoveRun removes what the engine holds of a run, as Close does, for a
// test that found a run's leftovers: an error that is only a
// *StaleNetworkError (see errors.As) is the engine's bug, not the run's.
func (e *Engine) RemoveRun(ctx context.Context, runID string) error {
	if err := e.removeRun(ctx, runID); err != nil {
		if stale := staleOnly(err); stale != nil {
			return stale
		}
		return err
	}
	return nil
}

// removeRun removes every container, then volume, then network labelled
// with the run id: containers first because they hold the others.
func (e *Engine) removeRun(ctx context.Context, runID string) error {
	sel := map[string]string{labelRun: runID}
	ctrs, err := e.listContainers(ctx, sel)
	if err != nil {
		return err
	}
	errs := []error{inParallel(ctrs, func(o objectInfo) error { return e.removeContainer(ctx, o.ID) })}
	vols, err := e.listVolumes(ctx, sel)
	errs = append(errs, err)
	for _, o := range vols {
		errs = append(errs, e.removeVolume(ctx, o.Name))
	}
	nets, err := e.listNetworks(ctx, sel)
	errs = append(errs, err)
	for _, o := range nets {
		errs = append(errs, e.removeNetwork(ctx, o.ID))
	}
	return errors.Join(errs...)
}

// inParallel runs fn on every item at once and joins the errors.
func inParallel[T any](items []T, fn func(T) error) error {
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Go(func() { errs[i] = fn(it) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
