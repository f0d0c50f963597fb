package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/internal/private"
)

const (
	// readyTimeout bounds a node's start; containers start slower than
	// processes, more so on a loaded machine.
	readyTimeout = 30 * time.Second
	// defaultStopTimeout is how long a graceful stop waits before SIGKILL
	// when the caller's context has no deadline.
	defaultStopTimeout = 10 * time.Second
	// cleanupTimeout bounds the SIGKILL that follows a graceful stop cut
	// short by its context.
	cleanupTimeout = 10 * time.Second
)

// Container is a node of the Docker backend: one server in a container.
type Container struct {
	*cluster.NodeBase
	cluster  *Cluster
	addr     string // ip:port, fixed for the node's life
	ip       string
	stateDir string // bind-mounted read-only at imageStateDir
	logPath  string
	spec     containerSpec
	persist  cluster.Persistence

	// dataDir is the host folder mounted as the data folder (spec.DataBind),
	// empty when the data folder is a tmpfs or a volume.
	dataDir string
	// member and ensemble place an ensemble's member among its peers;
	// sentinel is what a sentinel watches. Nil for the other kinds.
	member   *cluster.Member
	ensemble []cluster.Member
	sentinel *cluster.SentinelConfig

	mu       sync.Mutex
	id       string // the container; amnesia with a volume replaces it
	isolated bool
	closed   bool // log saved, connection and clock file released
	// relay carries the replication link to a follow address on this
	// host, which the container cannot reach itself; nil until needed.
	relay *relay
	// routeRelays carry the links SetRoutes sends through proxies on
	// this host, by proxy address.
	routeRelays map[string]*relay
}

var _ interface {
	cluster.Node
	cluster.Killer
	cluster.Stopper
	cluster.Pauser
	cluster.Wiper
	cluster.Clock
	cluster.Replica
	cluster.Isolator
} = (*Container)(nil)

// nodeSpec is a container to make: its name, address and kind, and what
// its kind's config needs.
type nodeSpec struct {
	name     string
	ip       string
	kind     *cluster.Kind
	image    Image
	persist  cluster.Persistence
	member   *cluster.Member
	ensemble []cluster.Member
	sentinel *cluster.SentinelConfig
}

// hostData says whether a kind's data folder is a host folder the harness
// writes to (an ensemble's myid, Sentinel's config file, which Sentinel
// rewrites) and whose content must outlive a kill: an ensemble's member
// rejoins with its log.
func hostData(k *cluster.Kind) bool { return k.PeerPorts > 0 || k == cluster.Sentinel }

func (c *Cluster) newContainer(ctx context.Context, ns nodeSpec) (*Container, error) {
	k, name, ip, persist := ns.kind, ns.name, ns.ip, ns.persist
	dir := filepath.Join(c.stateDir, name)
	// Private to the harness's user: the container's root reads them with
	// CAP_DAC_OVERRIDE.
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("docker: node %s: %w", name, err)
	}
	clock, err := cluster.NewClockFile(filepath.Join(dir, "clock"))
	if err != nil {
		return nil, fmt.Errorf("docker: node %s: %w", name, err)
	}
	addr := net.JoinHostPort(ip, strconv.Itoa(k.Port))
	n := &Container{
		NodeBase: cluster.NewNodeBase(name, k, c.password, k.Dial(addr, c.password), clock),
		cluster:  c,
		addr:     addr,
		ip:       ip,
		stateDir: dir,
		logPath:  filepath.Join(c.logDir, name+".log"),
		persist:  persist,
		member:   ns.member,
		ensemble: ns.ensemble,
		sentinel: ns.sentinel,
	}
	if hostData(k) {
		n.dataDir = filepath.Join(dir, "data")
		if err := os.Mkdir(n.dataDir, 0o700); err != nil {
			_ = n.Release()
			return nil, fmt.Errorf("docker: node %s: %w", name, err)
		}
	}
	if err := n.writeConfig(""); err != nil {
		_ = n.Release()
		return nil, err
	}
	labels := map[string]string{labelNode: name}
	for k, v := range c.labels {
		labels[k] = v
	}
	n.spec = containerSpec{
		Name:  c.netName + "-" + name,
		Image: ns.image.Tag,
		Cmd:   append([]string{ns.image.Binary}, k.Args(n.configPath())...),
		Env: []string{
			"LD_PRELOAD=" + imageShim,
			cluster.ClockEnv + "=" + imageStateDir + "/clock",
			cluster.RouteEnv + "=" + imageStateDir + "/routes",
		},
		Labels:   labels,
		Network:  c.netName,
		IP:       ip,
		Binds:    []bindMount{{Source: dir, Target: imageStateDir}},
		DataPath: imageDataDir,
	}
	switch {
	case n.dataDir != "":
		n.spec.DataBind = n.dataDir
		n.spec.User = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	case persist == cluster.PersistNone:
		n.spec.DataTmpfs = imageDataDir
	default:
		n.spec.DataVolume = n.spec.Name + "-data"
	}
	if err := n.create(ctx); err != nil {
		_ = n.Release()
		return nil, err
	}
	return n, nil
}

// create makes the node's container (and its data volume, if any).
func (n *Container) create(ctx context.Context) error {
	e := n.cluster.eng
	if n.spec.DataVolume != "" {
		if err := e.createVolume(ctx, n.spec.DataVolume, n.spec.Labels); err != nil {
			return fmt.Errorf("node %s: %w", n.Name(), err)
		}
	}
	id, err := e.createContainer(ctx, n.spec)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	n.id = id
	return nil
}

// writeConfig writes the node's config file, which its next start reads:
// the settings of the local backend's nodes, adapted to a container (all
// interfaces of its own network namespace, a fixed port, the log on stdout
// for the engine to keep). replicaOf is the master's address as the
// container reaches it, empty for a master.
func (n *Container) writeConfig(replicaOf string) error {
	k := n.Kind()
	conf := k.Config(n.serverConfig(replicaOf))
	dir := n.stateDir
	if k == cluster.Sentinel {
		// Sentinel rewrites its config file and refuses to start when it
		// cannot: it goes in the writable data folder.
		dir = n.dataDir
	}
	if err := os.WriteFile(filepath.Join(dir, k.ConfigFile), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("docker: node %s: %w", n.Name(), err)
	}
	if k.Secrets != nil {
		for name, body := range k.Secrets(n.serverConfig(replicaOf)) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				return fmt.Errorf("docker: node %s: %w", n.Name(), err)
			}
		}
	}
	return nil
}

// configPath is the node's config file inside its container.
func (n *Container) configPath() string {
	k := n.Kind()
	if k == cluster.Sentinel {
		return imageDataDir + "/" + k.ConfigFile
	}
	return imageStateDir + "/" + k.ConfigFile
}

func (n *Container) serverConfig(replicaOf string) cluster.ServerConfig {
	k := n.Kind()
	return cluster.ServerConfig{
		Port: k.Port, Bind: "0.0.0.0", Password: n.cluster.password, DataDir: imageDataDir,
		Persistence: n.persist, ReplicaOf: replicaOf, Debug: n.cluster.cfg.Debug,
		// The links a container dials through a relay reach their server
		// from the network's gateway: Redis and Sentinel would tell that
		// address around as this node's.
		AnnounceIP: n.ip,
		Sentinel:   n.sentinel, Member: n.member, Ensemble: n.ensemble,
	}
}

// writeFiles writes what the kind needs in the data folder at every start
// (ZooKeeper's myid), again after a wipe.
func (n *Container) writeFiles() error {
	k := n.Kind()
	if k.Files == nil || n.dataDir == "" {
		return nil
	}
	files, err := k.Files(n.serverConfig(""))
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(n.dataDir, name), []byte(body), 0o600); err != nil {
			return fmt.Errorf("node %s: %w", n.Name(), err)
		}
	}
	return nil
}

// wipeDataDirLocked empties the host data folder of a stopped node,
// keeping its config (Sentinel's is there).
func (n *Container) wipeDataDirLocked() error {
	entries, err := os.ReadDir(n.dataDir)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == n.Kind().ConfigFile && n.Kind() == cluster.Sentinel {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(n.dataDir, e.Name())))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	return nil
}

// Persistence is the node's persistence mode.
func (n *Container) Persistence() cluster.Persistence { return n.persist }

// Addr is the node's address on the run's network, which the harness
// reaches directly (it does not change across restarts and isolations).
func (n *Container) Addr() string { return n.addr }

// LogPath is where the node's log is written when the cluster closes.
func (n *Container) LogPath() string { return n.logPath }

// ContainerID is the node's current container (an amnesia restart with a
// data volume replaces it).
func (n *Container) ContainerID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.id
}

// NodeState is what the engine says of a node, and whether it is isolated.
type NodeState struct {
	Running  bool // the container runs (paused included)
	Paused   bool
	Isolated bool
	Status   string // the engine's word: created, running, paused, exited, ...
}

// State asks the engine about the node.
func (n *Container) State(ctx context.Context) (NodeState, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st, err := n.cluster.eng.containerState(ctx, n.id)
	if err != nil {
		return NodeState{}, fmt.Errorf("node %s: %w", n.Name(), err)
	}
	return NodeState{Running: st.Running, Paused: st.Paused, Isolated: n.isolated, Status: st.Status}, nil
}

// Start starts the node's container and waits until Redis is ready: until
// it answers an authenticated PING, or, while the node is isolated and
// cannot be reached, until it logs that it accepts connections.
func (n *Container) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startLocked(ctx)
}

func (n *Container) startLocked(ctx context.Context) error {
	e := n.cluster.eng
	st, err := e.containerState(ctx, n.id)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	if st.Running {
		return fmt.Errorf("node %s: already running", n.Name())
	}
	if n.Kind() == cluster.Sentinel {
		// A restarted sentinel starts from the master it was given, as
		// the local backend's does, not from what it rewrote.
		if err := n.writeConfig(""); err != nil {
			return err
		}
	}
	if err := n.writeFiles(); err != nil {
		return err
	}
	since := time.Now()
	if err := e.startContainer(ctx, n.id); err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	if err := n.waitReady(ctx, since); err != nil {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		logs, _ := e.containerLogs(kctx, n.id, "40", time.Time{})
		_ = e.killContainer(kctx, n.id)
		return fmt.Errorf("node %s: %w\n%s", n.Name(), err, strings.TrimSpace(string(logs)))
	}
	return nil
}

func (n *Container) waitReady(ctx context.Context, since time.Time) error {
	e := n.cluster.eng
	ctx, cancel := context.WithTimeout(ctx, max(readyTimeout, n.Kind().ReadyTimeout))
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for i := 0; ; i++ {
		if n.isolated {
			logs, err := e.containerLogs(ctx, n.id, "all", since)
			if err == nil && bytes.Contains(logs, []byte(n.Kind().ReadyLine)) {
				return nil
			}
			last = errors.New("not ready yet (isolated: waiting for its log line)")
		} else {
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, last = n.Conn().Probe(pctx)
			pcancel()
			if last == nil {
				return nil
			}
		}
		// A container that exited at start never gets ready; say so now.
		if i%10 == 9 {
			if st, err := e.containerState(ctx, n.id); err == nil && !st.Running {
				return fmt.Errorf("%s exited at start (status %s, exit code %d)", n.Kind().Binary, st.Status, st.ExitCode)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last error: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// Stop shuts the node down with SIGTERM (resuming it first if paused) and
// waits; when ctx ends first, or its deadline is near, the node is killed.
// Stopping a stopped node is a no-op.
func (n *Container) Stop(ctx context.Context) error {
	if err := n.Refuse(fault.Stop); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopLocked(ctx)
}

func (n *Container) stopLocked(ctx context.Context) error {
	e := n.cluster.eng
	st, err := e.containerState(ctx, n.id)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	if !st.Running {
		return nil
	}
	if st.Paused {
		// A frozen process would never act on the SIGTERM.
		if err := e.unpauseContainer(ctx, n.id); err != nil {
			return fmt.Errorf("node %s: %w", n.Name(), err)
		}
	}
	grace := defaultStopTimeout
	if dl, ok := ctx.Deadline(); ok {
		grace = time.Until(dl) - time.Second // leave time for the engine's answer
	}
	secs := max(int(grace/time.Second), 1)
	err = e.stopContainer(ctx, n.id, secs)
	if err == nil {
		return nil
	}
	if ctx.Err() == nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if kerr := e.killContainer(kctx, n.id); kerr != nil {
		return fmt.Errorf("node %s: %w", n.Name(), kerr)
	}
	return fmt.Errorf("node %s: graceful stop cut short, killed: %w", n.Name(), ctx.Err())
}

// Kill sends SIGKILL through the engine and waits until the container has
// stopped. Killing a stopped node is a no-op.
func (n *Container) Kill(ctx context.Context) error {
	if err := n.Refuse(fault.Kill); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.cluster.eng.killContainer(ctx, n.id); err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	return nil
}

// RestartOptions say how a node goes down and comes back.
type RestartOptions struct {
	// Graceful stops with SIGTERM (Redis writes its AOF and exits);
	// otherwise the node is killed with SIGKILL.
	Graceful bool
	// Delay is how long the node stays down (the Redlock page's "delayed
	// restart" longer than the maximum TTL).
	Delay time.Duration
	// Amnesia brings the node back with its data folder empty, as after a
	// crash that lost what was not fsynced. Without persistence every
	// restart is one: the tmpfs is wiped at each stop.
	Amnesia bool
}

// Restart takes the node down, waits opts.Delay (other operations on the
// node may run meanwhile) and starts it again.
func (n *Container) Restart(ctx context.Context, opts RestartOptions) error {
	down := fault.Kill
	if opts.Graceful {
		down = fault.Stop
	}
	if err := n.Refuse(down); err != nil {
		return err
	}
	if opts.Amnesia {
		if err := n.Refuse(fault.Wipe); err != nil {
			return err
		}
	}
	n.mu.Lock()
	var err error
	if opts.Graceful {
		err = n.stopLocked(ctx)
	} else {
		err = n.cluster.eng.killContainer(ctx, n.id)
	}
	n.mu.Unlock()
	if err != nil {
		return fmt.Errorf("node %s: restart: %w", n.Name(), err)
	}
	if opts.Delay > 0 {
		t := time.NewTimer(opts.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("node %s: restart: left down, the delay was cut short: %w", n.Name(), ctx.Err())
		case <-t.C:
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if opts.Amnesia && n.spec.DataVolume != "" {
		if err := n.recreateLocked(ctx); err != nil {
			return fmt.Errorf("node %s: amnesia: %w", n.Name(), err)
		}
	}
	if opts.Amnesia && n.dataDir != "" {
		if err := n.wipeDataDirLocked(); err != nil {
			return fmt.Errorf("node %s: amnesia: %w", n.Name(), err)
		}
	}
	return n.startLocked(ctx)
}

// recreateLocked replaces the stopped container and its data volume with
// fresh ones, same name, address and config: the only way to empty a
// volume without a shell in the image. The old container's log is kept.
func (n *Container) recreateLocked(ctx context.Context) error {
	e := n.cluster.eng
	if err := n.saveLogLocked(ctx); err != nil {
		return err
	}
	if err := e.removeContainer(ctx, n.id); err != nil {
		return err
	}
	if err := e.removeVolume(ctx, n.spec.DataVolume); err != nil {
		return err
	}
	if err := n.create(ctx); err != nil {
		return err
	}
	if n.isolated {
		// Created on the network; keep it isolated as it was.
		return e.disconnectNetwork(ctx, n.cluster.netID, n.id)
	}
	return nil
}

// Pause freezes the node's processes (the cgroup freezer): the kernel still
// completes TCP handshakes, so clients see timeouts, not refusals. Pausing
// a paused node is a no-op.
func (n *Container) Pause(ctx context.Context) error {
	if err := n.Refuse(fault.Pause); err != nil {
		return err
	}
	return n.setPaused(ctx, true)
}

// Resume thaws a paused node. Resuming a node that is not paused is a no-op.
func (n *Container) Resume(ctx context.Context) error {
	return n.setPaused(ctx, false)
}

func (n *Container) setPaused(ctx context.Context, pause bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := n.cluster.eng
	st, err := e.containerState(ctx, n.id)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	switch {
	case st.Paused == pause:
		return nil
	case pause && !st.Running:
		return fmt.Errorf("node %s: cannot pause, it is %s", n.Name(), st.Status)
	case pause:
		err = e.pauseContainer(ctx, n.id)
	default:
		err = e.unpauseContainer(ctx, n.id)
	}
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	return nil
}

// Isolate disconnects the node from the run's network: nobody, the
// harness included, reaches it until Rejoin; packets in flight are lost
// and open connections hang. Isolating an isolated node is a no-op.
func (n *Container) Isolate(ctx context.Context) error {
	if err := n.Refuse(fault.Disconnect); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.isolated {
		return nil
	}
	if err := n.cluster.eng.disconnectNetwork(ctx, n.cluster.netID, n.id); err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	n.isolated = true
	return nil
}

// Rejoin connects an isolated node back under its old address. Rejoining
// a node that is not isolated is a no-op.
func (n *Container) Rejoin(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.isolated {
		return nil
	}
	if err := n.cluster.eng.connectNetwork(ctx, n.cluster.netID, n.id, n.ip); err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	n.isolated = false
	return nil
}

// saveLogLocked appends the container's log to the node's log file.
func (n *Container) saveLogLocked(ctx context.Context) error {
	logs, err := n.cluster.eng.containerLogs(ctx, n.id, "all", time.Time{})
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	f, err := private.Append(n.logPath)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	_, werr := f.Write(logs)
	return errors.Join(werr, f.Close())
}

// close saves the node's log and releases what the harness holds; the
// container itself goes with the rest of the run. After a success it does
// nothing, so a Close that failed elsewhere can be retried.
func (n *Container) close(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	// A container removed behind our back has no log left to save.
	if err := n.saveLogLocked(ctx); err != nil && !errors.Is(err, errNoContainer) {
		return err
	}
	n.closed = true
	var rerr error
	if n.relay != nil {
		rerr = n.relay.Close()
	}
	for _, r := range n.routeRelays {
		rerr = errors.Join(rerr, r.Close())
	}
	return errors.Join(n.Release(), rerr)
}
