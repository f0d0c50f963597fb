package adapter

import (
	"context"
	"fmt"

	"splitbrain/cluster"
	"splitbrain/driver"
	"splitbrain/fault"
	"splitbrain/locks"
	"splitbrain/nemesis"
	"splitbrain/workload"
)

// buildDriver starts the client's driver process over the lock's nodes as
// the client reaches them (its proxies) — the user's program (lock.command)
// or the kind's built-in one — and adapts it to workload.Lock
// (driver.Lock), its announced points held at the client's gate.
//
// Its hello says the kind of server and the deployment the kind plays
// (driver.KindColumn), with what a client of that kind needs: ZooKeeper's
// digest user and session timeout, etcd's user, and under Sentinel the
// master's name, the sentinels and a route for every server they may hand
// out.
func buildDriver(ctx context.Context, k *locks.Kind, env Env) (workload.Lock, error) {
	col := driver.KindColumn(k)
	cfg := driver.Config{Name: k.Name, Client: env.Client, Password: env.Password,
		NodeTimeout: env.NodeTimeout, Retries: env.Retries, TTL: env.TTL,
		Server: col.Server, Deployment: col.Deployment, Command: k.Program}
	if k.Command {
		if len(env.Command) == 0 {
			return nil, fmt.Errorf("lock kind %s: no lock.command", k.Name)
		}
		cfg.Command = env.Command
	}
	for _, n := range env.Nodes {
		cfg.Nodes = append(cfg.Nodes, driver.Node{Name: n.Name, Addr: n.Addr})
	}
	switch col.Server {
	case driver.ServerZooKeeper:
		cfg.User = cluster.ZooKeeperUser
		cfg.SessionTimeout = min(env.TTL, cluster.ZooKeeperMaxSession)
	case driver.ServerEtcd:
		cfg.User = cluster.EtcdUser
	}
	if env.Sentinel != nil {
		info, err := sentinelInfo(env.Sentinel)
		if err != nil {
			return nil, fmt.Errorf("client %s: %w", env.Client, err)
		}
		cfg.Server, cfg.Sentinel = driver.ServerSentinel, info
	}
	p, err := env.Rig.StartDriver(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &driver.Lock{Proc: p, Gate: driverGate{env.Gate}}, nil
}

// sentinelInfo is what a driver needs to find the master through the
// sentinels: each sentinel and each server they may hand out as the
// client reaches it (its own proxies).
func sentinelInfo(s *Sentinel) (*driver.SentinelInfo, error) {
	info := &driver.SentinelInfo{Master: s.Master, Routes: map[string]string{}}
	for i, a := range s.Addrs {
		via, err := s.Route(a)
		if err != nil {
			return nil, err
		}
		info.Nodes = append(info.Nodes, driver.Node{Name: fmt.Sprintf("s%d", i+1), Addr: via})
	}
	for _, a := range s.Servers {
		via, err := s.Route(a)
		if err != nil {
			return nil, err
		}
		info.Routes[a] = via
	}
	return info, nil
}

// driverGate holds a driver's client at its gate when it announces a
// point: the scripted pause stories name the same points for a driver as
// for an in-process lock.
type driverGate struct{ g *nemesis.ClientGate }

func (d driverGate) At(ctx context.Context, p string) { d.g.At(ctx, fault.Point(p)) }
