package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/driver"
	"splitbrain/locks"
	"splitbrain/locks/adapter"
	"splitbrain/nemesis"
	"splitbrain/redlock"
	"splitbrain/scenarios/spec"
	"splitbrain/workload"
)

// newLock builds client's instance of the lock under test: package locks
// says what the kind is, locks/adapter builds it from what the run gives
// it (adapter.Env): the nodes of the kind's shape as the client reaches
// them (its own proxies), its gate, the lock's parameters, and the
// connections and processes the run keeps for it (lockRig).
func (r *runner) newLock(client string, eps []nemesis.Endpoint, password string) (workload.Lock, error) {
	k := r.sc.LockKind()
	if k == nil {
		return nil, fmt.Errorf("lock kind %q: want one of %s", r.sc.Lock.Kind, locks.Or(locks.Names()))
	}
	if k.Shape == locks.OneDeployment {
		eps = eps[:1]
	}
	env := adapter.Env{
		Client: client, Password: password,
		TTL: r.sc.Lock.TTL, NodeTimeout: r.sc.Lock.NodeTimeout, Retries: r.sc.Lock.Retries, Command: r.sc.Lock.Command,
		SessionPerClient: r.sc.Lock.Session == spec.SessionClient,
		Gate:             r.faults.gates[client], Hooks: r.hooks(client), Logf: r.logf, Blackholed: r.net.Blackholed,
		Rig: lockRig{r: r, client: client, kind: k, password: password},
	}
	for _, ep := range eps {
		addr, err := r.net.Addr(client, ep.Name)
		if err != nil {
			return nil, err
		}
		env.Nodes = append(env.Nodes, adapter.Node{Name: ep.Name, Addr: addr})
	}
	if r.sentinel != nil && k.Sentinel {
		env.Sentinel = r.sentinelRoute(client)
	}
	return adapter.Build(context.Background(), k, env)
}

// lockRig is what the run does for one client's lock (adapter.Rig).
type lockRig struct {
	r        *runner
	client   string
	kind     *locks.Kind
	password string
}

// Redis implements adapter.Rig: the client's connection to node through
// its proxy, or under Sentinel the failover client to the master, kept
// with the run's connections and connected now, so that the first lock
// attempt measures the lock, not the connection handshake, against its
// per-node timeout. A slow first dial is tried again (UntilConnected).
func (l lockRig) Redis(_ context.Context, node adapter.Node, readTimeout time.Duration) (*redis.Client, error) {
	r := l.r
	opts := redlock.ClientOptions(node.Addr, l.password)
	if readTimeout > 0 {
		opts.ReadTimeout = readTimeout
	}
	var c *redis.Client
	if r.sentinel != nil && l.kind.Sentinel {
		c = r.newFailoverClient(l.client, l.password, opts.ReadTimeout)
		r.sentinel.clients = append(r.sentinel.clients, c)
	} else {
		c = redis.NewClient(opts)
	}
	r.conns = append(r.conns, c)
	connect := func(ctx context.Context) error { return c.Ping(ctx).Err() }
	if r.sentinel != nil {
		// go-redis keeps its pipelines' connections in a pool of their
		// own (wait-replicas pipelines every script with its WAIT), and
		// a failover client's dial first asks a sentinel: under a
		// partition that cut the client from the sentinel it asked
		// last (sentinel-partition), the lock's first pipeline would
		// wait out read timeouts on the sentinel instead of talking to
		// the master it can reach. Both pools are filled before the
		// story starts, as a running client's are.
		connect = func(ctx context.Context) error {
			if err := c.Ping(ctx).Err(); err != nil {
				return err
			}
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() })
			return err
		}
	}
	if err := adapter.UntilConnected(connect); err != nil {
		return nil, fmt.Errorf("client %s: connecting to %s: %w", l.client, node.Name, err)
	}
	return c, nil
}

// OnClose implements adapter.Rig: close runs with the run's clean-up.
func (l lockRig) OnClose(close func()) { l.r.closers = append(l.r.closers, close) }

// AfterFailover implements adapter.Rig: ping is asked after a Sentinel
// promotion until the lock reaches the new master (setup_sentinel.go).
func (l lockRig) AfterFailover(ping func(context.Context) error) {
	l.r.sentinel.pingers = append(l.r.sentinel.pingers, ping)
}

// StartDriver implements adapter.Rig (setup_drivers.go).
func (l lockRig) StartDriver(ctx context.Context, cfg driver.Config) (*driver.Proc, error) {
	return l.r.startDriver(ctx, cfg)
}
