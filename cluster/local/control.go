package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"splitbrain/cluster"
	"splitbrain/fault"
)

// NodeSpec describes a node added to a running local cluster.
type NodeSpec struct {
	// Name must be unique in the cluster: lower-case letters, digits and
	// dashes, starting with a letter (r1, storage).
	Name string
	// Persistence is the node's; empty means the kind's default.
	Persistence cluster.Persistence
	// ReplicaOf makes the node an asynchronous replica of the master that
	// answers at this host:port. Give the address of a proxy in front of
	// the master to be able to cut or delay the replication link.
	ReplicaOf string
	// Kind is the node's kind; nil means the cluster's.
	Kind *cluster.Kind
	// Port is the node's port, reserved beforehand (reservePorts);
	// zero means a free one at its first start.
	Port int
	// Routes are in place before the node starts: see Process.SetRoutes.
	Routes map[string]string
	// Sentinel is what a sentinel watches.
	Sentinel *cluster.SentinelConfig
}

// AddNode starts one more node, outside the lock's nodes: a replica, or the
// storage the workload protects. It is stopped and removed with the rest at
// Close. A replica is returned as soon as it answers; WaitSynced waits for
// its first sync.
func (c *Cluster) AddNode(ctx context.Context, spec NodeSpec) (*Process, error) {
	if err := cluster.CheckNodeName(spec.Name); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if spec.Kind == nil {
		spec.Kind = c.cfg.Kind
	}
	if spec.Persistence == "" {
		spec.Persistence = spec.Kind.Persistence[0]
	}
	if err := spec.Kind.CheckPersistence(spec.Persistence); err != nil {
		return nil, fmt.Errorf("cluster: node %s: %w", spec.Name, err)
	}
	if spec.ReplicaOf != "" {
		if err := spec.Kind.Refuse(spec.Name, fault.Replica); err != nil {
			return nil, err
		}
		if _, _, err := net.SplitHostPort(spec.ReplicaOf); err != nil {
			return nil, fmt.Errorf("cluster: node %s: ReplicaOf %q: want host:port: %w", spec.Name, spec.ReplicaOf, err)
		}
	}
	c.extraMu.Lock()
	closed := c.closed
	c.extraMu.Unlock()
	if closed {
		return nil, cluster.ErrClosed
	}
	if _, dup := c.Process(spec.Name); dup {
		return nil, fmt.Errorf("cluster: a node named %s exists already", spec.Name)
	}
	n, err := c.newProcess(spec)
	if err != nil {
		return nil, err
	}
	c.extraMu.Lock()
	if c.closed {
		c.extraMu.Unlock()
		return nil, errors.Join(cluster.ErrClosed, n.Release())
	}
	c.extra = append(c.extra, n)
	c.extraMu.Unlock()
	if err := n.Start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// AddReplica implements ReplicaStarter: a process replicating spec.Of
// through spec.Via.
func (c *Cluster) AddReplica(ctx context.Context, spec cluster.ReplicaSpec) (cluster.Node, error) {
	master, ok := c.Process(spec.Of)
	if !ok {
		return nil, fmt.Errorf("cluster: replica %s: no node %s to replicate", spec.Name, spec.Of)
	}
	if spec.Via == "" {
		spec.Via = master.Addr()
	}
	if spec.Persistence == "" {
		spec.Persistence = master.Persistence()
	}
	return c.AddNode(ctx, NodeSpec{Name: spec.Name, Persistence: spec.Persistence, ReplicaOf: spec.Via, Routes: spec.Routes})
}

// ReserveSentinels implements SentinelStarter: free loopback ports.
func (c *Cluster) ReserveSentinels(count int) ([]string, error) {
	ports, err := reservePorts(count)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(ports))
	for i, p := range ports {
		addrs[i] = loopback(p)
	}
	return addrs, nil
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// AddSentinel implements SentinelStarter.
func (c *Cluster) AddSentinel(ctx context.Context, spec cluster.SentinelSpec) (cluster.Node, error) {
	cfg := spec.Config
	_, p, err := net.SplitHostPort(spec.Addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: sentinel %s: Addr %q: %w", spec.Name, spec.Addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("cluster: sentinel %s: Addr %q: %w", spec.Name, spec.Addr, err)
	}
	return c.AddNode(ctx, NodeSpec{Name: spec.Name, Kind: cluster.Sentinel, Port: port, Routes: spec.Routes, Sentinel: &cfg})
}

// Persistence is the mode the node runs with (or will, after SetPersistence,
// from its next start).
func (n *Process) Persistence() cluster.Persistence {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.persist
}

// SetPersistence changes the node's persistence from its next start on.
func (n *Process) SetPersistence(p cluster.Persistence) error {
	if err := n.Kind().CheckPersistence(p); err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.persist = p
	return nil
}

// Pause stops the node's process with SIGSTOP and waits until it is
// stopped. The kernel still completes TCP handshakes to it, so clients see
// timeouts, not refusals. Pausing a paused node is a no-op.
func (n *Process) Pause(ctx context.Context) error {
	if err := n.Refuse(fault.Pause); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	if p == nil || p.exited() {
		return fmt.Errorf("node %s: pause: %w", n.Name(), cluster.ErrNotRunning)
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("node %s: pause: %w", n.Name(), err)
	}
	// The signal is delivered asynchronously; the fault is in effect only
	// once the process is stopped. A pause that cannot be confirmed is
	// undone, so that a failed pause leaves nothing to heal.
	if err := waitState(ctx, p, true); err != nil {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		return fmt.Errorf("node %s: pause: %w", n.Name(), err)
	}
	n.paused = true
	return nil
}

// waitState waits until the process is stopped (or no longer stopped).
func waitState(ctx context.Context, p *process, stopped bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := cluster.ProcState(p.cmd.Process.Pid)
		if err != nil || p.exited() {
			return nil // gone: nothing left to wait for
		}
		if (st == 'T' || st == 't') == stopped {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("process %d still in state %c (%v)", p.cmd.Process.Pid, st, ctx.Err())
		}
		time.Sleep(time.Millisecond)
	}
}

// Resume continues a paused node with SIGCONT. Resuming a node that is not
// paused, or not running, is a no-op, so a heal can always run.
func (n *Process) Resume(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	if p == nil || p.exited() || !n.paused {
		n.paused = false
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("node %s: resume: %w", n.Name(), err)
	}
	n.paused = false
	return waitState(ctx, p, false)
}

// Paused reports whether the node is paused.
func (n *Process) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused
}

// PID is the node's process id, or 0 when it is not running.
func (n *Process) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.runningLocked() {
		return 0
	}
	return n.proc.cmd.Process.Pid
}

// WipeData deletes everything in the stopped node's data folder (AOF, RDB),
// so that its next start comes back empty: "amnesia", a crash that lost
// what the page cache held. A kill -9 alone loses nothing under AOF,
// whatever the fsync setting, because the page cache survives the process.
func (n *Process) WipeData(context.Context) error {
	if err := n.Refuse(fault.Wipe); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runningLocked() {
		return fmt.Errorf("node %s: wipe data: still running; kill or stop it first", n.Name())
	}
	entries, err := os.ReadDir(n.dataDir)
	if err != nil {
		return fmt.Errorf("node %s: wipe data: %w", n.Name(), err)
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(n.dataDir, e.Name())))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node %s: wipe data: %w", n.Name(), err)
	}
	return nil
}

// Promote turns a replica into a master, keeping what it has replicated so
// far, and returns the address it replicated from. It is also what a
// restart keeps: a promoted node restarts as a master.
func (n *Process) Promote(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.PromoteWith(ctx, n.replicaHooks())
}

// Follow makes the node a replica of the master at addr (host:port): it
// drops its own data and syncs from that master. A restart keeps following.
func (n *Process) Follow(ctx context.Context, addr string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.FollowWith(ctx, addr, n.replicaHooks())
}

// replicaHooks: the config written at each start says whom to follow, as
// given, since the process reaches this host's addresses itself.
func (n *Process) replicaHooks() cluster.ReplicaHooks {
	return cluster.ReplicaHooks{
		Running: func(context.Context) error {
			if !n.runningLocked() {
				return cluster.ErrNotRunning
			}
			return nil
		},
		SetReplicaOf: func(addr string) (string, error) { return addr, nil },
	}
}

// SetRoutes makes the node's process dial each proxy of routes instead of
// the server address it is keyed by, from its next connection on; a link
// already open stays as it is. Routes replace those given before.
func (n *Process) SetRoutes(routes map[string]string) error {
	if err := cluster.WriteRoutes(n.routeFile(), routes); err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	return nil
}

func (n *Process) routeFile() string { return filepath.Join(n.stateDir, "routes") }

// reservePorts picks count free loopback ports for servers that
// are not started yet: their addresses must be known before they start,
// so that the proxies between them, and the routes through those, are in
// place before the first sentinel dials another.
func reservePorts(count int) ([]int, error) {
	ports := make([]int, 0, count)
	for len(ports) < count {
		p, err := cluster.FreePort()
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}
