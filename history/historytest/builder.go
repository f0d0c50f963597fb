// Package historytest builds hand-written histories for tests of the
// packages that read histories (checker, pages).
package historytest

import (
	"time"

	"splitbrain/history"
)

// Builder assembles a history event by event; times are in seconds since
// the run started.
type Builder struct{ events []history.Event }

// Sec converts seconds to the history's nanoseconds.
func Sec(s float64) int64 { return int64(s * float64(time.Second)) }

// Mod changes an event before it is added.
type Mod func(*history.Event)

// Deadline sets a granted lease's validity deadline.
func Deadline(s float64) Mod { return func(e *history.Event) { d := Sec(s); e.Deadline = &d } }

// TTL sets the time to live an acquire or extend asked for.
func TTL(s float64) Mod { return func(e *history.Event) { e.TTL = Sec(s) } }

// Lease sets the lock value of the lease a resource operation ran under.
func Lease(v string) Mod { return func(e *history.Event) { e.Lease = v } }

// Nodes sets the nodes that granted or released.
func Nodes(n ...string) Mod { return func(e *history.Event) { e.Nodes = n } }

// Value sets a string value (a lock value).
func Value(v string) Mod { return func(e *history.Event) { e.Value = history.MustValue(v) } }

// Err sets the error text.
func Err(s string) Mod { return func(e *history.Event) { e.Err = s } }

// Add appends one event at time at.
func (b *Builder) Add(p string, typ history.Type, f history.Func, key string, at float64, mods ...Mod) *Builder {
	e := history.Event{Index: int64(len(b.events)), Process: p, Type: typ, F: f, Key: key, Time: Sec(at)}
	for _, m := range mods {
		m(&e)
	}
	b.events = append(b.events, e)
	return b
}

// Acquire appends an acquire invoked at inv that succeeded at ok, granted
// by n1..n3, valid until dl.
func (b *Builder) Acquire(p, key string, inv, ok, dl float64) *Builder {
	b.Add(p, history.Invoke, history.Acquire, key, inv)
	return b.Add(p, history.OK, history.Acquire, key, ok, Deadline(dl), Nodes("n1", "n2", "n3"))
}

// Release appends a release invoked at inv that succeeded at ok.
func (b *Builder) Release(p, key string, inv, ok float64) *Builder {
	b.Add(p, history.Invoke, history.Release, key, inv)
	return b.Add(p, history.OK, history.Release, key, ok)
}

// Fault appends a nemesis event at time at.
func (b *Builder) Fault(at float64, f history.Fault) *Builder {
	return b.Add(history.ProcessNemesis, history.Info, history.Nemesis, "", at,
		func(e *history.Event) { e.Value = history.MustValue(f) })
}

// Events returns the history built so far.
func (b *Builder) Events() []history.Event { return b.events }

// Cut is a network cut of client's links to nodes.
func Cut(id int, phase, client string, nodes ...string) history.Fault {
	f := history.Fault{ID: id, Kind: "cut", Phase: phase}
	for _, n := range nodes {
		f.Links = append(f.Links, history.Link{Client: client, Node: n})
	}
	return f
}

// ClockJump is a clock jump of node by offset.
func ClockJump(id int, phase, node string, offset time.Duration) history.Fault {
	return history.Fault{ID: id, Kind: "clock-jump", Phase: phase, Nodes: []string{node}, Offset: int64(offset)}
}

// Setup appends the harness's account of the lock under test at time at.
func (b *Builder) Setup(at float64, s history.LockSetup) *Builder {
	return b.Add(history.ProcessHarness, history.Info, history.Setup, "", at,
		func(e *history.Event) { e.Value = history.MustValue(s) })
}
