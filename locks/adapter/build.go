// Package adapter makes the lock kinds package locks describes: each
// kind's adapter to workload.Lock (ours, third-party libraries, locks on
// consensus systems) and the builder that makes one client's instance of
// it from what the run gives it (Env). It imports the servers' clients,
// which the scenario parser must not (see package locks), so a kind's data
// stays there and its building here, one file per adapter.
package adapter

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/driver"
	"splitbrain/locks"
	"splitbrain/nemesis"
	"splitbrain/redlock"
	"splitbrain/workload"
)

// Builder makes one client's instance of lock kind k.
type Builder func(ctx context.Context, k *locks.Kind, env Env) (workload.Lock, error)

// Builders are the builders by name (locks.Kind.Adapter).
var Builders = map[string]Builder{
	"redlock":       buildRedlock,
	"redsync":       buildRedsync,
	"redislock":     buildRedislock,
	"wait-replicas": buildWaitReplicas,
	"rueidislock":   buildRueidislock,
	"zookeeper":     buildZooKeeper,
	"etcd":          buildEtcd,
	"etcd-v3lock":   buildEtcd,
	"driver":        buildDriver,
}

// Build makes client env.Client's instance of lock kind k.
func Build(ctx context.Context, k *locks.Kind, env Env) (workload.Lock, error) {
	b, ok := Builders[k.Adapter]
	if !ok {
		return nil, fmt.Errorf("lock kind %s: no adapter %q", k.Name, k.Adapter)
	}
	return b(ctx, k, env)
}

// Env is what the run gives a builder for one client, filled by the
// runner: values, and the few things only the runner can do (Rig).
type Env struct {
	Client string
	// Nodes are the lock's nodes as the client reaches them (through its
	// own proxies), in order: every node, n1 alone or the ensemble's
	// members, by the kind's shape.
	Nodes    []Node
	Password string
	// TTL, NodeTimeout and Retries are the scenario's lock.ttl,
	// lock.node_timeout and lock.retries.
	TTL         time.Duration
	NodeTimeout time.Duration
	Retries     int
	// SessionPerClient: etcd's client mutex takes one session per client
	// (lock.session: client), kept alive in the background, for every
	// acquisition, instead of a lease of its own per acquisition.
	SessionPerClient bool
	// Command is lock.command, a user's driver program.
	Command []string
	// Gate holds the client at the hook points (client pauses).
	Gate *nemesis.ClientGate
	// Blackholed, when set, says whether a node's address is cut
	// (nemesis.Net.Blackholed): a dialer that asks fails its connect
	// there as on a partitioned network instead of handshaking into a
	// proxy that drops every byte.
	Blackholed func(addr string) bool
	// Hooks are our lock's hooks, which pass the Gate.
	Hooks redlock.Hooks
	// Sentinel is how the clients find the master when the story runs
	// Sentinel; nil otherwise.
	Sentinel *Sentinel
	Logf     func(format string, args ...any)
	Rig      Rig
}

// Node is one of the lock's nodes as a client reaches it.
type Node struct {
	Name string
	Addr string
}

// Sentinel is what a lock client needs to find the master through the
// run's sentinels.
type Sentinel struct {
	// Master is the master set's name; Addrs the sentinels' addresses.
	Master string
	Addrs  []string
	// Route is the client's own proxy to the server at addr (a
	// sentinel's, or a master's as announced), which the client dials
	// instead.
	Route func(addr string) (string, error)
	// Servers are the addresses of the Redis servers the sentinels may
	// hand out (n1 and its replicas), which a driver is given routes for.
	Servers []string
}

// Rig is what the runner does for a builder: the connections and
// processes it keeps for the run and closes with it.
type Rig interface {
	// Redis is the client's go-redis connection to node, connected (a
	// failover client to the master under Sentinel); readTimeout zero
	// keeps redlock.ClientOptions'.
	Redis(ctx context.Context, node Node, readTimeout time.Duration) (*redis.Client, error)
	// OnClose runs close when the run's lock clients are closed.
	OnClose(close func())
	// AfterFailover has the runner call ping after a Sentinel promotion
	// until the lock reaches the new master.
	AfterFailover(ping func(context.Context) error)
	// StartDriver starts the client's driver process, its registry entry
	// and log set by the runner; an empty cfg.Command runs the built-in
	// driver cfg.Name.
	StartDriver(ctx context.Context, cfg driver.Config) (*driver.Proc, error)
}

// UntilConnected runs connect until it succeeds, every 50 ms for up to
// 10 s: a lock client's options fail at their first timeout, as the lock
// wants, but setting up is not the lock's business, and on a machine busy
// compiling one dial can take longer than that. A dial the kernel had no
// local port for is not retried: it says so (cluster.NoLocalPort).
func UntilConnected(connect func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := connect(ctx)
	for err != nil && ctx.Err() == nil {
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			return cluster.NoLocalPort(err)
		}
		workload.Sleep(ctx, 50*time.Millisecond)
		err = connect(ctx)
	}
	return cluster.NoLocalPort(err)
}

// redisConns are the client's connections to the lock's nodes, in order.
func redisConns(ctx context.Context, env Env, readTimeout time.Duration) ([]*redis.Client, []string, error) {
	var conns []*redis.Client
	var names []string
	for _, n := range env.Nodes {
		c, err := env.Rig.Redis(ctx, n, readTimeout)
		if err != nil {
			return nil, nil, err
		}
		conns = append(conns, c)
		names = append(names, n.Name)
	}
	return conns, names, nil
}
