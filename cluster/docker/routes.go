package docker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"

	"splitbrain/cluster"
)

// SetRoutes makes the node's server dial each proxy of routes instead of
// the server address it is keyed by (another node's address on the run's
// network), from its next connection on, as the local backend's
// local.Process.SetRoutes does: the clock shim in the container rewrites the
// connect. A container cannot reach this host's loopback, where the
// proxies listen, so each proxy is reached through a relay of the node's
// own on the network's gateway. Routes replace those given before.
func (n *Container) SetRoutes(routes map[string]string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]string, len(routes))
	for from, via := range routes {
		ap, err := netip.ParseAddrPort(via)
		if err != nil {
			return fmt.Errorf("node %s: route %s via %q: %w", n.Name(), from, via, err)
		}
		if n.cluster.onNetwork(ap.Addr()) {
			out[from] = via
			continue
		}
		r, err := n.routeRelayLocked(via)
		if err != nil {
			return err
		}
		out[from] = r.Addr()
	}
	if err := cluster.WriteRoutes(filepath.Join(n.stateDir, "routes"), out); err != nil {
		return fmt.Errorf("node %s: %w", n.Name(), err)
	}
	return nil
}

// routeRelayLocked is the node's relay to via, made if missing.
func (n *Container) routeRelayLocked(via string) (*relay, error) {
	if r, ok := n.routeRelays[via]; ok {
		return r, nil
	}
	self, err := netip.ParseAddr(n.ip)
	if err != nil {
		return nil, fmt.Errorf("node %s: address %q: %w", n.Name(), n.ip, err)
	}
	r, err := newRelay(n.cluster.gateway, self, via)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name(), err)
	}
	if n.routeRelays == nil {
		n.routeRelays = map[string]*relay{}
	}
	n.routeRelays[via] = r
	return r, nil
}

// ReserveSentinels implements cluster.SentinelStarter: addresses on the
// run's network, Sentinel's port on each.
func (c *Cluster) ReserveSentinels(count int) ([]string, error) {
	ips, err := c.takeIPs(count)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(ips))
	for i, ip := range ips {
		addrs[i] = net.JoinHostPort(ip, fmt.Sprint(cluster.Sentinel.Port))
	}
	return addrs, nil
}

// AddSentinel implements cluster.SentinelStarter: a redis-sentinel in a
// container of its own at its reserved address, its routes (through
// relays to the proxies on this host) in place before it starts. Its
// config file is written anew at every start, so a restarted sentinel
// starts from the master it was given, as on the local backend.
func (c *Cluster) AddSentinel(ctx context.Context, spec cluster.SentinelSpec) (cluster.Node, error) {
	if err := cluster.CheckNodeName(spec.Name); err != nil {
		return nil, fmt.Errorf("docker: sentinel: %w", err)
	}
	host, port, err := net.SplitHostPort(spec.Addr)
	if err != nil || port != fmt.Sprint(cluster.Sentinel.Port) {
		return nil, fmt.Errorf("docker: sentinel %s: Addr %q: want an address ReserveSentinels gave", spec.Name, spec.Addr)
	}
	if a, err := netip.ParseAddr(host); err != nil || !c.onNetwork(a) {
		return nil, fmt.Errorf("docker: sentinel %s: Addr %q is not on the run's network", spec.Name, spec.Addr)
	}
	img, err := c.imageOf(ctx, cluster.Sentinel)
	if err != nil {
		return nil, err
	}
	n, err := c.addExtra(ctx, nodeSpec{name: spec.Name, ip: host, kind: cluster.Sentinel, image: img,
		persist: cluster.PersistNone, sentinel: &spec.Config})
	if err != nil {
		return nil, err
	}
	if err := n.SetRoutes(spec.Routes); err != nil {
		return nil, err
	}
	if err := n.Start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// addExtra creates a node outside the lock's nodes and registers it, under
// the close lock so that a Close running at the same time removes it too.
func (c *Cluster) addExtra(ctx context.Context, ns nodeSpec) (*Container, error) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil, cluster.ErrClosed
	}
	if _, dup := c.Container(ns.name); dup {
		return nil, fmt.Errorf("docker: a node named %s exists already", ns.name)
	}
	n, err := c.newContainer(ctx, ns)
	if err != nil {
		return nil, err
	}
	c.extraMu.Lock()
	c.extra = append(c.extra, n)
	c.extraMu.Unlock()
	return n, nil
}
