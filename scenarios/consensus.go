package scenarios

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/nemesis"
	"splitbrain/scenarios/spec"
	"splitbrain/workload"
)

// The control group: locks on consensus systems, Kleppmann's
// recommendation, played under the same faults as Redlock. Their nodes
// are the members of one ensemble of the lock's kind of server (a play
// against zookeeper runs n1..n3 as ZooKeeper servers, against etcd as etcd
// members), reached by each client through its own proxies, as Redis
// nodes are.

// ServerKind is the kind of server lock kind k runs on.
func ServerKind(k string) *cluster.Kind {
	switch k {
	case spec.LockZooKeeper:
		return cluster.ZooKeeper
	case spec.LockEtcd, spec.LockEtcdV3Lock:
		return cluster.Etcd
	}
	return cluster.Redis
}

// consensusNodes is the size of the ensembles the consensus locks run on.
const consensusNodes = 3

// fitConsensus says whether a story fits consensus lock k, and why not: a
// story written for Redis nodes makes no claim about a consensus lock
// unless its expect names the lock, and some cannot be played at all.
func fitConsensus(sc *spec.Scenario, k string) (bool, string) {
	kind := ServerKind(k)
	switch {
	case sc.Sentinel != nil || len(sc.Replicas) > 0:
		return false, fmt.Sprintf("a Redis replication story: %s replicates through its own consensus, there is no asynchronous replica to cut off or promote", kind.Name)
	case sc.Nodes != consensusNodes:
		return false, fmt.Sprintf("a story of %d independent Redis masters; %s runs on a %d-member ensemble, whose members are not independent: the story's grants and refusals do not carry over", sc.Nodes, k, consensusNodes)
	}
	for _, p := range sc.Persistence {
		if p != spec.PersistNone {
			return false, fmt.Sprintf("a Redis persistence story (%s); %s always writes its log to disk before it acknowledges", p, kind.Name)
		}
	}
	for _, st := range sc.Steps {
		if f, ok := stepFault(st); ok {
			if err := kind.Refuse("", f); err != nil {
				return false, fmt.Sprintf("its step at line %d (%s) needs %s, which %s nodes do not support%s", st.Line, st.Kind, f, kind.Name, refusalReason(kind, f))
			}
		}
		if st.Kind == spec.StepPartition && st.Shape == spec.ShapeSides && splitsNodes(st.Sides) {
			if err := kind.Refuse("", cluster.FaultPeerLink); err != nil {
				return false, fmt.Sprintf("its partition at line %d splits the ensemble, which needs %s%s", st.Line, cluster.FaultPeerLink, refusalReason(kind, cluster.FaultPeerLink))
			}
		}
	}
	if _, named := sc.Expects[k]; !named {
		return false, fmt.Sprintf("the story states no expectation for %s: its expect speaks of Redis locks (a consensus lock's cell needs a claim made for it)", k)
	}
	return true, ""
}

// stepFault is the node fault a step needs, if any.
func stepFault(st spec.Step) (cluster.Fault, bool) {
	switch st.Kind {
	case spec.StepClock, spec.StepStrobe, spec.StepClockReset:
		return cluster.FaultClock, true
	case spec.StepKill, spec.StepStop:
		if st.Amnesia {
			return cluster.FaultWipe, true
		}
		if st.Kind == spec.StepKill {
			return cluster.FaultKill, true
		}
		return cluster.FaultStop, true
	case spec.StepPause:
		if st.Node != "" {
			return cluster.FaultPause, true
		}
	case spec.StepRandom:
		for _, f := range st.Schedule.Kinds {
			switch f {
			case "clock":
				return cluster.FaultClock, true
			case "amnesia":
				return cluster.FaultWipe, true
			}
		}
	}
	return "", false
}

func refusalReason(k *cluster.Kind, f cluster.Fault) string {
	if k == cluster.Etcd {
		switch f {
		case cluster.FaultClock:
			return " (etcd is a Go binary: it reads its clock through the vDSO, not libc, so the clock shim cannot move it)"
		case cluster.FaultPeerLink:
			return " (etcd is a Go binary: the shim cannot route its connections to its peers, and its members must agree on each other's addresses, so no proxy per dialer can stand between them)"
		case cluster.FaultWipe:
			return " (a wiped etcd member cannot rejoin as itself: etcd wants it removed and added as a new member)"
		}
	}
	return ""
}

// splitsNodes reports whether a partition's sides put lock nodes on
// different sides (a split of the ensemble itself).
func splitsNodes(sides [][]string) bool {
	with := 0
	for _, s := range sides {
		if slices.ContainsFunc(s, func(n string) bool { return strings.HasPrefix(n, "n") }) {
			with++
		}
	}
	return with > 1
}

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
	k := r.sc.Lock.Kind
	if !spec.Consensus(k) {
		return nil
	}
	cfg.Kind = ServerKind(k)
	net, err := newNet(r.sc)(nil, nil)
	if err != nil {
		return err
	}
	r.net = net
	if !cfg.Kind.Supports(cluster.FaultPeerLink) || net.Direct() {
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
					via, err := r.peerLink(a.Name, name, b.PeerAddr(i))
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

// peerLink is the proxy from member a to b's peer port at addr: made, or,
// when the backend starts the ensemble again on fresh ports, pointed at
// the new one.
func (r *runner) peerLink(a, b, addr string) (string, error) {
	via, err := r.net.Addr(a, b)
	var unknown *nemesis.UnknownLinkError
	if errors.As(err, &unknown) {
		return r.net.AddLink(a, nemesis.Endpoint{Name: b, Addr: addr})
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

// consensusSetUpTimeout bounds a client's first session or connection.
const consensusSetUpTimeout = 30 * time.Second

// newConsensusLock builds client's consensus lock: its own session with
// the ensemble through its own proxies, and client's gate at the lock's
// points (after-acquire, before-release; the recipes have no point between
// replies and a validity check).
func (r *runner) newConsensusLock(client string, eps []nemesis.Endpoint, password string) (workload.Lock, error) {
	var addrs []string
	for _, ep := range eps {
		addr, err := r.net.Addr(client, ep.Name)
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, addr)
	}
	g := r.faults.gates[client]
	ttl := r.sc.Lock.TTL
	var wait time.Duration
	if r.sc.Lock.Retries > 1 {
		wait = time.Duration(r.sc.Lock.Retries) * ttl
	}
	ctx, cancel := context.WithTimeout(context.Background(), consensusSetUpTimeout)
	defer cancel()
	switch r.sc.Lock.Kind {
	case spec.LockZooKeeper:
		timeout := min(ttl, cluster.ZooKeeperMaxSession)
		conn, _, err := cluster.DialZooKeeper(ctx, addrs, timeout, password, func(e zk.Event) {
			if e.Type == zk.EventSession && (e.State == zk.StateExpired || e.State == zk.StateDisconnected) {
				r.logf("%s: ZooKeeper session event: %s", client, e.State)
			}
		}, gatedDialer(g))
		if err != nil {
			return nil, fmt.Errorf("client %s: %w", client, err)
		}
		r.closers = append(r.closers, func() { conn.Close() })
		return gatedLock{Lock: &workload.ZooKeeperLock{Conn: conn, SessionTimeout: timeout,
			ACL: cluster.ZooKeeperACL(password), Wait: wait}, gate: g}, nil
	case spec.LockEtcd, spec.LockEtcdV3Lock:
		c, err := cluster.DialEtcd(addrs, password, 5*time.Second)
		if err != nil {
			return nil, fmt.Errorf("client %s: %w", client, err)
		}
		r.closers = append(r.closers, func() { _ = c.Close() })
		// Connect (and log in) now, so that the first acquire measures the
		// lock, not the handshake.
		for _, err = c.Get(ctx, "/"); err != nil && ctx.Err() == nil; _, err = c.Get(ctx, "/") {
			workload.Sleep(ctx, 50*time.Millisecond)
		}
		if err != nil {
			return nil, fmt.Errorf("client %s: connecting to the etcd members: %w", client, err)
		}
		return gatedLock{Lock: &workload.EtcdLock{Client: c, Wait: wait, V3Lock: r.sc.Lock.Kind == spec.LockEtcdV3Lock}, gate: g}, nil
	}
	return nil, fmt.Errorf("lock kind %q is not a consensus lock", r.sc.Lock.Kind)
}

// gatedDialer makes the ZooKeeper client's connections pass client's gate
// on every read and write: its pings run on goroutines of their own, which
// a client pause would not stop, while a real stop-the-world pause stops
// them with everything else. Held at the gate, they send nothing and read
// nothing; the kernel keeps what arrives meanwhile, as it would for a
// stopped process, and the session times out on the servers.
func gatedDialer(g *nemesis.ClientGate) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return gatedConn{Conn: c, gate: g}, nil
	}
}

type gatedConn struct {
	net.Conn
	gate *nemesis.ClientGate
}

func (c gatedConn) Read(b []byte) (int, error) {
	c.gate.At(context.Background(), fault.Background)
	return c.Conn.Read(b)
}

func (c gatedConn) Write(b []byte) (int, error) {
	c.gate.At(context.Background(), fault.Background)
	return c.Conn.Write(b)
}

// refusePeerSplit refuses a partition between sides that splits the
// ensemble when its kind cannot route peer links through proxies.
func (r *runner) refusePeerSplit(sides [][]string) error {
	if !splitsNodes(sides) {
		return nil
	}
	for _, n := range r.cluster.Nodes() {
		if err := n.Kind().Refuse(n.Name(), cluster.FaultPeerLink); err != nil {
			return err
		}
	}
	return nil
}
