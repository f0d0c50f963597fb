package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/nemesis"
	"splitbrain/redlock"
	"splitbrain/scenarios/spec"
)

// hooks stops client at its gate at each of the lock's hook points.
func (r *runner) hooks(client string) redlock.Hooks {
	g := r.faults.gates[client]
	return redlock.Hooks{
		AfterReplies:  func(ctx context.Context, _ string) { g.At(ctx, fault.AfterReplies) },
		AfterAcquire:  func(ctx context.Context, _ *redlock.Lease) { g.At(ctx, fault.AfterAcquire) },
		BeforeRelease: func(ctx context.Context, _ *redlock.Lease) { g.At(ctx, fault.BeforeRelease) },
	}
}

// healKinds maps a heal step's target to the fault kinds it heals; "all"
// heals every one of them.
var healKinds = map[string][]string{
	"links":  {fault.KindCut, fault.KindReset, fault.KindRefuse, fault.KindDelay, fault.KindPartition, fault.KindLostReply},
	"clocks": {fault.KindClockJump, fault.KindClockStrobe, fault.KindClockRate},
	// A slow disk heals before its node restarts: a node starting on it
	// would wait out the delay at each of its start-up fsyncs.
	"nodes":    {fault.KindPause, fault.KindFsyncDelay, fault.KindKill, fault.KindStop, fault.KindStarve},
	"clients":  {fault.KindClientPause, fault.KindStarve},
	"failover": {fault.KindPromote},
}

func healKindsFor(what string) []string {
	if what != "all" {
		return healKinds[what]
	}
	var all []string
	for _, target := range []string{"clients", "failover", "nodes", "clocks", "links"} {
		for _, k := range healKinds[target] {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	return all
}

// faultPlays are the fault steps that do more than start one fault for
// their for: heal, resume and restart steps end faults, a clock reset is
// an instant, a client pause waits for its client, a random schedule plays
// many; cut and clock log as they always have. Every other fault step is
// in faultBuilds.
var faultPlays = map[spec.StepKind]func(r *runner, ctx context.Context, st spec.Step) error{
	spec.StepCut: func(r *runner, ctx context.Context, st spec.Step) error {
		f, err := r.linkFault(st, clientLinks([]string{st.Client}, st.Nodes), "drop")
		if err != nil {
			return err
		}
		if err := available(f); err != nil {
			return err
		}
		r.logf("cut %s", f.Describe().Detail)
		_, err = r.nem.Start(ctx, f)
		return err
	},
	spec.StepHeal: func(r *runner, ctx context.Context, st spec.Step) error {
		r.logf("heal %s", st.Heal)
		return r.heal(ctx, st.Heal)
	},
	spec.StepClock: func(r *runner, ctx context.Context, st spec.Step) error {
		f, err := faultBuilds[spec.StepClock](r, st)
		if err != nil || st.HasFor || st.Rate != 0 {
			return r.startStep(ctx, st, f, err)
		}
		if err := available(f); err != nil {
			return err
		}
		r.logf("jump %s", f.Describe().Detail)
		_, err = r.nem.Start(ctx, f)
		return err
	},
	spec.StepClockReset: (*runner).resetClocks,
	spec.StepPause: func(r *runner, ctx context.Context, st spec.Step) error {
		if st.Client == "" {
			f, err := faultBuilds[spec.StepPause](r, st)
			return r.startStep(ctx, st, f, err)
		}
		at := fault.Point(st.Point)
		if st.Point == "random" {
			points := r.pausePoints()
			at = points[r.nemRand.IntN(len(points))]
		}
		return r.pauseClient(ctx, st, at)
	},
	spec.StepResume: func(r *runner, ctx context.Context, st spec.Step) error {
		if st.Client != "" {
			return r.stopOn(ctx, "resume", st.Client, fault.KindClientPause)
		}
		return r.stopOn(ctx, "resume", st.Node, fault.KindPause)
	},
	spec.StepRestart: func(r *runner, ctx context.Context, st spec.Step) error {
		return r.stopOn(ctx, "restart", st.Node, fault.KindKill, fault.KindStop)
	},
	spec.StepRandom: (*runner).random,
}

// faultBuilds make the nemesis fault of each step kind that injects one:
// a scripted step's fault starts for the step's for: (start), and a random
// schedule's steps become faults through the same builders. Draws from
// the nemesis stream happen here, in the order the step's fields come.
var faultBuilds = map[spec.StepKind]func(r *runner, st spec.Step) (nemesis.Fault, error){
	spec.StepNet: func(r *runner, st spec.Step) (nemesis.Fault, error) {
		return r.linkFault(st, clientLinks([]string{st.Client}, st.Nodes), st.Fault)
	},
	spec.StepReplication: func(r *runner, st spec.Step) (nemesis.Fault, error) {
		return r.linkFault(st, []history.Link{{Client: st.Replica, Node: st.Node}}, st.Fault)
	},
	spec.StepPartition: (*runner).partition,
	spec.StepStrobe: func(r *runner, st spec.Step) (nemesis.Fault, error) {
		node, err := r.node(st.Node)
		if err != nil {
			return nil, err
		}
		return nemesis.ClockStrobe{Node: node, Delta: st.Span.Draw(r.nemRand), Period: st.Period}, nil
	},
	spec.StepClock: func(r *runner, st spec.Step) (nemesis.Fault, error) {
		node, err := r.node(st.Node)
		if err != nil {
			return nil, err
		}
		if st.Rate != 0 {
			return nemesis.ClockRate{Node: node, Rate: st.Rate}, nil
		}
		return nemesis.ClockJump{Node: node, By: st.Span.Draw(r.nemRand)}, nil
	},
	spec.StepPause: func(r *runner, st spec.Step) (nemesis.Fault, error) {
		node, err := r.node(st.Node)
		return nemesis.Pause{Node: node}, err
	},
	spec.StepKill: func(r *runner, st spec.Step) (nemesis.Fault, error) {
		node, err := r.node(st.Node)
		return nemesis.Kill{Node: node, Amnesia: st.Amnesia, Power: st.Power}, err
	},
	spec.StepStop: func(r *runner, st spec.Step) (nemesis.Fault, error) {
		node, err := r.node(st.Node)
		return nemesis.Stop{Node: node, Amnesia: st.Amnesia}, err
	},
	spec.StepStarve: (*runner).starve,
	spec.StepFsync: func(r *runner, st spec.Step) (nemesis.Fault, error) {
		node, err := r.node(st.Node)
		return nemesis.SlowFsync{Node: node, Delay: st.Delay.Draw(r.nemRand).Truncate(time.Millisecond)}, err
	},
	spec.StepPromote: func(r *runner, st spec.Step) (nemesis.Fault, error) {
		rep, err := r.node(st.Replica)
		return nemesis.Promote{Net: r.net, Replica: rep, Links: clientLinks(r.sc.Clients, []string{st.Node})}, err
	},
}

// faultStep runs a fault step: its play, or its fault started for its
// for:.
func (r *runner) faultStep(ctx context.Context, st spec.Step) error {
	if play, ok := faultPlays[st.Kind]; ok {
		return play(r, ctx, st)
	}
	build, ok := faultBuilds[st.Kind]
	if !ok {
		return fmt.Errorf("unknown step kind %q", st.Kind)
	}
	f, err := build(r, st)
	return r.startStep(ctx, st, f, err)
}

// resetClocks plays a clock-reset step: every clock fault on its nodes
// (all nodes when it names none) healed, their clocks set to real time.
func (r *runner) resetClocks(ctx context.Context, st spec.Step) error {
	names := st.Nodes
	if len(names) == 0 {
		names = r.nodeNames()
	}
	var nodes []cluster.Node
	for _, name := range names {
		n, err := r.node(name)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	if err := (nemesis.ClockReset{Nodes: nodes}).Available(); err != nil {
		return err
	}
	r.logf("reset the clocks of %s", strings.Join(names, ","))
	return r.nem.ResetClocks(ctx, nodes...)
}

func clientLinks(clients, nodes []string) []history.Link {
	return fault.Isolate(clients, nodes)
}

func (r *runner) node(name string) (cluster.Node, error) {
	n, ok := r.cluster.Node(name)
	if !ok {
		return nil, fmt.Errorf("no node %q", name)
	}
	return n, nil
}

// pauseClient arms a client pause: the client stops when it reaches at and
// stays stopped for the step's "for" from then on; "within" bounds how
// long the pause waits for the client to get there. A client whose last
// pause is not over yet (armed, or holding it) is waited for first, as a
// random schedule waits for its client pauses: a client has one gate, and
// a shrunk schedule (package shrink) writes a random schedule's pauses as
// steps that may follow each other closer than the client's hold.
func (r *runner) pauseClient(ctx context.Context, st spec.Step, at fault.Point) error {
	p := nemesis.ClientPause{Gate: r.faults.gates[st.Client], At: at, For: st.For.Draw(r.nemRand)}
	// A lock whose client keeps its session alive from threads of its own
	// (locks.Kind.PauseStops) is paused as a GC pause would: its whole
	// process stopped at the point, as signal: true does; signal: auto
	// does so wherever the lock has a process of its own.
	if k := r.sc.LockKind(); st.Signal || k != nil && (k.PauseStops || st.SignalAuto && k.Driver) {
		proc, ok := r.drivers.pausers()[st.Client]
		if !ok {
			return fmt.Errorf("pause %s with signal: true stops its driver process, and lock kind %s runs inside the harness", st.Client, r.sc.Lock.Kind)
		}
		p.Proc = proc
	}
	if prev := r.faults.pauses[st.Client]; prev != nil {
		select {
		case <-prev:
		default:
			r.logf("%s: waiting for its last pause to be over", st.Client)
			select {
			case <-prev:
			case <-ctx.Done():
				return nil
			}
		}
	}
	desc := p.Describe().Detail
	if st.Within > 0 {
		desc += fmt.Sprintf(", armed for at most %v", st.Within)
	}
	r.logf("%s", desc)
	_, over, err := r.nem.StartClientPause(ctx, p, st.Within)
	if err == nil {
		r.faults.pauses[st.Client] = over
	}
	return err
}

// startStep starts the fault a step's builder made (start), or returns the
// builder's error.
func (r *runner) startStep(ctx context.Context, st spec.Step, f nemesis.Fault, err error) error {
	if err != nil {
		return err
	}
	return r.start(ctx, st, f)
}

// start injects f, healing it on its own after the step's "for" if given;
// "for: 0s" (kill and stop) heals it at once. A fault on a node its kind
// or backend cannot take is refused first, with a
// *cluster.UnsupportedError.
func (r *runner) start(ctx context.Context, st spec.Step, f nemesis.Fault) error {
	if err := available(f); err != nil {
		return err
	}
	desc := f.Describe().Detail
	if !st.HasFor {
		r.logf("%s", desc)
		_, err := r.nem.Start(ctx, f)
		return err
	}
	d := st.For.Draw(r.nemRand)
	if d == 0 {
		r.logf("%s, back at once", desc)
		id, err := r.nem.Start(ctx, f)
		if err != nil {
			return err
		}
		return r.nem.Stop(ctx, id)
	}
	r.logf("%s for %v", desc, d)
	_, err := r.nem.StartFor(ctx, f, d)
	return err
}

// available is the refusal of a fault its nodes cannot take: a node
// fault's node, a link fault's links' nodes (nemesis.Limited).
func available(f nemesis.Fault) error {
	if nf, ok := f.(nemesis.Limited); ok {
		return nf.Available()
	}
	return nil
}

// stopOn heals the active faults of the given kinds on target (a node or a
// client); it is an error if there is none.
func (r *runner) stopOn(ctx context.Context, verb, target string, kinds ...string) error {
	match := func(f history.Fault) bool { return slices.Contains(kinds, f.Kind) && slices.Contains(f.Nodes, target) }
	if !slices.ContainsFunc(r.nem.Active(), match) {
		return fmt.Errorf("%s %s: no %s active on it", verb, target, strings.Join(kinds, " or "))
	}
	r.logf("%s %s", verb, target)
	return r.nem.StopMatching(ctx, match)
}

// linkFault is the link fault kind (drop, reset, refuse, delay) on links.
func (r *runner) linkFault(st spec.Step, links []history.Link, kind string) (nemesis.Fault, error) {
	dir := fault.Direction(st.Direction)
	switch kind {
	case "drop":
		return nemesis.Cut{Net: r.net, Links: links, Direction: dir}, nil
	case "reset":
		return nemesis.Reset{Net: r.net, Links: links, Direction: dir}, nil
	case "refuse":
		return nemesis.Refuse{Net: r.net, Links: links}, nil
	case "delay":
		return nemesis.Delay{Net: r.net, Links: links, Direction: dir, By: st.Delay.Draw(r.nemRand).Truncate(time.Millisecond)}, nil
	case "lose-reply":
		return nemesis.LoseReply{Net: r.net, Links: links}, nil
	}
	return nil, fmt.Errorf("unknown link fault %q", kind)
}

// partition is the partition a step cuts: links of its shape, or the
// links a random schedule drew (st.Links).
func (r *runner) partition(st spec.Step) (nemesis.Fault, error) {
	if st.Links != nil {
		return nemesis.Partition{Net: r.net, Shape: st.Shape, Links: st.Links}, nil
	}
	clients, nodes := st.Clients, st.Nodes
	if len(clients) == 0 {
		clients = r.sc.Clients
	}
	if len(nodes) == 0 {
		nodes = r.nodeNames()
	}
	var links []history.Link
	var err error
	switch st.Shape {
	case fault.ShapeIsolate:
		links = fault.Isolate(clients, nodes)
	case fault.ShapeClient:
		links = fault.ClientCut(st.Client, nodes)
	case fault.ShapeHalves:
		links, err = fault.Halves(clients, nodes)
	case fault.ShapeBridge:
		links, err = fault.Bridge(clients, nodes)
	case fault.ShapeRandom:
		links = fault.RandomGrudge(clients, nodes, r.nemRand)
	case spec.ShapeSides:
		if err = r.refusePeerSplit(st.Partition); err != nil {
			break
		}
		if links = sidesLinks(r.net.Links(), st.Sides); len(links) == 0 {
			err = errors.New("partition: no proxied link between the sides")
		}
	default:
		err = fmt.Errorf("unknown partition shape %q", st.Shape)
	}
	if err != nil {
		return nil, err
	}
	return nemesis.Partition{Net: r.net, Shape: st.Shape, Links: links}, nil
}

// random plays a random schedule drawn from the run's seed, as the steps
// spec.ScheduleSteps writes it (the steps a shrunk run replays), each
// built into its fault as a scripted step is; the step ends when the
// schedule does.
func (r *runner) random(ctx context.Context, st spec.Step) error {
	ops, steps, err := r.sc.ScheduleSteps(st, r.nemRand)
	if err != nil {
		return err
	}
	for _, n := range r.cluster.Nodes() {
		// Every node may take any of the schedule's faults, and only
		// those: an etcd ensemble takes a schedule of kills, not of
		// clock jumps (the schedule draws its targets among all nodes).
		if err := n.Kind().Refuse(n.Name(), fault.Link); err != nil {
			return err
		}
		var limited []nemesis.Limited
		for _, k := range st.Schedule.Kinds {
			switch k {
			case fault.RandomClock, fault.RandomClockRate:
				limited = append(limited, nemesis.ClockJump{Node: n})
			case fault.RandomPause:
				limited = append(limited, nemesis.Pause{Node: n})
			case fault.RandomKill:
				// kill -9 or a graceful stop, drawn.
				limited = append(limited, nemesis.Kill{Node: n}, nemesis.Stop{Node: n})
			case fault.RandomAmnesia:
				limited = append(limited, nemesis.Kill{Node: n, Amnesia: true})
			case fault.RandomPower:
				limited = append(limited, nemesis.Kill{Node: n, Power: true})
			case fault.RandomStarve:
				limited = append(limited, nemesis.Starve{Node: n, Share: 0.5})
			case fault.RandomFsync:
				limited = append(limited, nemesis.SlowFsync{Node: n, Delay: time.Second})
			}
		}
		for _, f := range limited {
			if err := f.Available(); err != nil {
				return err
			}
		}
	}
	procs := r.drivers.pausers()
	ts := make([]nemesis.Timed, len(ops))
	for i, op := range ops {
		ts[i] = nemesis.Timed{At: op.At, For: op.For, What: op.String()}
		for _, tf := range steps[i] {
			s := tf.Step
			if s.Kind == spec.StepPause && s.Client != "" {
				ts[i].Within = s.Within
				ts[i].Faults = append(ts[i].Faults, nemesis.ScheduledClientPause(r.faults.gates[s.Client], procs[s.Client], fault.Point(s.Point), s.For.Min)...)
				continue
			}
			f, err := faultBuilds[s.Kind](r, s)
			if err == nil {
				err = available(f)
			}
			if err != nil {
				return err
			}
			ts[i].Faults = append(ts[i].Faults, f)
		}
	}
	r.logf("random schedule: %d faults over %v", len(ops), st.Schedule.Total)
	return r.nem.RunSchedule(ctx, ts, func(t nemesis.Timed) { r.logf("random: %s", t.What) })
}

// pausePoints are where this run's clients can be paused: the lock's hook
// points, and before the write when the workload writes the storage.
func (r *runner) pausePoints() []fault.Point { return r.sc.PausePoints() }
