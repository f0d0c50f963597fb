// Package local is the local backend of package cluster, beside
// package cluster/docker: each node is a child process of the harness on
// loopback, with the run's password, a private state folder in the
// live-run registry and a wall clock the nemesis can move through the
// clock shim.
package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/internal/private"
)

// Cluster is the local backend: each node is a child process of the harness
// on loopback, in its own process group, dying with the harness.
type Cluster struct {
	cfg      cluster.Config // resolved
	password string
	shim     string
	live     *cluster.LiveRun // also the run's private state folder
	archive  *classArchive    // the JVM's classes, for a kind with ClassArchive
	nodes    []*Process

	extraMu sync.Mutex
	extra   []*Process // added by AddNode
	closed  bool

	closeOnce sync.Once
	closeErr  error
}

var _ interface {
	cluster.Backend
	cluster.ReplicaStarter
	cluster.SentinelStarter
} = (*Cluster)(nil)

// Start reaps leftovers of crashed runs, builds the clock shim if
// needed and starts the nodes. On error nothing is left running.
func Start(ctx context.Context, cfg cluster.Config) (_ *Cluster, err error) {
	if cfg, err = cfg.Resolve(); err != nil {
		return nil, err
	}
	live, killed, err := cluster.RegisterLive(cfg.CacheDir, cfg.RunID)
	for _, line := range killed {
		cfg.Logf("local: killed the leftover %s", line)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	shim, err := cluster.BuildShim(ctx, cfg.CacheDir)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cluster: %w", err), live.Remove())
	}
	c := &Cluster{
		cfg:      cfg,
		password: cluster.RandomHex(16),
		shim:     shim,
		live:     live,
	}
	if cfg.Kind.ClassArchive {
		c.archive = newClassArchive(cfg.CacheDir, cfg.Binary, cfg.Kind, cfg.Logf)
	}
	defer func() {
		if err != nil {
			_ = c.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	// An ensemble's ports are reserved before its members start, so
	// another process can take one meanwhile (a connection's local port
	// on a busy machine): then the whole ensemble starts again on fresh
	// ports, since every member knows every other's.
	for try := 1; ; try++ {
		err := c.startNodes(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || cfg.Kind.PeerPorts == 0 || try == ensembleTries {
			return nil, err
		}
		cfg.Logf("local: a port of the %s ensemble was taken before its member bound it; starting it again on fresh ports: %v", cfg.Kind.Name, firstLineOf(err))
		if err := c.discardNodes(ctx); err != nil {
			return nil, err
		}
	}
	if k := cfg.Kind; k.Secure != nil {
		var addrs []string
		for _, n := range c.nodes {
			addrs = append(addrs, n.Addr())
		}
		if err := k.Secure(ctx, addrs, c.password); err != nil {
			return nil, fmt.Errorf("cluster: %s: turning on access control: %w", k.Name, err)
		}
	}
	return c, nil
}

// ensembleTries bounds the starts of an ensemble whose ports were taken.
const ensembleTries = 3

// startNodes makes the lock's nodes and starts them side by side.
func (c *Cluster) startNodes(ctx context.Context) error {
	cfg := c.cfg
	members, routes, err := reserveEnsemble(cfg)
	if err != nil {
		return err
	}
	for i := 1; i <= cfg.Nodes; i++ {
		name := cluster.NodeName(i)
		spec := NodeSpec{Name: name, Persistence: cfg.PersistenceOf(name), Routes: routes[name]}
		if members != nil {
			spec.Port = members[i-1].Port
		}
		n, err := c.newProcess(spec)
		if err != nil {
			return err
		}
		if members != nil {
			n.member, n.ensemble = &members[i-1], members
		}
		c.nodes = append(c.nodes, n)
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = n.Start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// discardNodes stops the lock's nodes and removes their state, for a
// start again from scratch.
func (c *Cluster) discardNodes(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.close(ctx), os.RemoveAll(n.stateDir))
	}
	c.nodes = nil
	return errors.Join(errs...)
}

func firstLineOf(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// reserveEnsemble reserves the ports of an ensemble's members (nil for a
// kind without peers) and asks cfg.PeerRoutes for their routes.
func reserveEnsemble(cfg cluster.Config) ([]cluster.Member, map[string]map[string]string, error) {
	k := cfg.Kind
	if k.PeerPorts == 0 {
		return nil, nil, nil
	}
	per := 1 + k.PeerPorts
	ports, err := reservePorts(cfg.Nodes * per)
	if err != nil {
		return nil, nil, err
	}
	members := make([]cluster.Member, cfg.Nodes)
	for i := range members {
		p := ports[i*per : (i+1)*per]
		members[i] = cluster.Member{Name: cluster.NodeName(i + 1), ID: i + 1, Port: p[0], PeerPorts: p[1:]}
	}
	if cfg.PeerRoutes == nil {
		return members, nil, nil
	}
	routes, err := cfg.PeerRoutes(members)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: routes between the %s members: %w", k.Name, err)
	}
	return members, routes, nil
}

func (c *Cluster) newProcess(spec NodeSpec) (*Process, error) {
	name := spec.Name
	state, err := c.live.NewDir(name)
	if err != nil {
		return nil, fmt.Errorf("cluster: node %s: %w", name, err)
	}
	data := filepath.Join(state, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: node %s: %w", name, err)
	}
	clock, err := cluster.NewClockFile(filepath.Join(state, "clock"))
	if err != nil {
		return nil, fmt.Errorf("cluster: node %s: %w", name, err)
	}
	kind, binary := c.cfg.Kind, c.cfg.Binary
	if spec.Kind != nil && spec.Kind != kind {
		// Another kind than the cluster's (a sentinel beside redis-server
		// nodes) runs its own program.
		kind = spec.Kind
		if binary, err = exec.LookPath(kind.Binary); err != nil {
			_ = clock.Close()
			if kind.NotFound != nil {
				return nil, kind.NotFound
			}
			return nil, fmt.Errorf("cluster: node %s: %s not found in PATH: %w", name, kind.Binary, err)
		}
	}
	n := &Process{
		NodeBase: cluster.NewNodeBase(name, kind, c.password, nil, clock),
		cluster:  c,
		binary:   binary,
		stateDir: state,
		dataDir:  data,
		logPath:  filepath.Join(c.cfg.Dir, "logs", name+".log"),
		persist:  spec.Persistence,
		port:     spec.Port,
		sentinel: spec.Sentinel,
	}
	n.SetReplicaOf(spec.ReplicaOf)
	if err := n.SetRoutes(spec.Routes); err != nil {
		_ = clock.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return n, nil
}

// Nodes returns the lock's nodes, n1..nN, in name order; nodes added with
// AddNode (replicas, storage) are not among them.
func (c *Cluster) Nodes() []cluster.Node { return cluster.AsNodes(c.nodes) }

// Node returns the node called name, added nodes included.
func (c *Cluster) Node(name string) (cluster.Node, bool) {
	return cluster.FindNode(cluster.AsNodes(c.all()), name)
}

// All returns every node: n1..nN, then the added ones in the order added.
func (c *Cluster) All() []cluster.Node { return cluster.AsNodes(c.all()) }

// Processes are the lock's nodes, n1..nN, as processes.
func (c *Cluster) Processes() []*Process { return c.nodes }

// Process returns the process of node name, added nodes included.
func (c *Cluster) Process(name string) (*Process, bool) { return cluster.FindNode(c.all(), name) }

func (c *Cluster) all() []*Process {
	c.extraMu.Lock()
	defer c.extraMu.Unlock()
	return append(append([]*Process(nil), c.nodes...), c.extra...)
}

// Password is the run's password, required by every node.
func (c *Cluster) Password() string { return c.password }

// StateDir is the run's private state folder (mode 0700, outside the run's
// folder): the nodes' configs, data and clock offset files.
func (c *Cluster) StateDir() string { return c.live.Dir() }

// Close stops every node (gracefully, then by SIGKILL when ctx ends), resets
// clocks and removes the run's private state with its registry entry. Logs
// stay. It is safe to call more than once.
func (c *Cluster) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		c.extraMu.Lock()
		c.closed = true
		c.extraMu.Unlock()
		all := c.all()
		errs := make([]error, len(all))
		var wg sync.WaitGroup
		for i, n := range all {
			wg.Go(func() { errs[i] = n.close(ctx) })
		}
		wg.Wait()
		c.archive.finish(ctx)
		errs = append(errs, c.live.Remove())
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// Process is a node of the local backend: a server child process.
type Process struct {
	*cluster.NodeBase
	cluster  *Cluster
	binary   string
	sentinel *cluster.SentinelConfig // what a sentinel watches; nil for others
	stateDir string                  // private: the config file, the data folder and the routes
	dataDir  string
	logPath  string

	mu       sync.Mutex
	port     int
	connAddr string // where the harness's connection dials
	proc     *process
	persist  cluster.Persistence
	paused   bool
	// member and ensemble place the node among its peers; nil for a
	// kind without peers.
	member   *cluster.Member
	ensemble []cluster.Member
}

var _ interface {
	cluster.Node
	cluster.Killer
	cluster.Stopper
	cluster.Pauser
	cluster.Wiper
	cluster.Clock
	cluster.Replica
} = (*Process)(nil)

type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, set before done closes
}

// Addr is the node's host:port on loopback.
func (n *Process) Addr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addrLocked()
}

func (n *Process) addrLocked() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port))
}

// LogPath is the node's log file.
func (n *Process) LogPath() string { return n.logPath }

// Running reports whether the node's process is alive.
func (n *Process) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.runningLocked()
}

func (n *Process) runningLocked() bool { return n.proc != nil && !n.proc.exited() }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start starts the node's process (again, on the same port after the first
// start) and waits until it answers an authenticated probe.
func (n *Process) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runningLocked() {
		return fmt.Errorf("node %s: already running (pid %d)", n.Name(), n.proc.cmd.Process.Pid)
	}
	fixedPort := n.port != 0
	const tries = 5
	var err error
	for i := range tries {
		if !fixedPort {
			if n.port, err = cluster.FreePort(); err != nil {
				return fmt.Errorf("node %s: %w", n.Name(), err)
			}
		}
		if err = n.spawn(ctx); err == nil {
			return nil
		}
		if !errors.Is(err, errPortTaken) {
			return err
		}
		// Someone took the port between our probe and the server's bind;
		// a fresh port fixes that. A fixed one (a restart) cannot move:
		// what took it while the node was down is most likely a
		// connection that picked it as its local port, gone soon.
		if fixedPort && i < tries-1 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(i+1) * 200 * time.Millisecond):
			}
		}
	}
	return err
}

var errPortTaken = errors.New("port taken")

func (n *Process) spawn(ctx context.Context) error {
	c := n.cluster
	k := n.Kind()
	conf := filepath.Join(n.stateDir, k.ConfigFile)
	if err := os.WriteFile(conf, []byte(n.config()), 0o600); err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	if k.Secrets != nil {
		for name, body := range k.Secrets(n.serverConfig()) {
			if err := os.WriteFile(filepath.Join(n.stateDir, name), []byte(body), 0o600); err != nil {
				return fmt.Errorf("node %s: %w", n.Name(), err)
			}
		}
	}
	logf, err := private.Append(n.logPath)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, 2)
	if k.Files != nil {
		files, err := k.Files(n.serverConfig())
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name(), err)
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(n.dataDir, name), []byte(body), 0o600); err != nil {
				return fmt.Errorf("node %s: %w", n.Name(), err)
			}
		}
	}

	var args []string
	dumps := false
	if k == c.cfg.Kind {
		args, dumps = c.archive.args()
	}
	cmd := exec.Command(n.binary, append(args, k.Args(conf)...)...)
	cmd.Dir = n.dataDir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(c.live.MarkedEnv(os.Environ(), "LD_PRELOAD", cluster.ClockEnv, cluster.RouteEnv, cluster.SyncEnv),
		"LD_PRELOAD="+c.shim,
		cluster.ClockEnv+"="+n.ClockPath(),
		cluster.RouteEnv+"="+n.routeFile())
	if k.Refuse(n.Name(), fault.Power) == nil {
		if err := cluster.ResetSyncLog(n.syncLog(), n.dataDir); err != nil {
			return fmt.Errorf("node %s: %w", n.Name(), err)
		}
		cmd.Env = append(cmd.Env, cluster.SyncEnv+"="+n.syncLog())
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C in the terminal reaches the harness
		// only, which then stops the nodes in order and writes the report.
		Setpgid: true,
		// If the harness dies without cleaning up, take the node with it.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("node %s: starting %s: %w", n.Name(), n.binary, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	if dumps {
		c.archive.started(p)
	}
	n.paused = false
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	n.proc = p
	if err := c.live.AddPID(n.Name(), cmd.Process.Pid); err != nil {
		_ = n.killLocked(context.WithoutCancel(ctx))
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	if n.connAddr != n.addrLocked() {
		n.SetConn(k.Dial(n.addrLocked(), c.password))
		n.connAddr = n.addrLocked()
	}
	if err := n.waitReady(ctx, p); err != nil {
		_ = n.killLocked(context.WithoutCancel(ctx))
		logged := logSince(n.logPath, logStart)
		// Redis and Java say "Address already in use", Go "address
		// already in use". The whole log since the start is searched,
		// not its tail: ZooKeeper retries its election port and gives up
		// seconds later, its BindException by then far above the
		// harness's readiness probes ("srvr") in its log (CI: exit 14,
		// never retried).
		if strings.Contains(strings.ToLower(logged), "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return fmt.Errorf("node %s: %w\n%s", n.Name(), err, lastBytes(logged, 2000))
	}
	return nil
}

func (n *Process) waitReady(ctx context.Context, p *process) error {
	timeout := n.Kind().ReadyTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A Redis server answers within milliseconds; a JVM or an etcd member
	// takes seconds to elect a leader, and every probe is a connection it
	// must accept and answer (ZooKeeper logs each): at a steady 10 ms,
	// three members took 400 probes to start. The wait grows by half each
	// time, to a tenth of a second.
	wait := readyFirstProbe
	conn := n.Conn()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		pid, err := conn.Probe(pctx)
		pcancel()
		switch {
		case err == nil && (pid == 0 || pid == p.cmd.Process.Pid):
			return nil
		case err == nil:
			// Another node of this run (same password) answers on the
			// port: two nodes drew the same free port, ours could not
			// bind it and is exiting. Without this check the node would
			// pass for started while n1 and n2 were one process.
			return fmt.Errorf("%w: %s answers as pid %d, not as this node's pid %d",
				errPortTaken, n.addrLocked(), pid, p.cmd.Process.Pid)
		}
		t := time.NewTimer(wait)
		select {
		case <-p.done:
			t.Stop()
			return fmt.Errorf("%s exited at start: %v", n.Kind().Binary, p.err)
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("not ready: %w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(wait*3/2, readyLastProbe)
	}
}

// readyFirstProbe and readyLastProbe bound the wait between two readiness
// probes of a starting node.
const (
	readyFirstProbe = 10 * time.Millisecond
	readyLastProbe  = 100 * time.Millisecond
)

func (n *Process) config() string { return n.Kind().Config(n.serverConfig()) }

func (n *Process) serverConfig() cluster.ServerConfig {
	return cluster.ServerConfig{
		Port: n.port, Bind: "127.0.0.1", Password: n.cluster.password, DataDir: n.dataDir,
		LogFile: n.logPath, Persistence: n.persist, ReplicaOf: n.ReplicaOf(), Debug: n.cluster.cfg.Debug,
		Sentinel: n.sentinel, Member: n.member, Ensemble: n.ensemble,
	}
}

// Stop shuts the node down with SIGTERM and waits; when ctx ends first it
// falls back to SIGKILL. Stopping a stopped node is a no-op.
func (n *Process) Stop(ctx context.Context) error {
	if err := n.Refuse(fault.Stop); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopLocked(ctx)
}

// gracefulStopLimit bounds the wait for a node to act on SIGTERM.
const gracefulStopLimit = 30 * time.Second

func (n *Process) stopLocked(ctx context.Context) error {
	p := n.proc
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	// A paused (SIGSTOPped) node would never act on the SIGTERM.
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	n.paused = false
	// However long ctx allows, a node that ignores SIGTERM (Redis waits
	// up to its shutdown-timeout for lagging replicas) is not waited for
	// without end: a heal or a Close always finishes.
	limit := time.NewTimer(gracefulStopLimit)
	defer limit.Stop()
	select {
	case <-p.done:
		n.cluster.live.RemovePID(n.Name())
		return nil
	case <-limit.C:
		if err := n.killLocked(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		return fmt.Errorf("node %s: did not stop within %v of SIGTERM, killed", n.Name(), gracefulStopLimit)
	case <-ctx.Done():
		if err := n.killLocked(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		return fmt.Errorf("node %s: graceful stop cut short, killed: %w", n.Name(), ctx.Err())
	}
}

// Kill sends SIGKILL and waits for the process to be gone, or for ctx to
// end. Killing a node that is down is a no-op.
func (n *Process) Kill(ctx context.Context) error {
	if err := n.Refuse(fault.Kill); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.killLocked(ctx)
}

func (n *Process) killLocked(ctx context.Context) error {
	p := n.proc
	if p == nil || p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("node %s: kill: %w", n.Name(), err)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("node %s: killed, but pid %d has not exited yet: %w", n.Name(), p.cmd.Process.Pid, ctx.Err())
	}
	n.paused = false
	n.cluster.live.RemovePID(n.Name())
	return nil
}

// closeGrace is how long Close waits for a node to exit on SIGTERM before
// it kills it. The run's data is thrown away, so nothing is lost by the
// kill; the SIGTERM lets a server end what it forked (Redis's rewrite
// child) and log its exit, which takes Redis milliseconds. etcd, asked to
// stop, first hands its leadership to a member that is stopping too and
// waits seconds for it: 7 s of every etcd play's teardown before.
const closeGrace = time.Second

// dumpGrace is closeGrace for the member that dumps the class archive at
// exit: a fraction of a second on an idle machine, longer on a busy one,
// and a dump cut short is thrown away.
const dumpGrace = 10 * time.Second

func (n *Process) close(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	grace := closeGrace
	if n.proc != nil && n.cluster.archive.dumpedBy(n.proc) {
		grace = dumpGrace
	}
	gctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	err := n.stopLocked(gctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = nil // killed after its grace, as meant
	}
	return errors.Join(err, n.Release())
}

// logSince is what the server logged from offset from on, "" when its
// log cannot be read.
func logSince(path string, from int64) string {
	b, err := os.ReadFile(path)
	if err != nil || from > int64(len(b)) {
		return ""
	}
	return string(b[from:])
}

// lastBytes is the end of s, at most max bytes, trimmed.
func lastBytes(s string, max int) string {
	if len(s) > max {
		s = s[len(s)-max:]
	}
	return strings.TrimSpace(s)
}
