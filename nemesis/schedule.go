package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"splitbrain/history"
)

// What a random schedule may do, as named in scenario files.
const (
	RandomPartition   = "partition"    // a partition of a random shape
	RandomClock       = "clock"        // clock jumps, or a strobe
	RandomPause       = "pause"        // node pauses (SIGSTOP)
	RandomKill        = "kill"         // kill -9 or graceful stop, then restart
	RandomAmnesia     = "amnesia"      // kill -9, restart with the data lost
	RandomClientPause = "client-pause" // client pauses at a hook point
)

// RandomKinds lists the kinds a schedule can draw from.
var RandomKinds = []string{RandomPartition, RandomClock, RandomPause, RandomKill, RandomAmnesia, RandomClientPause}

// Target is how many nodes (or clients) one fault of a schedule hits.
type Target string

const (
	TargetOne      Target = "one"
	TargetMinority Target = "minority" // (n-1)/2, at least one
	TargetMajority Target = "majority" // n/2+1
	TargetAll      Target = "all"
)

// Targets lists every target.
var Targets = []Target{TargetOne, TargetMinority, TargetMajority, TargetAll}

// ScheduleSpec describes a random schedule, Jepsen's combined nemesis:
// every Interval one fault starts, of a kind drawn from Kinds, against a
// target drawn from Targets, lasting a time drawn from [MinFor, MaxFor].
// Faults never overlap, so one heals before the next begins.
type ScheduleSpec struct {
	Kinds []string
	// Targets to draw from; empty means all four.
	Targets []Target
	// Interval is the time from one fault's start to the next one's.
	Interval time.Duration
	// MinFor and MaxFor bound each fault's duration; MaxFor ≤ Interval.
	MinFor, MaxFor time.Duration
	// Total is how long the schedule runs; no fault outlasts it.
	Total time.Duration
	// MaxClock bounds clock offsets; zero means 10 s.
	MaxClock time.Duration
	// Points are where a client pause may stop a client, drawn with
	// AnyPoint; empty means HookPoints (a client that writes a resource:
	// ResourcePoints).
	Points []Point
}

// Validate checks the spec; Plan calls it.
func (s ScheduleSpec) Validate() error {
	var errs []error
	if len(s.Kinds) == 0 {
		errs = append(errs, fmt.Errorf("no fault kinds; want some of %s", strings.Join(RandomKinds, ", ")))
	}
	for _, k := range s.Kinds {
		if !slices.Contains(RandomKinds, k) {
			errs = append(errs, fmt.Errorf("fault kind %q; want one of %s", k, strings.Join(RandomKinds, ", ")))
		}
	}
	for _, p := range s.Points {
		if !ValidPoint(p) || p == AnyPoint {
			errs = append(errs, fmt.Errorf("client pause point %q; want some of after-replies, after-acquire, before-write, before-release", p))
		}
	}
	for _, t := range s.Targets {
		if !slices.Contains(Targets, t) {
			errs = append(errs, fmt.Errorf("target %q; want one of one, minority, majority, all", t))
		}
	}
	switch {
	case s.Interval <= 0:
		errs = append(errs, fmt.Errorf("interval %v, want > 0", s.Interval))
	case s.MinFor <= 0 || s.MaxFor < s.MinFor:
		errs = append(errs, fmt.Errorf("fault duration %v..%v, want 0 < min ≤ max", s.MinFor, s.MaxFor))
	case s.MaxFor > s.Interval:
		errs = append(errs, fmt.Errorf("fault duration up to %v is longer than the interval %v; faults must not overlap", s.MaxFor, s.Interval))
	}
	if s.Total < s.MinFor {
		errs = append(errs, fmt.Errorf("total %v is shorter than one fault (%v)", s.Total, s.MinFor))
	}
	if s.MaxClock < 0 {
		errs = append(errs, fmt.Errorf("largest clock offset %v, want ≥ 0", s.MaxClock))
	}
	return errors.Join(errs...)
}

// Op is one fault of a schedule, fully drawn: running it needs no more
// randomness, so the same seed gives the same faults.
type Op struct {
	At, For time.Duration // start, from the schedule's start; duration
	Kind    string        // one of RandomKinds
	Target  Target
	Shape   string         // partition
	Links   []history.Link // partition
	Nodes   []string       // clock, pause, kill, amnesia
	Clients []string       // client-pause
	Offsets []time.Duration
	// Strobe is a clock strobe's period (Offsets[0] its delta); zero
	// means the clock op jumps each node by its offset.
	Strobe   time.Duration
	Point    Point // client-pause
	Graceful bool  // kill: SIGTERM rather than SIGKILL
}

func (o Op) String() string {
	s := fmt.Sprintf("%s %s", o.Kind, o.Target)
	switch o.Kind {
	case RandomPartition:
		s = fmt.Sprintf("partition %s: %s", o.Shape, describeLinks(o.Links, "✂"))
	case RandomClock:
		if o.Strobe > 0 {
			s += fmt.Sprintf(" %s strobe %s every %v", strings.Join(o.Nodes, ","), formatOffset(o.Offsets[0]), o.Strobe)
		} else {
			for i, n := range o.Nodes {
				s += fmt.Sprintf(" %s%s", n, formatOffset(o.Offsets[i]))
			}
		}
	case RandomClientPause:
		s += fmt.Sprintf(" %s at %s", strings.Join(o.Clients, ","), o.Point)
	case RandomKill:
		s += " " + strings.Join(o.Nodes, ",")
		if o.Graceful {
			s += " (graceful)"
		}
	default:
		s += " " + strings.Join(o.Nodes, ",")
	}
	return fmt.Sprintf("%s for %v", s, o.For)
}

// Plan draws a schedule for clients and nodes from r.
func Plan(spec ScheduleSpec, clients, nodes []string, r *rand.Rand) ([]Op, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("random schedule: %w", err)
	}
	if len(nodes) == 0 {
		return nil, errors.New("random schedule: no nodes")
	}
	if len(clients) == 0 && slices.ContainsFunc(spec.Kinds, func(k string) bool { return k == RandomPartition || k == RandomClientPause }) {
		return nil, errors.New("random schedule: partitions and client pauses need clients")
	}
	targets := spec.Targets
	if len(targets) == 0 {
		targets = Targets
	}
	maxClock := spec.MaxClock
	if maxClock == 0 {
		maxClock = 10 * time.Second
	}
	var ops []Op
	for at := time.Duration(0); at+spec.MinFor <= spec.Total; at += spec.Interval {
		op := Op{
			At:     at,
			For:    min(draw(r, spec.MinFor, spec.MaxFor), spec.Total-at),
			Kind:   spec.Kinds[r.IntN(len(spec.Kinds))],
			Target: targets[r.IntN(len(targets))],
		}
		switch op.Kind {
		case RandomPartition:
			op.Shape, op.Links = drawPartition(r, op.Target, clients, nodes)
		case RandomClock:
			op.Nodes = pick(r, nodes, op.Target)
			if r.IntN(3) == 0 {
				op.Strobe = draw(r, 10*time.Millisecond, 200*time.Millisecond)
				op.Offsets = []time.Duration{drawOffset(r, maxClock)}
			} else {
				for range op.Nodes {
					op.Offsets = append(op.Offsets, drawOffset(r, maxClock))
				}
			}
		case RandomPause, RandomAmnesia:
			op.Nodes = pick(r, nodes, op.Target)
		case RandomKill:
			op.Nodes = pick(r, nodes, op.Target)
			op.Graceful = r.IntN(3) == 0
		case RandomClientPause:
			op.Clients = pick(r, clients, op.Target)
			points := spec.Points
			if len(points) == 0 {
				points = HookPoints
			}
			points = append(slices.Clone(points), AnyPoint)
			op.Point = points[r.IntN(len(points))]
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func drawPartition(r *rand.Rand, t Target, clients, nodes []string) (string, []history.Link) {
	shapes := []string{ShapeIsolate, ShapeClient, ShapeRandom}
	if len(nodes) >= 2 {
		shapes = append(shapes, ShapeHalves)
	}
	if len(nodes) >= 3 {
		shapes = append(shapes, ShapeBridge)
	}
	shape := shapes[r.IntN(len(shapes))]
	switch shape {
	case ShapeIsolate:
		return shape, Isolate(clients, pick(r, nodes, t))
	case ShapeClient:
		c := clients[r.IntN(len(clients))]
		return shape, ClientCut(c, pick(r, nodes, t))
	case ShapeHalves:
		links, _ := Halves(Shuffled(clients, r), Shuffled(nodes, r))
		return shape, links
	case ShapeBridge:
		links, _ := Bridge(Shuffled(clients, r), Shuffled(nodes, r))
		return shape, links
	}
	return shape, RandomGrudge(clients, nodes, r)
}

// pick draws t's share of xs, kept in xs's order.
func pick(r *rand.Rand, xs []string, t Target) []string {
	n := len(xs)
	k := map[Target]int{TargetOne: 1, TargetMinority: max(1, (n-1)/2), TargetMajority: n/2 + 1, TargetAll: n}[t]
	chosen := r.Perm(n)[:min(k, n)]
	slices.Sort(chosen)
	out := make([]string, len(chosen))
	for i, j := range chosen {
		out[i] = xs[j]
	}
	return out
}

// draw picks a duration in [lo, hi] in whole milliseconds.
func draw(r *rand.Rand, lo, hi time.Duration) time.Duration {
	steps := int64((hi - lo) / time.Millisecond)
	if steps <= 0 {
		return lo
	}
	return lo + time.Duration(r.Int64N(steps+1))*time.Millisecond
}

// drawOffset picks a clock offset of either sign, from a tenth of max to max.
func drawOffset(r *rand.Rand, max time.Duration) time.Duration {
	d := draw(r, max/10, max)
	if r.IntN(2) == 0 {
		return -d
	}
	return d
}

// ScheduleNode is a node a random schedule may do anything to.
type ScheduleNode interface {
	ClockNode
	Pausable
	Stoppable
	Wipeable
}

// Env is what a schedule acts on.
type Env struct {
	Net   *Net
	Nodes map[string]ScheduleNode
	Gates map[string]*ClientGate
	// Procs are the clients that run as processes of their own (lock
	// drivers): a client pause drawn at AnyPoint stops such a client's
	// process with SIGSTOP at once, wherever it is, rather than at its
	// next point. The draws are the same either way.
	Procs map[string]ProcessPauser
}

// Faults turns op into the faults that carry it out.
func (e Env) Faults(op Op) ([]Fault, error) {
	node := func(name string) (ScheduleNode, error) {
		n, ok := e.Nodes[name]
		if !ok {
			return nil, fmt.Errorf("schedule: no node %q", name)
		}
		return n, nil
	}
	var out []Fault
	switch op.Kind {
	case RandomPartition:
		return []Fault{Partition{Net: e.Net, Shape: op.Shape, Links: op.Links}}, nil
	case RandomClientPause:
		for _, c := range op.Clients {
			if p, ok := e.Procs[c]; ok && op.Point == AnyPoint {
				out = append(out, ClientStop{Client: c, Proc: p}, clientHeld{client: c, hold: op.For, signal: true})
				continue
			}
			g, ok := e.Gates[c]
			if !ok {
				return nil, fmt.Errorf("schedule: no client %q", c)
			}
			out = append(out, ClientPause{Gate: g, At: op.Point, For: op.For})
		}
		return out, nil
	}
	for i, name := range op.Nodes {
		n, err := node(name)
		if err != nil {
			return nil, err
		}
		switch op.Kind {
		case RandomClock:
			if op.Strobe > 0 {
				out = append(out, ClockStrobe{Node: n, Delta: op.Offsets[0], Period: op.Strobe})
			} else {
				out = append(out, ClockJump{Node: n, By: op.Offsets[i]})
			}
		case RandomPause:
			out = append(out, Pause{Node: n})
		case RandomKill:
			if op.Graceful {
				out = append(out, Stop{Node: n})
			} else {
				out = append(out, Kill{Node: n})
			}
		case RandomAmnesia:
			out = append(out, Kill{Node: n, Amnesia: true})
		default:
			return nil, fmt.Errorf("schedule: unknown kind %q", op.Kind)
		}
	}
	return out, nil
}

// RunSchedule plays ops in order, one goroutine, so that the history
// records the same faults in the same order for the same ops: each op's
// faults start at its time and are healed, newest first, when it ends.
// A client pause is the exception: it stays armed until the client reaches
// its point (at most until the next op is due) and then holds the client
// for the op's whole duration, so that a drawn pause is a pause however
// long the client takes to get there; the schedule goes on once it is
// over, late if need be. onStart, if set, is told of each op as it
// starts. When ctx ends it returns at once, leaving what is active to
// HealAll.
func (m *Nemesis) RunSchedule(ctx context.Context, ops []Op, env Env, onStart func(Op)) error {
	start := time.Now()
	for i, op := range ops {
		if !sleepUntil(ctx, start.Add(op.At)) {
			return nil
		}
		faults, err := env.Faults(op)
		if err != nil {
			return err
		}
		if onStart != nil {
			onStart(op)
		}
		var ids []int
		stopAll := func() error {
			var errs []error
			for i := len(ids) - 1; i >= 0; i-- {
				errs = append(errs, m.Stop(ctx, ids[i]))
			}
			return errors.Join(errs...)
		}
		if op.Kind == RandomClientPause && gatePauses(faults) {
			within := op.For
			if i+1 < len(ops) {
				within = max(ops[i+1].At-op.At, time.Millisecond)
			}
			var overs []<-chan struct{}
			for _, f := range faults {
				cp, ok := f.(ClientPause)
				if !ok {
					return fmt.Errorf("schedule: client pause op carried %T", f)
				}
				_, over, err := m.StartClientPause(ctx, cp, within)
				if err != nil {
					return err
				}
				overs = append(overs, over)
			}
			for _, over := range overs {
				select {
				case <-over:
				case <-ctx.Done():
					return nil
				}
			}
			continue
		}
		for _, f := range faults {
			id, err := m.Start(ctx, f)
			if err != nil {
				return errors.Join(err, stopAll())
			}
			ids = append(ids, id)
		}
		if !sleepUntil(ctx, start.Add(op.At+op.For)) {
			return nil
		}
		if err := stopAll(); err != nil {
			return err
		}
	}
	return nil
}

// gatePauses reports whether faults are all pauses at a gate (not a
// process stopped by signal, which is timed as any other fault).
func gatePauses(faults []Fault) bool {
	for _, f := range faults {
		if _, ok := f.(ClientPause); !ok {
			return false
		}
	}
	return true
}

// sleepUntil waits until t; false means ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
