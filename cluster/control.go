package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"
)

// NodeSpec describes a node added to a running cluster.
type NodeSpec struct {
	// Name must be unique in the cluster: lower-case letters, digits and
	// dashes, starting with a letter (r1, storage).
	Name string
	// Persistence is the node's; empty means PersistNone.
	Persistence Persistence
	// ReplicaOf makes the node an asynchronous replica of the master that
	// answers at this host:port. Give the address of a proxy in front of
	// the master to be able to cut or delay the replication link.
	ReplicaOf string
}

var nodeName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// ErrClosed is returned by AddNode after Close.
var ErrClosed = errors.New("cluster: closed")

// AddNode starts one more node, outside the lock's nodes: a replica, or the
// storage the workload protects. It is stopped and removed with the rest at
// Close. A replica is returned as soon as it answers; WaitSynced waits for
// its first sync.
func (c *Local) AddNode(ctx context.Context, spec NodeSpec) (*Node, error) {
	if !nodeName.MatchString(spec.Name) {
		return nil, fmt.Errorf("cluster: node name %q: want lower-case letters, digits and dashes, starting with a letter", spec.Name)
	}
	if spec.Persistence == "" {
		spec.Persistence = PersistNone
	}
	if !spec.Persistence.valid() {
		return nil, fmt.Errorf("cluster: node %s: persistence %q, want none, aof-everysec or aof-always", spec.Name, spec.Persistence)
	}
	if spec.ReplicaOf != "" {
		if _, _, err := net.SplitHostPort(spec.ReplicaOf); err != nil {
			return nil, fmt.Errorf("cluster: node %s: ReplicaOf %q: want host:port: %w", spec.Name, spec.ReplicaOf, err)
		}
	}
	if _, dup := c.Node(spec.Name); dup {
		return nil, fmt.Errorf("cluster: a node named %s exists already", spec.Name)
	}
	n, err := c.newNode(spec)
	if err != nil {
		return nil, err
	}
	c.extraMu.Lock()
	if c.closed {
		c.extraMu.Unlock()
		return nil, errors.Join(ErrClosed, n.clock.Close())
	}
	c.extra = append(c.extra, n)
	c.extraMu.Unlock()
	if err := n.Start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// Persistence is the mode the node runs with (or will, after SetPersistence,
// from its next start).
func (n *Node) Persistence() Persistence {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.persist
}

// SetPersistence changes the node's persistence from its next start on.
func (n *Node) SetPersistence(p Persistence) error {
	if !p.valid() {
		return fmt.Errorf("node %s: persistence %q, want none, aof-everysec or aof-always", n.name, p)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.persist = p
	return nil
}

// ErrNotRunning is returned by operations that need the node's process.
var ErrNotRunning = errors.New("not running")

// Controls is the node as fault injection drives it: the method set it
// shares with the Docker backend's nodes, in which every blocking operation
// takes a context — Kill included, which on Node predates that and takes
// none.
type Controls struct{ *Node }

// Controls returns n's Controls.
func (n *Node) Controls() Controls { return Controls{n} }

// Kill sends SIGKILL and waits for the process to be gone; a local kill is
// a signal and a wait for the exit, which ctx has no reason to cut short.
func (c Controls) Kill(context.Context) error { return c.Node.Kill() }

// Pause stops the node's process with SIGSTOP and waits until it is
// stopped. The kernel still completes TCP handshakes to it, so clients see
// timeouts, not refusals. Pausing a paused node is a no-op.
func (n *Node) Pause(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	if p == nil || p.exited() {
		return fmt.Errorf("node %s: pause: %w", n.name, ErrNotRunning)
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("node %s: pause: %w", n.name, err)
	}
	// The signal is delivered asynchronously; the fault is in effect only
	// once the process is stopped. A pause that cannot be confirmed is
	// undone, so that a failed pause leaves nothing to heal.
	if err := waitState(ctx, p, true); err != nil {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		return fmt.Errorf("node %s: pause: %w", n.name, err)
	}
	n.paused = true
	return nil
}

// waitState waits until the process is stopped (or no longer stopped).
func waitState(ctx context.Context, p *process, stopped bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := procState(p.cmd.Process.Pid)
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
func (n *Node) Resume(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	if p == nil || p.exited() || !n.paused {
		n.paused = false
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("node %s: resume: %w", n.name, err)
	}
	n.paused = false
	return waitState(ctx, p, false)
}

// Paused reports whether the node is paused.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused
}

// PID is the node's process id, or 0 when it is not running.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.proc.exited() {
		return 0
	}
	return n.proc.cmd.Process.Pid
}

// WipeData deletes everything in the stopped node's data dir (AOF, RDB), so
// that its next start comes back empty: "amnesia", a crash that lost what
// the page cache held. A kill -9 alone loses nothing under AOF, whatever
// the fsync setting, because the page cache survives the process.
func (n *Node) WipeData(context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil && !n.proc.exited() {
		return fmt.Errorf("node %s: wipe data: still running; kill or stop it first", n.name)
	}
	entries, err := os.ReadDir(n.dataDir)
	if err != nil {
		return fmt.Errorf("node %s: wipe data: %w", n.name, err)
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(n.dataDir, e.Name())))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node %s: wipe data: %w", n.name, err)
	}
	return nil
}

// ReplicaOf is the address the node replicates from; empty for a master.
func (n *Node) ReplicaOf() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.replicaOf
}

// Promote turns a replica into a master (REPLICAOF NO ONE), keeping what it
// has replicated so far, and returns the address it replicated from. It is
// also what a restart keeps: a promoted node restarts as a master.
func (n *Node) Promote(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.proc.exited() {
		return "", fmt.Errorf("node %s: promote: %w", n.name, ErrNotRunning)
	}
	if err := n.admin.Do(ctx, "replicaof", "no", "one").Err(); err != nil {
		return "", fmt.Errorf("node %s: REPLICAOF NO ONE: %w", n.name, err)
	}
	prev := n.replicaOf
	n.replicaOf = ""
	return prev, nil
}

// Follow makes the node a replica of the master at addr (host:port): it
// drops its own data and syncs from that master. A restart keeps following.
func (n *Node) Follow(ctx context.Context, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("node %s: follow %q: want host:port: %w", n.name, addr, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.replicaOf = addr
	if n.proc == nil || n.proc.exited() {
		return nil // the config written at the next start follows addr
	}
	return FollowMaster(ctx, n.admin, n.name, n.cluster.password, addr)
}

// WaitSynced waits until the replica is in sync (see WaitReplicaSynced).
func (n *Node) WaitSynced(ctx context.Context) error {
	return WaitReplicaSynced(ctx, n.Admin(), n.name)
}
