package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/fault"
)

// NodeBase is the part of a node that does not depend on where the node
// runs: its name and kind, the harness's connection to it, its clock
// offset file and the master it follows. Each backend's node type embeds
// it, so that the clock, the kind's refusals and replication are written
// once.
type NodeBase struct {
	name     string
	kind     *Kind
	password string
	clock    *ClockFile

	mu   sync.Mutex
	conn Conn
	// replicaOf is the master a replica follows, as the harness reaches
	// it (a node, or a proxy on this host); empty for a master.
	replicaOf string
}

// NewNodeBase makes the shared part of a node of a run with password; it
// owns conn and clock from then on and lets go of them at Release.
func NewNodeBase(name string, kind *Kind, password string, conn Conn, clock *ClockFile) *NodeBase {
	return &NodeBase{name: name, kind: kind, password: password, conn: conn, clock: clock}
}

// Name is the node's name (n1, n2, ..., r1).
func (b *NodeBase) Name() string { return b.name }

// Kind is the kind of server the node runs.
func (b *NodeBase) Kind() *Kind { return b.kind }

// Conn is the harness's own connection to the node.
func (b *NodeBase) Conn() Conn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conn
}

// SetConn replaces the connection and closes the old one: for the node's
// backend, when the node moved to another port (the local backend).
func (b *NodeBase) SetConn(c Conn) {
	b.mu.Lock()
	old := b.conn
	b.conn = c
	b.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
}

// Admin is a client connected straight to a Redis node (no proxy), for
// setup, inspection and tests; nil for a node of another kind.
func (b *NodeBase) Admin() *redis.Client {
	if c, ok := b.Conn().(*RedisConn); ok {
		return c.Client
	}
	return nil
}

// Refuse returns the *UnsupportedError of fault f on this node, or nil when
// its kind supports f.
func (b *NodeBase) Refuse(f fault.Capability) error { return b.kind.Refuse(b.name, f) }

// SetClockOffset moves the node's wall clock to real time + d, at once.
func (b *NodeBase) SetClockOffset(d time.Duration) error {
	if err := b.Refuse(fault.Clock); err != nil {
		return err
	}
	if err := b.clock.Set(d); err != nil {
		return fmt.Errorf("node %s: %w", b.name, err)
	}
	return nil
}

// ClockOffset is the node's current wall-clock offset.
func (b *NodeBase) ClockOffset() time.Duration { return b.clock.Get() }

// ClockPath is the node's clock offset file on this host.
func (b *NodeBase) ClockPath() string { return b.clock.Path() }

// Replication is the node's connection as a ReplicationConn, or the
// refusal of fault.Replica.
func (b *NodeBase) Replication() (ReplicationConn, error) {
	if err := b.Refuse(fault.Replica); err != nil {
		return nil, err
	}
	rc, ok := b.Conn().(ReplicationConn)
	if !ok {
		return nil, fmt.Errorf("node %s: the %s kind lists replicas but its connection has no replication commands", b.name, b.kind.Name)
	}
	return rc, nil
}

// ReplicaOf is the address the node follows, as given to Follow (or when
// it was added as a replica); empty for a master.
func (b *NodeBase) ReplicaOf() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.replicaOf
}

// SetReplicaOf records the master the node follows, for its backend
// when it makes a replica; Follow and Promote keep it up to date after.
func (b *NodeBase) SetReplicaOf(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.replicaOf = addr
}

// ReplicaHooks are what a backend's node tells PromoteWith and FollowWith,
// which call them with the node's own lock held.
type ReplicaHooks struct {
	// Running is nil when the node's server runs, an error wrapping
	// ErrNotRunning when it does not, another when it cannot tell.
	Running func(context.Context) error
	// SetReplicaOf makes addr (empty: none) the master of the node's next
	// start and returns the address its server reaches addr by.
	SetReplicaOf func(addr string) (string, error)
}

// PromoteWith makes the running replica a master, keeping what it
// replicated so far, and returns the address it followed; its next start
// is a master's too.
func (b *NodeBase) PromoteWith(ctx context.Context, h ReplicaHooks) (string, error) {
	rc, err := b.Replication()
	if err != nil {
		return "", err
	}
	if err := h.Running(ctx); err != nil {
		return "", fmt.Errorf("node %s: promote: %w", b.name, err)
	}
	if err := rc.Promote(ctx); err != nil {
		return "", fmt.Errorf("node %s: %w", b.name, err)
	}
	prev := b.ReplicaOf()
	if _, err := h.SetReplicaOf(""); err != nil {
		return "", err
	}
	b.SetReplicaOf("")
	return prev, nil
}

// FollowWith makes the node a replica of the master at addr (host:port):
// at once when it runs (it drops its own data and syncs from that
// master), from its next start when it does not; a restart keeps
// following.
func (b *NodeBase) FollowWith(ctx context.Context, addr string, h ReplicaHooks) error {
	rc, err := b.Replication()
	if err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("node %s: follow %q: want host:port: %w", b.name, addr, err)
	}
	up, err := h.SetReplicaOf(addr)
	if err != nil {
		return err
	}
	b.SetReplicaOf(addr)
	if err := h.Running(ctx); errors.Is(err, ErrNotRunning) {
		return nil // its next start follows addr
	} else if err != nil {
		return fmt.Errorf("node %s: follow: %w", b.name, err)
	}
	if err := rc.Follow(ctx, up, b.password); err != nil {
		return fmt.Errorf("node %s: %w", b.name, err)
	}
	return nil
}

// WaitSynced waits until the replica is in sync with its master.
func (b *NodeBase) WaitSynced(ctx context.Context) error {
	rc, err := b.Replication()
	if err != nil {
		return err
	}
	if err := rc.WaitSynced(ctx); err != nil {
		return fmt.Errorf("node %s: %w", b.name, err)
	}
	return nil
}

// Release lets go of the connection and the clock offset file, for the
// backend's Close; the node must not be used afterwards.
func (b *NodeBase) Release() error {
	b.mu.Lock()
	c := b.conn
	b.conn = nil
	b.mu.Unlock()
	var err error
	if c != nil {
		err = c.Close()
	}
	return errors.Join(err, b.clock.Close())
}
