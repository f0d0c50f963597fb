package adapter

import (
	"context"
	"fmt"

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
func buildDriver(ctx context.Context, k *locks.Kind, env Env) (workload.Lock, error) {
	cfg := driver.Config{Name: k.Name, Client: env.Client, Password: env.Password,
		NodeTimeout: env.NodeTimeout, Retries: env.Retries}
	if k.Command {
		if len(env.Command) == 0 {
			return nil, fmt.Errorf("lock kind %s: no lock.command", k.Name)
		}
		cfg.Command = env.Command
	}
	for _, n := range env.Nodes {
		cfg.Nodes = append(cfg.Nodes, driver.Node{Name: n.Name, Addr: n.Addr})
	}
	p, err := env.Rig.StartDriver(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &driver.Lock{Proc: p, Gate: driverGate{env.Gate}}, nil
}

// driverGate holds a driver's client at its gate when it announces a
// point: the scripted pause stories name the same points for a driver as
// for an in-process lock.
type driverGate struct{ g *nemesis.ClientGate }

func (d driverGate) At(ctx context.Context, p string) { d.g.At(ctx, fault.Point(p)) }
