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

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
)

const (
	redisPort = 6379
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

// Node is one Redis container.
type Node struct {
	name     string
	cluster  *Cluster
	addr     string // ip:port, fixed for the node's life
	ip       string
	stateDir string // bind-mounted read-only at imageStateDir
	logPath  string
	clock    *cluster.ClockFile
	spec     containerSpec
	admin    *redis.Client
	persist  cluster.Persistence

	mu       sync.Mutex
	id       string // the container; amnesia with a volume replaces it
	isolated bool
	closed   bool // log saved, admin client and clock file released
	// follow is the master a replica replicates from, as the harness
	// reaches it (a node, or a proxy on this host); empty for a master.
	follow string
	// relay carries the replication link to a follow address on this
	// host, which the container cannot reach itself; nil until needed.
	relay *relay
}

func (c *Cluster) newNode(ctx context.Context, name, ip string, persist cluster.Persistence) (*Node, error) {
	dir := filepath.Join(c.stateDir, name)
	// Private to the harness's user: the container's root reads them with
	// CAP_DAC_OVERRIDE.
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("docker: node %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "redis.conf"), []byte(redisConfig(c.password, persist, "")), 0o600); err != nil {
		return nil, fmt.Errorf("docker: node %s: %w", name, err)
	}
	clock, err := cluster.NewClockFile(filepath.Join(dir, "clock"))
	if err != nil {
		return nil, fmt.Errorf("docker: node %s: %w", name, err)
	}
	addr := net.JoinHostPort(ip, strconv.Itoa(redisPort))
	n := &Node{
		name:     name,
		cluster:  c,
		addr:     addr,
		ip:       ip,
		stateDir: dir,
		logPath:  filepath.Join(c.logDir, name+".log"),
		clock:    clock,
		persist:  persist,
		admin: redis.NewClient(&redis.Options{
			Addr:        addr,
			Password:    c.password,
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
			MaxRetries: -1, PoolSize: 2,
		}),
	}
	labels := map[string]string{labelNode: name}
	for k, v := range c.labels {
		labels[k] = v
	}
	n.spec = containerSpec{
		Name:  c.netName + "-" + name,
		Image: c.image.Tag,
		Cmd:   []string{imageRedis, imageStateDir + "/redis.conf"},
		Env: []string{
			"LD_PRELOAD=" + imageShim,
			cluster.ClockEnv + "=" + imageStateDir + "/clock",
		},
		Labels:   labels,
		Network:  c.netName,
		IP:       ip,
		Binds:    []bindMount{{Source: dir, Target: imageStateDir}},
		DataPath: imageDataDir,
	}
	if persist == cluster.PersistNone {
		n.spec.DataTmpfs = imageDataDir
	} else {
		n.spec.DataVolume = n.spec.Name + "-data"
	}
	if err := n.create(ctx); err != nil {
		_ = n.admin.Close()
		_ = clock.Close()
		return nil, err
	}
	return n, nil
}

// create makes the node's container (and its data volume, if any).
func (n *Node) create(ctx context.Context) error {
	e := n.cluster.eng
	if n.spec.DataVolume != "" {
		if err := e.createVolume(ctx, n.spec.DataVolume, n.spec.Labels); err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
	}
	id, err := e.createContainer(ctx, n.spec)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	n.id = id
	return nil
}

// redisConfig is a node's redis.conf: the settings of cluster's local nodes,
// adapted to a container (all interfaces of its own network namespace, a
// fixed port, the log on stdout for the engine to keep). replicaOf is the
// master's address as the container reaches it, empty for a master.
func redisConfig(password string, p cluster.Persistence, replicaOf string) string {
	return cluster.RedisConf{Port: redisPort, Bind: "0.0.0.0", Password: password, Dir: imageDataDir, Persistence: p, ReplicaOf: replicaOf}.String()
}

// Persistence is the node's persistence mode.
func (n *Node) Persistence() cluster.Persistence { return n.persist }

// Name is the node's name (n1, n2, ...).
func (n *Node) Name() string { return n.name }

// Addr is the node's address on the run's network, which the harness
// reaches directly (it does not change across restarts and isolations).
func (n *Node) Addr() string { return n.addr }

// LogPath is where the node's log is written when the cluster closes.
func (n *Node) LogPath() string { return n.logPath }

// Admin is a client connected straight to the node, for setup, inspection
// and tests.
func (n *Node) Admin() *redis.Client { return n.admin }

// ContainerID is the node's current container (an amnesia restart with a
// data volume replaces it).
func (n *Node) ContainerID() string {
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
func (n *Node) State(ctx context.Context) (NodeState, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st, err := n.cluster.eng.containerState(ctx, n.id)
	if err != nil {
		return NodeState{}, fmt.Errorf("node %s: %w", n.name, err)
	}
	return NodeState{Running: st.Running, Paused: st.Paused, Isolated: n.isolated, Status: st.Status}, nil
}

// Start starts the node's container and waits until Redis is ready: until
// it answers an authenticated PING, or, while the node is isolated and
// cannot be reached, until it logs that it accepts connections.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startLocked(ctx)
}

func (n *Node) startLocked(ctx context.Context) error {
	e := n.cluster.eng
	st, err := e.containerState(ctx, n.id)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	if st.Running {
		return fmt.Errorf("node %s: already running", n.name)
	}
	since := time.Now()
	if err := e.startContainer(ctx, n.id); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	if err := n.waitReady(ctx, since); err != nil {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		logs, _ := e.containerLogs(kctx, n.id, "40", time.Time{})
		_ = e.killContainer(kctx, n.id)
		return fmt.Errorf("node %s: %w\n%s", n.name, err, strings.TrimSpace(string(logs)))
	}
	return nil
}

func (n *Node) waitReady(ctx context.Context, since time.Time) error {
	e := n.cluster.eng
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for i := 0; ; i++ {
		if n.isolated {
			logs, err := e.containerLogs(ctx, n.id, "all", since)
			if err == nil && bytes.Contains(logs, []byte("Ready to accept connections")) {
				return nil
			}
			last = errors.New("not ready yet (isolated: waiting for its log line)")
		} else {
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			last = n.admin.Ping(pctx).Err()
			pcancel()
			if last == nil {
				return nil
			}
		}
		// A container that exited at start never gets ready; say so now.
		if i%10 == 9 {
			if st, err := e.containerState(ctx, n.id); err == nil && !st.Running {
				return fmt.Errorf("redis-server exited at start (status %s, exit code %d)", st.Status, st.ExitCode)
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
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopLocked(ctx)
}

func (n *Node) stopLocked(ctx context.Context) error {
	e := n.cluster.eng
	st, err := e.containerState(ctx, n.id)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	if !st.Running {
		return nil
	}
	if st.Paused {
		// A frozen process would never act on the SIGTERM.
		if err := e.unpauseContainer(ctx, n.id); err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
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
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if kerr := e.killContainer(kctx, n.id); kerr != nil {
		return fmt.Errorf("node %s: %w", n.name, kerr)
	}
	return fmt.Errorf("node %s: graceful stop cut short, killed: %w", n.name, ctx.Err())
}

// Kill sends SIGKILL through the engine and waits until the container has
// stopped. Killing a stopped node is a no-op.
func (n *Node) Kill(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.cluster.eng.killContainer(ctx, n.id); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
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
func (n *Node) Restart(ctx context.Context, opts RestartOptions) error {
	n.mu.Lock()
	var err error
	if opts.Graceful {
		err = n.stopLocked(ctx)
	} else {
		err = n.cluster.eng.killContainer(ctx, n.id)
	}
	n.mu.Unlock()
	if err != nil {
		return fmt.Errorf("node %s: restart: %w", n.name, err)
	}
	if opts.Delay > 0 {
		t := time.NewTimer(opts.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("node %s: restart: left down, the delay was cut short: %w", n.name, ctx.Err())
		case <-t.C:
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if opts.Amnesia && n.spec.DataVolume != "" {
		if err := n.recreateLocked(ctx); err != nil {
			return fmt.Errorf("node %s: amnesia: %w", n.name, err)
		}
	}
	return n.startLocked(ctx)
}

// recreateLocked replaces the stopped container and its data volume with
// fresh ones, same name, address and config: the only way to empty a
// volume without a shell in the image. The old container's log is kept.
func (n *Node) recreateLocked(ctx context.Context) error {
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
func (n *Node) Pause(ctx context.Context) error {
	return n.setPaused(ctx, true)
}

// Resume thaws a paused node. Resuming a node that is not paused is a no-op.
func (n *Node) Resume(ctx context.Context) error {
	return n.setPaused(ctx, false)
}

func (n *Node) setPaused(ctx context.Context, pause bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := n.cluster.eng
	st, err := e.containerState(ctx, n.id)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	switch {
	case st.Paused == pause:
		return nil
	case pause && !st.Running:
		return fmt.Errorf("node %s: cannot pause, it is %s", n.name, st.Status)
	case pause:
		err = e.pauseContainer(ctx, n.id)
	default:
		err = e.unpauseContainer(ctx, n.id)
	}
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	return nil
}

// Isolate disconnects the node from the run's network: nobody, the
// harness included, reaches it until Rejoin; packets in flight are lost
// and open connections hang. Isolating an isolated node is a no-op.
func (n *Node) Isolate(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.isolated {
		return nil
	}
	if err := n.cluster.eng.disconnectNetwork(ctx, n.cluster.netID, n.id); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	n.isolated = true
	return nil
}

// Rejoin connects an isolated node back under its old address. Rejoining
// a node that is not isolated is a no-op.
func (n *Node) Rejoin(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.isolated {
		return nil
	}
	if err := n.cluster.eng.connectNetwork(ctx, n.cluster.netID, n.id, n.ip); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	n.isolated = false
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

// saveLogLocked appends the container's log to the node's log file.
func (n *Node) saveLogLocked(ctx context.Context) error {
	logs, err := n.cluster.eng.containerLogs(ctx, n.id, "all", time.Time{})
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	f, err := os.OpenFile(n.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	_, werr := f.Write(logs)
	return errors.Join(werr, f.Close())
}

// close saves the node's log and releases what the harness holds; the
// container itself goes with the rest of the run. After a success it does
// nothing, so a Close that failed elsewhere can be retried.
func (n *Node) close(ctx context.Context) error {
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
	return errors.Join(n.admin.Close(), n.clock.Close(), rerr)
}
