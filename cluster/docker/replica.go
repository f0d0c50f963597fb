package docker

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"splitbrain/cluster"
	"splitbrain/fault"
)

// AddReplica implements cluster.ReplicaStarter: an asynchronous replica of
// spec.Of in a container of its own on the run's network, outside the
// lock's nodes, returned once it answers (cluster.StartReplica also waits
// for its first sync). spec.Via may be a node's address on the run's
// network or a proxy on this host (loopback included), so that the
// replication link can be cut: a container cannot reach this host's
// loopback, so an address off the run's network is reached through a relay
// on the network's gateway. It is removed with the rest of the run at
// Close.
func (c *Cluster) AddReplica(ctx context.Context, spec cluster.ReplicaSpec) (cluster.Node, error) {
	if err := cluster.CheckNodeName(spec.Name); err != nil {
		return nil, fmt.Errorf("docker: replica: %w", err)
	}
	master, ok := c.Container(spec.Of)
	if !ok {
		return nil, fmt.Errorf("docker: replica %s: no node %s to replicate", spec.Name, spec.Of)
	}
	if err := master.Refuse(fault.Replica); err != nil {
		return nil, err
	}
	if spec.Via == "" {
		spec.Via = master.Addr()
	}
	if spec.Persistence == "" {
		spec.Persistence = master.Persistence()
	}
	if err := c.cfg.Kind.CheckPersistence(spec.Persistence); err != nil {
		return nil, fmt.Errorf("docker: replica %s: %w", spec.Name, err)
	}
	if _, _, err := net.SplitHostPort(spec.Via); err != nil {
		return nil, fmt.Errorf("docker: replica %s: Via %q: want host:port: %w", spec.Name, spec.Via, err)
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
func (c *Cluster) newReplica(ctx context.Context, spec cluster.ReplicaSpec) (*Container, error) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil, cluster.ErrClosed
	}
	if _, dup := c.Container(spec.Name); dup {
		return nil, fmt.Errorf("docker: a node named %s exists already", spec.Name)
	}
	ips, err := c.takeIPs(1)
	if err != nil {
		return nil, err
	}
	n, err := c.newContainer(ctx, nodeSpec{name: spec.Name, ip: ips[0], kind: c.cfg.Kind, image: c.image, persist: spec.Persistence})
	if err != nil {
		return nil, err
	}
	c.extraMu.Lock()
	c.extra = append(c.extra, n)
	c.extraMu.Unlock()
	if err := n.SetRoutes(spec.Routes); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	// Created, not started: this writes the config its start reads.
	if err := n.FollowWith(ctx, spec.Via, n.replicaHooks()); err != nil {
		return nil, err
	}
	return n, nil
}

// replicaHooks: the config file says whom the container follows, by the
// address it reaches the master at.
func (n *Container) replicaHooks() cluster.ReplicaHooks {
	return cluster.ReplicaHooks{
		Running: n.mustRunLocked,
		SetReplicaOf: func(addr string) (string, error) {
			up := ""
			if addr != "" {
				var err error
				if up, err = n.upstreamLocked(addr); err != nil {
					return "", err
				}
			}
			return up, n.writeConfig(up)
		},
	}
}

// upstreamLocked is the address by which the node's container reaches
// addr: addr itself on the run's network, the node's relay otherwise.
func (n *Container) upstreamLocked(addr string) (string, error) {
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
		return "", fmt.Errorf("node %s: address %q: %w", n.Name(), n.ip, err)
	}
	r, err := newRelay(n.cluster.gateway, self, addr)
	if err != nil {
		return "", fmt.Errorf("node %s: %w", n.Name(), err)
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

// RelayAddr is where the node's replication relay listens on the run's
// gateway, empty when it has none.
func (n *Container) RelayAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.relay == nil {
		return ""
	}
	return n.relay.Addr()
}

// Promote turns a replica into a master, keeping what it has replicated so
// far, and returns the address it replicated from. A restart keeps it a
// master.
func (n *Container) Promote(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.PromoteWith(ctx, n.replicaHooks())
}

// Follow makes the node a replica of the master at addr (as Via in
// cluster.ReplicaSpec): it drops its own data and syncs from that master.
// A restart keeps following.
func (n *Container) Follow(ctx context.Context, addr string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.FollowWith(ctx, addr, n.replicaHooks())
}

// mustRunLocked is nil when the node's container runs, an error wrapping
// cluster.ErrNotRunning when it does not.
func (n *Container) mustRunLocked(ctx context.Context) error {
	st, err := n.cluster.eng.containerState(ctx, n.id)
	if err != nil {
		return err
	}
	if !st.Running {
		return fmt.Errorf("%w (%s)", cluster.ErrNotRunning, st.Status)
	}
	return nil
}
