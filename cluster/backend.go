package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"splitbrain/fault"
)

// Backend is where a run's servers live: child processes of the harness
// (package cluster/local) or Docker containers (package cluster/docker). The runner and the faults
// reach the nodes only through it, so a scenario plays unchanged on either.
// What only some backends can do is an optional interface of its own
// (ReplicaStarter), found by type assertion.
type Backend interface {
	// Nodes are the lock's nodes, n1..nN, in order; nodes added later
	// (replicas, storage) are not among them.
	Nodes() []Node
	// Node finds a node by name, added ones included.
	Node(name string) (Node, bool)
	// Password is the run's password, which every node requires.
	Password() string
	// Close stops every node and removes what the run made, also after
	// a failed start; it is safe to call more than once.
	Close(ctx context.Context) error
}

// Node is one server of a kind. Every node can be started again after it
// went down; everything else a fault does to it is a capability below,
// which a backend's node has or lacks, and which it refuses with an
// *UnsupportedError when its kind does not support the fault.
type Node interface {
	// Name is the node's name in the run: n1, n2, ..., r1, storage.
	Name() string
	// Kind is the kind of server the node runs.
	Kind() *Kind
	// Addr is the host:port the harness and the clients' proxies dial.
	Addr() string
	// Start starts the node (again, with its data as the last stop left
	// it) and waits until it is ready. Starting a running node is an
	// error. This is the heal of Kill and Stop.
	Start(ctx context.Context) error
}

// Killer crashes a node: SIGKILL, no shutdown. Killing a node that is
// down does nothing.
type Killer interface {
	Kill(ctx context.Context) error
}

// Stopper shuts a node down gracefully: SIGTERM, then SIGKILL when ctx
// ends first. Stopping a stopped node does nothing.
type Stopper interface {
	Stop(ctx context.Context) error
}

// Pauser freezes a node and thaws it; the kernel still completes TCP
// handshakes to a frozen node, so its clients see timeouts, not refusals.
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// Wiper deletes a stopped node's data, so that its next start comes back
// empty ("amnesia").
type Wiper interface {
	WipeData(ctx context.Context) error
}

// Clock moves a node's wall clock, through the clock shim.
type Clock interface {
	SetClockOffset(time.Duration) error
	ClockOffset() time.Duration
}

// Replica is a node that replicates another and can be made a master.
type Replica interface {
	// Promote makes the replica a master, keeping what it replicated so
	// far, and returns the address it replicated from.
	Promote(ctx context.Context) (string, error)
	// Follow makes the node a replica of the master at addr (host:port):
	// it drops its own data and syncs from that master.
	Follow(ctx context.Context, addr string) error
	// WaitSynced waits until the replica's first sync is complete.
	WaitSynced(ctx context.Context) error
}

// Isolator disconnects a node from every peer and the harness, and
// connects it back (the Docker backend's network disconnect).
type Isolator interface {
	Isolate(ctx context.Context) error
	Rejoin(ctx context.Context) error
}

// AsNodes is a backend's nodes of its own type as Nodes.
func AsNodes[N Node](ns []N) []Node {
	out := make([]Node, len(ns))
	for i, n := range ns {
		out[i] = n
	}
	return out
}

// FindNode is the node of ns called name.
func FindNode[N Node](ns []N, name string) (N, bool) {
	for _, n := range ns {
		if n.Name() == name {
			return n, true
		}
	}
	var zero N
	return zero, false
}

// ReplicaStarter is a backend that can add a replica of one of its nodes.
type ReplicaStarter interface {
	// AddReplica starts the replica and returns it once it answers; it
	// is stopped and removed with the rest of the run at Close.
	AddReplica(ctx context.Context, spec ReplicaSpec) (Node, error)
}

// ReplicaSpec describes a replica added to a running backend.
type ReplicaSpec struct {
	// Name must be unique in the run: lower-case letters, digits and
	// dashes, starting with a letter (r1).
	Name string
	// Of names the node replicated. The replica is of its kind and, when
	// Persistence is empty, has its persistence.
	Of string
	// Via is the host:port the replica replicates from, as this host
	// reaches it: a proxy in front of Of, so that the replication link can
	// be cut; empty means Of's own address.
	Via string
	// Persistence is the replica's; empty means Of's.
	Persistence Persistence
	// Routes are in place before the replica starts: see
	// local.Process.SetRoutes. With a route for Of's address, Via can be Of's own
	// address and the link still goes through a proxy.
	Routes map[string]string
}

// UnsupportedError is the refusal of a fault a node cannot take: its kind
// does not support it, or (Backend set) its backend cannot do it to any
// node. Callers branch on it with errors.As, e.g. to show n/a.
type UnsupportedError struct {
	Kind  string // the server kind: redis, sentinel, zookeeper, etcd
	Fault fault.Capability
	// Node is the node asked, empty when the refusal is not about one.
	Node string
	// Backend is set when the backend is what lacks the fault.
	Backend bool
}

func (e *UnsupportedError) Error() string {
	who := ""
	if e.Node != "" {
		who = "node " + e.Node + ": "
	}
	if e.Backend {
		return fmt.Sprintf("%sthis backend does not support %s on %s nodes", who, e.Fault, e.Kind)
	}
	return fmt.Sprintf("%s%s nodes do not support %s", who, e.Kind, e.Fault)
}

// Capable returns node as the capability C that fault f needs (Pauser for
// fault.Pause, or any interface the node's methods satisfy), or an
// *UnsupportedError when the node's kind does not support f or its
// backend's nodes do not have C.
func Capable[C any](node Node, f fault.Capability) (C, error) {
	var zero C
	if err := node.Kind().Refuse(node.Name(), f); err != nil {
		return zero, err
	}
	c, ok := node.(C)
	if !ok {
		return zero, &UnsupportedError{Kind: node.Kind().Name, Fault: f, Node: node.Name(), Backend: true}
	}
	return c, nil
}

// syncTimeout bounds a new replica's first sync.
const syncTimeout = 30 * time.Second

// StartReplica adds a replica on b as spec says and waits for its first
// sync, so that what its master holds now is on the replica too.
func StartReplica(ctx context.Context, b Backend, spec ReplicaSpec) (Node, error) {
	master, ok := b.Node(spec.Of)
	if !ok {
		return nil, fmt.Errorf("replica %s: no node %s to replicate", spec.Name, spec.Of)
	}
	if err := master.Kind().Refuse(master.Name(), fault.Replica); err != nil {
		return nil, err
	}
	rs, ok := b.(ReplicaStarter)
	if !ok {
		return nil, &UnsupportedError{Kind: master.Kind().Name, Fault: fault.Replica, Node: spec.Of, Backend: true}
	}
	rep, err := rs.AddReplica(ctx, spec)
	if err != nil {
		return nil, err
	}
	r, err := Capable[Replica](rep, fault.Replica)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if err := r.WaitSynced(sctx); err != nil {
		return nil, err
	}
	return rep, nil
}

// ErrNotRunning is returned by operations that need the node's server.
var ErrNotRunning = errors.New("not running")

// ErrClosed is returned by operations that add to a closed backend.
var ErrClosed = errors.New("cluster: closed")
