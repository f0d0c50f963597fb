package runner

import (
	"context"
	"errors"
	"strings"
	"time"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/locks"
	"splitbrain/nemesis"
	"splitbrain/scenarios/fit"
	"splitbrain/scenarios/spec"
)

// The control group: locks on consensus systems, Kleppmann's
// recommendation, played under the same faults as Redlock. Their nodes
// are the members of one ensemble of the lock's kind of server (a play
// against zookeeper runs n1..n3 as ZooKeeper servers, against etcd as etcd
// members), reached by each client through its own proxies, as Redis
// nodes are.

// electionSuffix names a ZooKeeper peer link's second proxy: n1 reaches n2's
// quorum port through link n1→n2 and its election port through
// n1→n2:election; a partition between sides cuts both.
const electionSuffix = ":election"

// peerName is the member a link end names: n2 for n2:election.
func peerName(s string) string {
	name, _, _ := strings.Cut(s, ":")
	return name
}

// consensusConfig sets up cfg for a consensus lock: the lock's kind of
// server, and, for a kind whose peer links the shim can route, a proxy on
// every link between two members, made before any member starts; none
// when no fault of the story touches a link (touchesLinks).
func (r *runner) consensusConfig(cfg *cluster.Config) error {
	k := r.sc.LockKind()
	if k == nil || k.Shape != locks.Ensemble {
		return nil
	}
	cfg.Kind = fit.ServerOf(k)
	net, err := newNet(r.sc)(nil, nil)
	if err != nil {
		return err
	}
	r.net = net
	if !cfg.Kind.Supports(fault.PeerLink) || net.Direct() {
		return nil // the members dial each other themselves
	}
	cfg.PeerRoutes = func(members []cluster.Member) (map[string]map[string]string, error) {
		routes := map[string]map[string]string{}
		for _, a := range members {
			routes[a.Name] = map[string]string{}
			for _, b := range members {
				if a.Name == b.Name {
					continue
				}
				for i := range b.PeerPorts {
					name := b.Name
					if i > 0 {
						name += electionSuffix
					}
					via, err := r.peerLink(a.Name, name, b.PeerAddr(i), cfg.Kind)
					if err != nil {
						return nil, err
					}
					routes[a.Name][b.PeerAddr(i)] = via
				}
			}
		}
		return routes, nil
	}
	return nil
}

// peerDialPatience is how long a peer link's proxy dials a member that
// refuses before it gives its dialer up (nemesis.Endpoint.Patience): a
// member binds its peer port only once it has a role that listens there
// (a ZooKeeper leader's quorum port, once it leads), and the follower
// that elected it dials within milliseconds. Without the proxy the
// follower is refused and retries for initLimit ticks (10 s at ours);
// through a proxy that closes the connection it gives up following, and
// the leader waits its whole initLimit for a quorum. 2 s covers the
// leader's start on a loaded machine many times over and stays well
// inside the follower's own budget, so the member sees what it would see
// on a network without the harness.
const peerDialPatience = 2 * time.Second

// peerLink is the proxy from member a to b's peer port at addr: made, or,
// when the backend starts the ensemble again on fresh ports, pointed at
// the new one. Its link faults are the members' kind's to take or refuse
// (b's first peer port; the second, b:election, names no node).
func (r *runner) peerLink(a, b, addr string, kind *cluster.Kind) (string, error) {
	via, err := r.net.Addr(a, b)
	var unknown *nemesis.UnknownLinkError
	if errors.As(err, &unknown) {
		ep := nemesis.Endpoint{Name: b, Addr: addr, Patience: peerDialPatience}
		if peerName(b) == b {
			ep.Kind = kind
		}
		return r.net.AddLink(a, ep)
	}
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return via, r.net.Retarget(ctx, history.Link{Client: a, Node: b}, addr)
}

// addClientLinks puts a proxy on every client↔node link of a net made
// before the nodes started.
func (r *runner) addClientLinks(eps []nemesis.Endpoint) error {
	for _, c := range r.sc.Clients {
		for _, ep := range eps {
			if _, err := r.net.AddLink(c, ep); err != nil {
				return err
			}
		}
	}
	return nil
}

// refusePeerSplit refuses a partition between sides that splits the
// ensemble when its kind cannot route peer links through proxies.
func (r *runner) refusePeerSplit(p spec.Partition) error {
	if !p.SplitsNodes() {
		return nil
	}
	for _, n := range r.cluster.Nodes() {
		if err := n.Kind().Refuse(n.Name(), fault.PeerLink); err != nil {
			return err
		}
	}
	return nil
}
