package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"splitbrain/locks"
)

// What a driver claims. Its ready says which kinds of server its lock can
// use (servers), how on Redis (deployments), whether it fences, what its
// lock does not report, and the library and client it runs. The harness
// asks before it starts a server (a describe hello): a story that needs a
// server the lock cannot use is n/a before anything starts.

// Columns are the locks a ready claims, one per kind of server and
// deployment, in the order of Servers: redis over every node (masters),
// redis on n1 (one, with sentinel when it claims Sentinel too),
// zookeeper, etcd. A version 1 driver, which claims nothing, is a Redis
// lock over every node.
func Columns(ready Message) []Column {
	if len(ready.Servers) == 0 {
		return []Column{{Server: ServerRedis, Deployment: DeployMasters}}
	}
	var out []Column
	if slices.Contains(ready.Servers, ServerRedis) {
		for _, d := range Deployments {
			if slices.Contains(ready.Deployments, d) {
				c := Column{Server: ServerRedis, Deployment: d}
				c.Sentinel = d == DeployOne && slices.Contains(ready.Servers, ServerSentinel)
				out = append(out, c)
			}
		}
	}
	for _, s := range []string{ServerZooKeeper, ServerEtcd} {
		if slices.Contains(ready.Servers, s) {
			out = append(out, Column{Server: s, Deployment: DeployEnsemble})
		}
	}
	return out
}

// Column is one lock a driver can be: a kind of server and a deployment.
type Column struct {
	Server     string
	Deployment string
	// Sentinel: on one deployment, the lock finds the master through
	// Sentinel in the Sentinel stories.
	Sentinel bool
}

// Suffix names the column among a driver's others: its deployment on
// Redis, else its server.
func (c Column) Suffix() string {
	if c.Server == ServerRedis {
		return c.Deployment
	}
	return c.Server
}

// Shape is the column's shape of deployment (package locks).
func (c Column) Shape() locks.Shape {
	switch {
	case c.Deployment == DeployEnsemble:
		return locks.Ensemble
	case c.Deployment == DeployOne:
		return locks.OneDeployment
	}
	return locks.Masters
}

// Describe asks the driver what it claims: it starts it with a describe
// hello (no server to connect to), reads its ready and stops it. A
// version 1 driver answers no describe (it dies on a hello without nodes,
// or says ready claiming nothing): its ready is then the empty Message
// and note says so; Columns takes it for a Redis lock over every node.
// The error is for a driver that cannot be started at all.
func Describe(ctx context.Context, command []string, name string, log io.Writer) (ready Message, note string, err error) {
	p, err := Start(ctx, Config{Command: command, Name: name, Client: "describe", Describe: true, Log: log})
	if err != nil {
		var de *Error
		if errors.As(err, &de) && ctx.Err() == nil {
			return Message{}, fmt.Sprintf("it answered no describe hello (%s): taken for a protocol 1 driver, a Redis lock over every node", firstLine(err)), nil
		}
		return Message{}, "", err
	}
	ready = p.Ready()
	// A driver that does not exit when its stdin closes is killed: its
	// ready is what was asked for (driver check's exit says the rest).
	_ = p.Stop(context.WithoutCancel(ctx))
	if len(ready.Servers) == 0 {
		note = "its ready claims no servers: taken for a protocol 1 driver, a Redis lock over every node"
	}
	return ready, note, nil
}

// UserKinds are the lock kinds of a user's driver named name, run by
// command, one per column its ready claims: named name when it claims
// one, name-SUFFIX (Column.Suffix) each when it claims several.
func UserKinds(name string, command []string, ready Message) []*locks.Kind {
	cols := Columns(ready)
	var out []*locks.Kind
	for _, c := range cols {
		k := UserKind(name, command, ready, c)
		if len(cols) > 1 {
			k.Name = name + "-" + c.Suffix()
		}
		out = append(out, k)
	}
	return out
}

// UserKind is the lock kind of a user's driver as column c.
func UserKind(name string, command []string, ready Message, c Column) *locks.Kind {
	about := fmt.Sprintf("a lock driver of yours (%s) on %s", strings.Join(command, " "), c.Server)
	if c.Server == ServerRedis {
		about += ", " + c.Shape().String()
	}
	if lib := ready.Versions(); lib != "" {
		about += "; " + lib
	}
	return &locks.Kind{Name: name, About: about, Server: c.Server, Shape: c.Shape(), Fenced: ready.Fenced,
		Belief: locks.DriverBelief, Driver: true, Sentinel: c.Sentinel, Adapter: "driver",
		Program: slices.Clone(command), Unreported: slices.Clone(ready.Unreported), Unsupported: slices.Clone(ready.Unsupported), User: true}
}

// Versions are the library and client a ready names, joined: "symfony/lock
// 5.4.53, phpredis 5.3.7"; empty when it names neither.
func (m Message) Versions() string {
	var parts []string
	for _, s := range []string{m.Library, m.ClientLibrary} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// Claims says whether a ready claims column c: a version 1 driver claims
// a Redis lock over every node and nothing else.
func (m Message) Claims(c Column) bool {
	return slices.ContainsFunc(Columns(m), func(o Column) bool {
		return o.Server == c.Server && o.Deployment == c.Deployment && (o.Sentinel || !c.Sentinel)
	})
}

// KindColumn is the column lock kind k plays: its server and deployment.
func KindColumn(k *locks.Kind) Column {
	switch k.Shape {
	case locks.Ensemble:
		return Column{Server: k.Server, Deployment: DeployEnsemble}
	case locks.OneDeployment:
		return Column{Server: ServerRedis, Deployment: DeployOne, Sentinel: k.Sentinel}
	}
	return Column{Server: ServerRedis, Deployment: DeployMasters}
}
