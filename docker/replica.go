package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"

	"splitbrain/cluster"
)

// ReplicaSpec describes a replica added to a running cluster.
type ReplicaSpec struct {
	// Name must be unique in the cluster: lower-case letters, digits and
	// dashes, starting with a letter (r1).
	Name string
	// Persistence is the replica's; empty means cluster.PersistNone.
	Persistence cluster.Persistence
	// Master is the host:port the replica replicates from, as this host
	// reaches it: a node's address on the run's network, or a proxy on this
	// host in front of one (loopback included), so that the replication
	// link can be cut. A container cannot reach this host's loopback, so
	// an address off the run's network is reached through a relay on the
	// network's gateway.
	Master string
}

var replicaName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// ErrClosed is returned by AddReplica after Close.
var ErrClosed = errors.New("docker: cluster closed")

// AddReplica starts an asynchronous replica of spec.Master in a container
// of its own on the run's network, outside the lock's nodes, and returns it
// once it answers; WaitSynced waits for its first sync. It is removed with
// the rest of the run at Close.
func (c *Cluster) AddReplica(ctx context.Context, spec ReplicaSpec) (_ *Node, err error) {
	if !replicaName.MatchString(spec.Name) {
		return nil, fmt.Errorf("docker: replica name %q: want lower-case letters, digits and dashes, starting with a letter", spec.Name)
	}
	if spec.Persistence == "" {
		spec.Persistence = cluster.PersistNone
	}
	if !validPersistence(spec.Persistence) {
		return nil, fmt.Errorf("docker: replica %s: persistence %q, want none, aof-everysec or aof-always", spec.Name, spec.Persistence)
	}
	if _, _, err := net.SplitHostPort(spec.Master); err != nil {
		return nil, fmt.Errorf("docker: replica %s: Master %q: want host:port: %w", spec.Name, spec.Master, err)
	}
	n, err := c.newReplica(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := n.Start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// newReplica creates the replica's container and registers it, under the
// close lock so that a Close running at the same time removes it too.
func (c *Cluster) newReplica(ctx context.Context, spec ReplicaSpec) (*Node, error) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if _, dup := c.Node(spec.Name); dup {
		return nil, fmt.Errorf("docker: a node named %s exists already", spec.Name)
	}
	c.extraMu.Lock()
	count := len(c.nodes) + len(c.extra) + 1
	c.extraMu.Unlock()
	ips, err := nodeIPs(c.subnet, count)
	if err != nil {
		return nil, err
	}
	n, err := c.newNode(ctx, spec.Name, ips[len(ips)-1], spec.Persistence)
	if err != nil {
		return nil, err
	}
	c.extraMu.Lock()
	c.extra = append(c.extra, n)
	c.extraMu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.followLocked(spec.Master); err != nil {
		return nil, err
	}
	return n, nil
}

// followLocked makes addr the master of the node's next start (its
// redis.conf) and returns the address the container reaches it by.
func (n *Node) followLocked(addr string) (string, error) {
	up, err := n.upstreamLocked(addr)
	if err != nil {
		return "", err
	}
	n.follow = addr
	conf := redisConfig(n.cluster.password, n.persist, up)
	if err := os.WriteFile(filepath.Join(n.stateDir, "redis.conf"), []byte(conf), 0o600); err != nil {
		return "", fmt.Errorf("node %s: %w", n.name, err)
	}
	return up, nil
}

// upstreamLocked is the address by which the node's container reaches
// addr: addr itself on the run's network, the node's relay otherwise.
func (n *Node) upstreamLocked(addr string) (string, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err == nil && n.cluster.onNetwork(ap.Addr()) {
		return addr, nil
	}
	if n.relay != nil {
		n.relay.Retarget(addr)
		return n.relay.Addr(), nil
	}
	self, err := netip.ParseAddr(n.ip)
	if err != nil {
		return "", fmt.Errorf("node %s: address %q: %w", n.name, n.ip, err)
	}
	r, err := newRelay(n.cluster.gateway, self, addr)
	if err != nil {
		return "", fmt.Errorf("node %s: %w", n.name, err)
	}
	n.relay = r
	return r.Addr(), nil
}

// onNetwork says whether ip is an address on the run's network (the
// gateway, which is this host, excluded).
func (c *Cluster) onNetwork(ip netip.Addr) bool {
	p, err := netip.ParsePrefix(c.subnet.Subnet)
	return err == nil && p.Contains(ip.Unmap()) && ip.Unmap() != c.gateway
}

// ReplicaOf is the address the node replicates from, as given to
// AddReplica or Follow; empty for a master.
func (n *Node) ReplicaOf() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.follow
}

// RelayAddr is where the node's replication relay listens on the run's
// gateway, empty when it has none.
func (n *Node) RelayAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.relay == nil {
		return ""
	}
	return n.relay.Addr()
}

// Promote turns a replica into a master (REPLICAOF NO ONE), keeping what it
// has replicated so far, and returns the address it replicated from. A
// restart keeps it a master.
func (n *Node) Promote(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st, err := n.cluster.eng.containerState(ctx, n.id)
	if err != nil {
		return "", fmt.Errorf("node %s: promote: %w", n.name, err)
	}
	if !st.Running {
		return "", fmt.Errorf("node %s: promote: not running (%s)", n.name, st.Status)
	}
	if err := n.admin.Do(ctx, "replicaof", "no", "one").Err(); err != nil {
		return "", fmt.Errorf("node %s: REPLICAOF NO ONE: %w", n.name, err)
	}
	prev := n.follow
	n.follow = ""
	conf := redisConfig(n.cluster.password, n.persist, "")
	if err := os.WriteFile(filepath.Join(n.stateDir, "redis.conf"), []byte(conf), 0o600); err != nil {
		return "", fmt.Errorf("node %s: %w", n.name, err)
	}
	return prev, nil
}

// Follow makes the node a replica of the master at addr (as Master in
// ReplicaSpec): it drops its own data and syncs from that master. A
// restart keeps following.
func (n *Node) Follow(ctx context.Context, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("node %s: follow %q: want host:port: %w", n.name, addr, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	up, err := n.followLocked(addr)
	if err != nil {
		return err
	}
	st, err := n.cluster.eng.containerState(ctx, n.id)
	if err != nil {
		return fmt.Errorf("node %s: follow: %w", n.name, err)
	}
	if !st.Running {
		return nil // its next start reads the config just written
	}
	return cluster.FollowMaster(ctx, n.admin, n.name, n.cluster.password, up)
}

// WaitSynced waits until the replica is in sync (see
// cluster.WaitReplicaSynced).
func (n *Node) WaitSynced(ctx context.Context) error {
	return cluster.WaitReplicaSynced(ctx, n.admin, n.name)
}
