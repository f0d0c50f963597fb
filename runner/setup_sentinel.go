package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/locks/adapter"
	"splitbrain/nemesis"
	"splitbrain/redlock"
	"splitbrain/scenarios/spec"
	"splitbrain/workload"
)

// sidesLinks are the proxied links between different sides.
func sidesLinks(all []history.Link, sides [][]string) []history.Link {
	side := map[string]int{}
	for i, s := range sides {
		for _, n := range s {
			side[n] = i + 1
		}
	}
	var out []history.Link
	for _, l := range all {
		// A ZooKeeper member's second peer link is n2:election.
		a, b := side[peerName(l.Client)], side[peerName(l.Node)]
		if a != 0 && b != 0 && a != b {
			out = append(out, l)
		}
	}
	return out
}

// sentinelRig is what a run with Sentinel has beyond the replicas: the
// sentinels, the servers' names by address (Sentinel and the clients
// speak in addresses), and the watch that records each promotion.
type sentinelRig struct {
	sentinels []cluster.Node
	// admins are the harness's own connections to the sentinels, straight
	// to them (no proxy): it observes, it takes no part.
	admins []*redis.Client
	byAddr map[string]string
	// clients are the lock clients' failover clients, which find the
	// master through the sentinels.
	clients []*redis.Client
	// pingers ask the master through the lock clients that are not
	// go-redis' (rueidislock's rueidis Sentinel client).
	pingers []func(context.Context) error

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	master   string // the node Sentinel says is master
	promoted chan struct{}
	faultID  int // the record of the current master's term
}

// dataNodes are n1 and its replicas, which Sentinel fails over among.
func (r *runner) dataNodes() ([]cluster.Node, error) {
	names := append([]string{"n1"}, r.sc.ReplicasOf("n1")...)
	var out []cluster.Node
	for _, name := range names {
		n, err := r.node(name)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// link is the proxy address from dialer to node, made if missing.
func (r *runner) link(dialer string, node cluster.Node) (string, error) {
	return r.linkTo(dialer, node.Name(), node.Addr())
}

func (r *runner) linkTo(dialer, name, addr string) (string, error) {
	via, err := r.net.Addr(dialer, name)
	var unknown *nemesis.UnknownLinkError
	if errors.As(err, &unknown) {
		ep := nemesis.Endpoint{Name: name, Addr: addr}
		if n, ok := r.cluster.Node(name); ok {
			ep.Kind = n.Kind()
		}
		return r.net.AddLink(dialer, ep)
	}
	return via, err
}

type routable interface {
	SetRoutes(map[string]string) error
}

// setUpSentinels starts the sentinels over n1 and its replicas (started
// already) with every link between them through a proxy: every server
// knows the others by their own addresses, as Sentinel hands them around,
// and each process's routes send its connections to them through its own
// proxies. It then waits until every sentinel knows the replicas and the
// other sentinels, without which there is no failover to watch.
func (r *runner) setUpSentinels(ctx context.Context) error {
	sent := r.sc.Sentinel
	ss, ok := r.cluster.(cluster.SentinelStarter)
	if !ok {
		return fmt.Errorf("%s: cluster.sentinel: %w", r.sc.File,
			&cluster.UnsupportedError{Kind: cluster.Sentinel.Name, Fault: fault.Replica, Backend: true})
	}
	data, err := r.dataNodes()
	if err != nil {
		return err
	}
	rig := &sentinelRig{byAddr: map[string]string{}, master: "n1", promoted: make(chan struct{})}
	r.sentinel = rig
	for _, n := range data {
		rig.byAddr[n.Addr()] = n.Name()
	}
	// Replicas replicate, and Sentinel makes the old master follow the
	// new one: every data node may dial every other.
	for _, d := range data {
		routes := map[string]string{}
		for _, e := range data {
			if e == d {
				continue
			}
			if routes[e.Addr()], err = r.link(d.Name(), e); err != nil {
				return err
			}
		}
		rt, ok := d.(routable)
		if !ok {
			return fmt.Errorf("%s: cluster.sentinel: %w", r.sc.File,
				&cluster.UnsupportedError{Kind: cluster.Sentinel.Name, Fault: fault.Link, Node: d.Name(), Backend: true})
		}
		if err := rt.SetRoutes(routes); err != nil {
			return err
		}
	}
	names := spec.SentinelNames(sent.Count)
	addrs, err := ss.ReserveSentinels(len(names))
	if err != nil {
		return err
	}
	for i, a := range addrs {
		rig.byAddr[a] = names[i]
	}
	cfg := cluster.SentinelConfig{Master: data[0].Addr(), Quorum: sent.Quorum, DownAfter: sent.DownAfter, FailoverTimeout: sent.FailoverTimeout}
	for i, name := range names {
		routes := map[string]string{}
		for _, d := range data {
			if routes[d.Addr()], err = r.link(name, d); err != nil {
				return err
			}
		}
		for j, other := range names {
			if j == i {
				continue
			}
			if routes[addrs[j]], err = r.linkTo(name, other, addrs[j]); err != nil {
				return err
			}
		}
		s, err := ss.AddSentinel(ctx, cluster.SentinelSpec{Name: name, Addr: addrs[i], Config: cfg, Routes: routes})
		if err != nil {
			return err
		}
		rig.sentinels = append(rig.sentinels, s)
		rig.admins = append(rig.admins, redis.NewClient(&redis.Options{Addr: s.Addr(), Password: r.cluster.Password(),
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}))
	}
	r.logf("started %d sentinels watching n1 (quorum %d, down after %v, failover timeout %v): %s",
		len(names), sent.Quorum, sent.DownAfter, sent.FailoverTimeout, nodeAddrs(rig.sentinels))
	// The clients reach every server through their own proxies too.
	for _, c := range r.sc.Clients {
		for _, d := range data[1:] {
			if _, err := r.link(c, d); err != nil {
				return err
			}
		}
		for i, name := range names {
			if _, err := r.linkTo(c, name, addrs[i]); err != nil {
				return err
			}
		}
	}
	if err := r.waitSentinelsKnow(ctx, len(data)-1, len(names)-1); err != nil {
		return err
	}
	r.watchSentinels(ctx)
	return nil
}

func nodeAddrs(ns []cluster.Node) string {
	var parts []string
	for _, n := range ns {
		parts = append(parts, n.Name()+"="+n.Addr())
	}
	return strings.Join(parts, " ")
}

// sentinelSetUpTimeout bounds the wait for the sentinels to find each
// other: their hello messages go out every 2 s.
const sentinelSetUpTimeout = 20 * time.Second

func (r *runner) waitSentinelsKnow(ctx context.Context, replicas, others int) error {
	ctx, cancel := context.WithTimeout(ctx, sentinelSetUpTimeout)
	defer cancel()
	start := time.Now()
	for {
		ready, last := true, ""
		for i, s := range r.sentinel.sentinels {
			m, err := cluster.SentinelMasterInfo(ctx, r.sentinel.admins[i])
			if err != nil || m["num-slaves"] != fmt.Sprint(replicas) || m["num-other-sentinels"] != fmt.Sprint(others) {
				ready = false
				last = fmt.Sprintf("%s: %v replicas %s, other sentinels %s", s.Name(), err, m["num-slaves"], m["num-other-sentinels"])
				break
			}
		}
		if ready {
			r.logf("the sentinels know the %d replicas and each other after %v", replicas, time.Since(start).Round(time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinels: not set up after %v (%s): %w", sentinelSetUpTimeout, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// watchSentinels records every change of master Sentinel announces
// (+switch-master, from any sentinel: one cut off from the others may
// never hear of it) as a fault on the new master's lane, lasting its
// term, so that the report shows which node was master when. The watch
// listens on the harness's own connections, not through the proxies: it
// observes, it takes no part.
func (r *runner) watchSentinels(ctx context.Context) {
	rig := r.sentinel
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rig.cancel = cancel
	for i, s := range rig.sentinels {
		sub := rig.admins[i].Subscribe(wctx, "+switch-master")
		rig.wg.Go(func() {
			defer sub.Close()
			ch := sub.Channel()
			for {
				select {
				case <-wctx.Done():
					return
				case m, ok := <-ch:
					if !ok {
						return
					}
					r.switchMaster(wctx, s.Name(), m.Payload)
				}
			}
		})
	}
}

// switchMaster records a +switch-master payload: "<name> <old ip> <old
// port> <new ip> <new port>".
func (r *runner) switchMaster(ctx context.Context, from, payload string) {
	f := strings.Fields(payload)
	if len(f) != 5 {
		return
	}
	rig := r.sentinel
	oldName, newName := rig.byAddr[net.JoinHostPort(f[1], f[2])], rig.byAddr[net.JoinHostPort(f[3], f[4])]
	if newName == "" {
		newName = net.JoinHostPort(f[3], f[4])
	}
	rig.mu.Lock()
	defer rig.mu.Unlock()
	if newName == rig.master {
		return // another sentinel's word of the same switch
	}
	if rig.faultID != 0 {
		_ = r.nem.Stop(ctx, rig.faultID)
	}
	id, err := r.nem.Start(ctx, sentinelPromotion{Node: newName, Old: oldName, By: from})
	if err == nil {
		rig.faultID = id
	}
	r.logf("Sentinel promoted %s (was %s), announced by %s", newName, oldName, from)
	if rig.master == "n1" {
		close(rig.promoted)
	}
	rig.master = newName
}

// stopWatch ends the watch, before the nemesis heals everything.
func (rig *sentinelRig) stopWatch() {
	if rig == nil {
		return
	}
	if rig.cancel != nil {
		rig.cancel()
		rig.wg.Wait()
	}
	for _, c := range rig.admins {
		_ = c.Close()
	}
	rig.admins = nil
}

// waitPromoted waits until Sentinel has promoted a replica.
func (r *runner) waitPromoted(ctx context.Context, timeout time.Duration) error {
	if r.sentinel == nil {
		return errors.New("wait until promoted: this run has no Sentinel (cluster.sentinel)")
	}
	r.logf("wait until Sentinel promotes a replica (at most %v)", timeout)
	start := time.Now()
	select {
	case <-r.sentinel.promoted:
		r.logf("promoted after %v", time.Since(start).Round(time.Millisecond))
		r.freshenClients(ctx)
		return nil
	case <-ctx.Done():
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("wait until promoted: no promotion after %v: %w", timeout, ErrWaitTimeout)
	}
}

// freshenClients spends the lock clients' dead connections once Sentinel
// promoted a replica. Promoting it, Sentinel kills its client connections
// (CLIENT KILL TYPE normal), and the master the clients knew is gone: a
// pooled connection to either answers its next command with EOF. A go-redis
// user never sees that (MaxRetries is 3 by default); the lock clients here
// never retry, so that an outcome is what the server did, and a story's
// next acquire would come out unknown (seen under load). The harness pings
// through each client until one answers, for at most 2 s: its own
// commands, not the lock's, and not recorded.
func (r *runner) freshenClients(ctx context.Context) {
	gctx, gcancel := context.WithTimeout(ctx, 2*time.Second)
	defer gcancel()
	for _, c := range r.sentinel.clients {
		dropped := 0
		for c.Ping(gctx).Err() != nil && gctx.Err() == nil {
			dropped++
			workload.Sleep(gctx, 20*time.Millisecond)
		}
		if dropped > 0 {
			r.logf("a lock client's first %d ping(s) after the promotion failed (connections Sentinel or the old master's death closed)", dropped)
		}
	}
	// rueidis follows the +switch-master of the one sentinel it listens
	// to, which may hear of the promotion only from the next hello
	// message of its leader (every 2 s; seen: 1.3 s after the harness
	// heard it): until then its pings go to the old master, dead or cut
	// off, so each is given a short while, and all of them 5 s.
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	for _, ping := range r.sentinel.pingers {
		dropped := 0
		for rctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(rctx, 200*time.Millisecond)
			err := ping(pctx)
			pcancel()
			if err == nil {
				break
			}
			dropped++
			workload.Sleep(rctx, 20*time.Millisecond)
		}
		if dropped > 0 {
			r.logf("a lock client's first %d ping(s) after the promotion failed (rueidis had not yet followed the promotion)", dropped)
		}
	}
}

// sentinelPromotion is Sentinel's promotion as the history records it:
// the nemesis did not inject it, Sentinel did; it is recorded through the
// nemesis so that it lies on the timeline beside the faults that caused
// it. Its heal undoes nothing: it ends the node's term as master.
type sentinelPromotion struct {
	Node, Old, By string
}

// KindSentinelPromote is the history's kind for a Sentinel failover.
const KindSentinelPromote = "sentinel-failover"

func (p sentinelPromotion) Describe() history.Fault {
	return history.Fault{Kind: KindSentinelPromote, Nodes: []string{p.Node},
		Detail: fmt.Sprintf("Sentinel promoted %s, master from here on (was %s; +switch-master from %s)", p.Node, p.Old, p.By)}
}

func (p sentinelPromotion) Inject(context.Context) (nemesis.Heal, error) {
	return func(context.Context) error { return nil }, nil
}

// sentinelRoute is how client finds the master through the run's
// sentinels: each address it dials, a sentinel's or the master's as
// announced, goes through the client's own proxy to that server.
func (r *runner) sentinelRoute(client string) *adapter.Sentinel {
	rig := r.sentinel
	s := &adapter.Sentinel{Master: cluster.SentinelMaster, Route: func(addr string) (string, error) {
		name, ok := rig.byAddr[addr]
		if !ok {
			return "", fmt.Errorf("client %s: %s is none of this run's servers", client, addr)
		}
		return r.net.Addr(client, name)
	}}
	for _, n := range rig.sentinels {
		s.Addrs = append(s.Addrs, n.Addr())
	}
	if data, err := r.dataNodes(); err == nil {
		for _, n := range data {
			s.Servers = append(s.Servers, n.Addr())
		}
	}
	return s
}

// newFailoverClient is client's connection to whichever node Sentinel
// says is master, found as a real client finds it: go-redis's failover
// client asks the sentinels (sentinelRoute).
func (r *runner) newFailoverClient(client, password string, readTimeout time.Duration) *redis.Client {
	s := r.sentinelRoute(client)
	base := redlock.ClientOptions("", password)
	var d net.Dialer
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:       s.Master,
		SentinelAddrs:    s.Addrs,
		SentinelPassword: password,
		Password:         password,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			via, err := s.Route(addr)
			if err != nil {
				return nil, err
			}
			return d.DialContext(ctx, network, via)
		},
		MaxRetries:      base.MaxRetries,
		DialTimeout:     base.DialTimeout,
		ReadTimeout:     readTimeout,
		WriteTimeout:    base.WriteTimeout,
		PoolSize:        base.PoolSize,
		PoolTimeout:     base.PoolTimeout,
		DisableIdentity: true,
	})
}
