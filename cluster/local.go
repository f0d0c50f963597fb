// Package cluster runs the Redis nodes a scenario needs: independent
// masters for Redlock, each a redis-server child process on loopback with
// its own data dir, a per-run password and a wall clock the nemesis can move.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

	"github.com/redis/go-redis/v9"
)

// Persistence is how a node keeps its data across a restart.
type Persistence string

const (
	// PersistNone keeps nothing: no RDB snapshot (not even on SIGTERM),
	// no AOF. A restarted node comes back empty.
	PersistNone Persistence = "none"
	// PersistAOFEverysec appends every write and fsyncs once a second.
	PersistAOFEverysec Persistence = "aof-everysec"
	// PersistAOFAlways appends and fsyncs every write before replying.
	PersistAOFAlways Persistence = "aof-always"
)

func (p Persistence) valid() bool {
	switch p {
	case PersistNone, PersistAOFEverysec, PersistAOFAlways:
		return true
	}
	return false
}

// ErrNoRedisServer means redis-server is not installed.
var ErrNoRedisServer = errors.New("redis-server not found in PATH: install it (apt-get install -y redis-server)")

// Config describes a local cluster.
type Config struct {
	// Nodes is how many nodes to start; they are named n1..nN.
	Nodes int
	// Dir is the run's folder: node data goes to Dir/nodes/<name> (removed
	// at Close) and node logs to Dir/logs/<name>.log (kept).
	Dir string
	// Persistence applies to every node; empty means PersistNone.
	Persistence Persistence
	// NodePersistence overrides Persistence for the nodes it names.
	NodePersistence map[string]Persistence
	// RedisServer is the redis-server binary; empty means look it up in PATH.
	RedisServer string
	// CacheDir holds the compiled clock shim and the registry of live runs;
	// empty means splitbrain's folder in the user's cache dir.
	CacheDir string
	// RunID marks the run's processes; empty means a random one.
	RunID string
}

// DefaultCacheDir is where the shim and the live-run registry go by default.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache dir: %w", err)
	}
	return filepath.Join(base, "splitbrain"), nil
}

// Local is a cluster of redis-server child processes.
type Local struct {
	password string
	redis    string
	shim     string
	dir      string
	live     *liveRun
	nodes    []*Node

	extraMu sync.Mutex
	extra   []*Node // added by AddNode
	closed  bool

	closeOnce sync.Once
	closeErr  error
}

// StartLocal reaps leftovers of crashed runs, builds the clock shim if
// needed and starts the nodes. On error nothing is left running.
func StartLocal(ctx context.Context, cfg Config) (_ *Local, err error) {
	if cfg.Nodes < 1 {
		return nil, fmt.Errorf("cluster: Nodes is %d, want at least 1", cfg.Nodes)
	}
	if cfg.Dir == "" {
		return nil, errors.New("cluster: Dir is empty, want the run's folder")
	}
	// Nodes run in their own data dir, so every path they get is absolute.
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cfg.Dir = dir
	if cfg.Persistence == "" {
		cfg.Persistence = PersistNone
	}
	if !cfg.Persistence.valid() {
		return nil, fmt.Errorf("cluster: persistence %q, want none, aof-everysec or aof-always", cfg.Persistence)
	}
	for name, p := range cfg.NodePersistence {
		if !p.valid() {
			return nil, fmt.Errorf("cluster: node %s: persistence %q, want none, aof-everysec or aof-always", name, p)
		}
		if i, err := strconv.Atoi(strings.TrimPrefix(name, "n")); err != nil || !strings.HasPrefix(name, "n") || i < 1 || i > cfg.Nodes {
			return nil, fmt.Errorf("cluster: persistence given for node %q; this cluster has n1..n%d", name, cfg.Nodes)
		}
	}
	if cfg.RedisServer == "" {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, ErrNoRedisServer
		}
		cfg.RedisServer = p
	}
	if cfg.CacheDir == "" {
		if cfg.CacheDir, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	if cfg.RunID == "" {
		cfg.RunID = randomHex(8)
	}
	liveBase := filepath.Join(cfg.CacheDir, "live")
	if _, err := Reap(liveBase); err != nil {
		return nil, fmt.Errorf("cluster: reaping leftovers: %w", err)
	}
	shim, err := BuildShim(ctx, cfg.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	live, err := registerRun(liveBase, cfg.RunID, filepath.Join(cfg.Dir, "nodes"))
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Local{
		password: randomHex(16),
		redis:    cfg.RedisServer,
		shim:     shim,
		dir:      cfg.Dir,
		live:     live,
	}
	defer func() {
		if err != nil {
			_ = c.Close(context.WithoutCancel(ctx))
		}
	}()
	for _, d := range []string{filepath.Join(cfg.Dir, "nodes"), filepath.Join(cfg.Dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	for i := 1; i <= cfg.Nodes; i++ {
		name := fmt.Sprintf("n%d", i)
		p := cfg.NodePersistence[name]
		if p == "" {
			p = cfg.Persistence
		}
		n, err := c.newNode(NodeSpec{Name: name, Persistence: p})
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = n.Start(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Local) newNode(spec NodeSpec) (*Node, error) {
	name := spec.Name
	data := filepath.Join(c.dir, "nodes", name)
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: node %s: %w", name, err)
	}
	clock, err := NewClockFile(c.live.path(name + ".clock"))
	if err != nil {
		return nil, fmt.Errorf("cluster: node %s: %w", name, err)
	}
	return &Node{
		name:      name,
		cluster:   c,
		dataDir:   data,
		logPath:   filepath.Join(c.dir, "logs", name+".log"),
		clock:     clock,
		persist:   spec.Persistence,
		replicaOf: spec.ReplicaOf,
	}, nil
}

// Nodes returns the lock's nodes, n1..nN, in name order; nodes added with
// AddNode (replicas, storage) are not among them.
func (c *Local) Nodes() []*Node { return c.nodes }

// All returns every node: n1..nN, then the added ones in the order added.
func (c *Local) All() []*Node {
	c.extraMu.Lock()
	defer c.extraMu.Unlock()
	return append(append([]*Node(nil), c.nodes...), c.extra...)
}

// Node returns the node called name, added nodes included.
func (c *Local) Node(name string) (*Node, bool) {
	for _, n := range c.All() {
		if n.name == name {
			return n, true
		}
	}
	return nil, false
}

// Password is the run's password, required by every node.
func (c *Local) Password() string { return c.password }

// Close stops every node (gracefully, then by SIGKILL when ctx ends), resets
// clocks, removes the node data and the run's registry entry. Logs stay.
// It is safe to call more than once.
func (c *Local) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		c.extraMu.Lock()
		c.closed = true
		c.extraMu.Unlock()
		all := c.All()
		errs := make([]error, len(all))
		var wg sync.WaitGroup
		for i, n := range all {
			wg.Go(func() { errs[i] = n.close(ctx) })
		}
		wg.Wait()
		errs = append(errs, os.RemoveAll(filepath.Join(c.dir, "nodes")), c.live.remove())
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// Node is one redis-server child process.
type Node struct {
	name    string
	cluster *Local
	dataDir string
	logPath string
	clock   *ClockFile

	mu        sync.Mutex
	port      int
	proc      *process
	admin     *redis.Client
	persist   Persistence
	replicaOf string // host:port of the master; empty for a master
	paused    bool
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, set before done closes
}

// Name is the node's name (n1, n2, ...).
func (n *Node) Name() string { return n.name }

// Addr is the node's host:port on loopback.
func (n *Node) Addr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port))
}

// LogPath is the node's log file.
func (n *Node) LogPath() string { return n.logPath }

// Admin is a client connected straight to the node (no proxy), for setup,
// inspection and tests.
func (n *Node) Admin() *redis.Client {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.admin
}

// Running reports whether the node's process is alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && !n.proc.exited()
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start starts the node's process (again, on the same port after the first
// start) and waits until it answers an authenticated PING.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil && !n.proc.exited() {
		return fmt.Errorf("node %s: already running (pid %d)", n.name, n.proc.cmd.Process.Pid)
	}
	fixedPort := n.port != 0
	const tries = 5
	var err error
	for range tries {
		if !fixedPort {
			if n.port, err = freePort(); err != nil {
				return fmt.Errorf("node %s: %w", n.name, err)
			}
		}
		if err = n.spawn(ctx); err == nil {
			return nil
		}
		// Someone took the port between our probe and redis's bind; a
		// fresh port fixes that, a fixed one (restart) cannot move.
		if fixedPort || !errors.Is(err, errPortTaken) {
			return err
		}
	}
	return err
}

var errPortTaken = errors.New("port taken")

func (n *Node) spawn(ctx context.Context) error {
	conf := filepath.Join(n.dataDir, "redis.conf")
	if err := os.WriteFile(conf, []byte(n.config()), 0o600); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	logf, err := os.OpenFile(n.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, 2)

	c := n.cluster
	cmd := exec.Command(c.redis, conf)
	cmd.Dir = n.dataDir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(withoutEnv(os.Environ(), "LD_PRELOAD", ClockEnv, RunEnv),
		"LD_PRELOAD="+c.shim,
		ClockEnv+"="+n.clock.Path(),
		RunEnv+"="+c.live.id)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C in the terminal reaches the harness
		// only, which then stops the nodes in order and writes the report.
		Setpgid: true,
		// If the harness dies without cleaning up, take the node with it.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("node %s: starting %s: %w", n.name, c.redis, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	n.paused = false
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	n.proc = p
	if err := c.live.addPID(n.name, cmd.Process.Pid); err != nil {
		_ = n.killLocked()
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port))
	if n.admin != nil && n.admin.Options().Addr != addr {
		_ = n.admin.Close()
		n.admin = nil
	}
	if n.admin == nil {
		n.admin = redis.NewClient(&redis.Options{
			Addr:        addr,
			Password:    c.password,
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
			MaxRetries: -1, PoolSize: 2,
		})
	}
	if err := n.waitReady(ctx, p); err != nil {
		_ = n.killLocked()
		tail := logTail(n.logPath, logStart)
		if strings.Contains(tail, "Address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return fmt.Errorf("node %s: %w\n%s", n.name, err, tail)
	}
	return nil
}

func (n *Node) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		pid, err := serverPID(pctx, n.admin)
		pcancel()
		switch {
		case err == nil && pid == p.cmd.Process.Pid:
			return nil
		case err == nil:
			// Another node of this run (same password) answers on the
			// port: two nodes drew the same free port, ours could not
			// bind it and is exiting. Without this check the node would
			// pass for started while n1 and n2 were one process.
			return fmt.Errorf("%w: 127.0.0.1:%d answers as pid %d, not as this node's pid %d",
				errPortTaken, n.port, pid, p.cmd.Process.Pid)
		}
		select {
		case <-p.done:
			return fmt.Errorf("redis-server exited at start: %v", p.err)
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last error: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// serverPID asks a redis-server for its process id, so that a node is
// known to be the process the harness started, not another on its port.
func serverPID(ctx context.Context, c *redis.Client) (int, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

func (n *Node) config() string {
	return RedisConf{Port: n.port, Bind: "127.0.0.1", Password: n.cluster.password, Dir: n.dataDir,
		LogFile: n.logPath, Persistence: n.persist, ReplicaOf: n.replicaOf}.String()
}

// Stop shuts the node down with SIGTERM and waits; when ctx ends first it
// falls back to SIGKILL. Stopping a stopped node is a no-op.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopLocked(ctx)
}

func (n *Node) stopLocked(ctx context.Context) error {
	p := n.proc
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	// A paused (SIGSTOPped) node would never act on the SIGTERM.
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	n.paused = false
	select {
	case <-p.done:
		n.cluster.live.removePID(n.name)
		return nil
	case <-ctx.Done():
		if err := n.killLocked(); err != nil {
			return err
		}
		return fmt.Errorf("node %s: graceful stop cut short, killed: %w", n.name, ctx.Err())
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (n *Node) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.killLocked()
}

func (n *Node) killLocked() error {
	p := n.proc
	if p == nil || p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("node %s: kill: %w", n.name, err)
	}
	<-p.done
	n.paused = false
	n.cluster.live.removePID(n.name)
	return nil
}

// SetClockOffset moves the node's wall clock to real time + d, at once.
func (n *Node) SetClockOffset(d time.Duration) error {
	if err := n.clock.Set(d); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	return nil
}

// ClockOffset is the node's current wall-clock offset.
func (n *Node) ClockOffset() time.Duration { return n.clock.Get() }

func (n *Node) close(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	err := n.stopLocked(ctx)
	if n.admin != nil {
		err = errors.Join(err, n.admin.Close())
		n.admin = nil
	}
	return errors.Join(err, n.clock.Close())
}

// ErrNoFreePort means the loopback interface had no port left for a node.
var ErrNoFreePort = errors.New("no free loopback port")

// portRangeFile is the kernel's ephemeral port range, from which every
// node's port (and every client connection's local port) is drawn.
const portRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			// bind(port 0) fails this way only when every port of the
			// range is taken: say which range, and what would help.
			return 0, fmt.Errorf("%w: every port of the ephemeral range %s is in use "+
				"(too many open connections on this machine); close some, or widen it with "+
				"sysctl net.ipv4.ip_local_port_range: %w", ErrNoFreePort, portRange(), err)
		}
		return 0, fmt.Errorf("%w: %w", ErrNoFreePort, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portRange is the ephemeral port range as "lo-hi", or "(unknown)".
func portRange() string {
	b, err := os.ReadFile(portRangeFile)
	if err != nil {
		return "(unknown)"
	}
	lo, hi, ok := strings.Cut(strings.TrimSpace(string(b)), "\t")
	if !ok {
		return strings.TrimSpace(string(b))
	}
	return strings.TrimSpace(lo) + "-" + strings.TrimSpace(hi)
}

func withoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
next:
	for _, kv := range env {
		for _, name := range names {
			if strings.HasPrefix(kv, name+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

func logTail(path string, from int64) string {
	b, err := os.ReadFile(path)
	if err != nil || from > int64(len(b)) {
		return ""
	}
	b = b[from:]
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.TrimSpace(string(b))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux (Go ≥1.24 panics instead)
	return hex.EncodeToString(b)
}
