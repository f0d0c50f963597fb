package scenarios

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

// faultRig is what the fault steps need beyond the nemesis: each client's
// gate (its lock hooks stop there) and the replicas.
type faultRig struct {
	gates map[string]*nemesis.ClientGate
	// pauses holds, per client, a channel closed when its last client
	// pause is over (held and resumed, not reached in time, or healed).
	pauses map[string]<-chan struct{}
}

// setUpFaults makes the clients' gates and starts the replicas, each
// replicating through a proxy of its own so that its link can be cut.
// It runs before the lock clients are made: their hooks need the gates.
func (r *runner) setUpFaults(ctx context.Context) error {
	r.faults.gates = map[string]*nemesis.ClientGate{}
	r.faults.pauses = map[string]<-chan struct{}{}
	for _, c := range r.sc.Clients {
		r.faults.gates[c] = nemesis.NewClientGate(c)
	}
	if len(r.sc.Replicas) == 0 {
		return nil
	}
	for _, name := range r.sc.Replicas {
		master, err := r.node(name)
		if err != nil {
			return fmt.Errorf("replica of %s: %w", name, err)
		}
		for _, rname := range r.sc.ReplicasOf(name) {
			via, err := r.net.AddLink(rname, nemesis.Endpoint{Name: name, Addr: master.Addr()})
			if err != nil {
				return err
			}
			spec := cluster.ReplicaSpec{Name: rname, Of: name, Via: via}
			if r.sc.Sentinel != nil {
				// Sentinel tells its replicas the master's own address,
				// which the replica must know it by too: a route sends it
				// through the proxy instead.
				spec.Via, spec.Routes = master.Addr(), map[string]string{master.Addr(): via}
			}
			rep, err := cluster.StartReplica(ctx, r.cluster, spec)
			var unsupported *cluster.UnsupportedError
			if errors.As(err, &unsupported) {
				return fmt.Errorf("%s: cluster.replicas: %w", r.sc.File, err)
			}
			if err != nil {
				return err
			}
			r.logf("started %s=%s, a replica of %s through %s", rname, rep.Addr(), name, via)
		}
	}
	if r.sc.Sentinel != nil {
		return r.setUpSentinels(ctx)
	}
	return nil
}

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
	"links":    {fault.KindCut, fault.KindReset, fault.KindRefuse, fault.KindDelay, fault.KindPartition},
	"clocks":   {fault.KindClockJump, fault.KindClockStrobe},
	"nodes":    {fault.KindPause, fault.KindKill, fault.KindStop},
	"clients":  {fault.KindClientPause},
	"failover": {fault.KindPromote},
}

func healKindsFor(what string) []string {
	if what != "all" {
		return healKinds[what]
	}
	var all []string
	for _, target := range []string{"clients", "failover", "nodes", "clocks", "links"} {
		all = append(all, healKinds[target]...)
	}
	return all
}

// faultStep runs a fault step.
func (r *runner) faultStep(ctx context.Context, st spec.Step) error {
	switch st.Kind {
	case spec.StepNet:
		return r.linkFault(ctx, st, clientLinks([]string{st.Client}, st.Nodes))
	case spec.StepReplication:
		return r.linkFault(ctx, st, []history.Link{{Client: st.Replica, Node: st.Node}})
	case spec.StepPartition:
		return r.partition(ctx, st)
	case spec.StepStrobe:
		node, err := nodeAs[nemesis.ClockNode](r, st.Node, cluster.FaultClock)
		if err != nil {
			return err
		}
		return r.start(ctx, st, nemesis.ClockStrobe{Node: node, Delta: st.Span.Draw(r.nemRand), Period: st.Period})
	case spec.StepClockReset:
		names := st.Nodes
		if len(names) == 0 {
			names = r.nodeNames()
		}
		var nodes []nemesis.ClockNode
		for _, name := range names {
			n, err := nodeAs[nemesis.ClockNode](r, name, cluster.FaultClock)
			if err != nil {
				return err
			}
			nodes = append(nodes, n)
		}
		r.logf("reset the clocks of %s", strings.Join(names, ","))
		return r.nem.ResetClocks(ctx, nodes...)
	case spec.StepPause:
		if st.Client != "" {
			at := fault.Point(st.Point)
			if st.Point == "random" {
				points := r.pausePoints()
				at = points[r.nemRand.IntN(len(points))]
			}
			return r.pauseClient(ctx, st, at)
		}
		node, err := nodeAs[nemesis.Pausable](r, st.Node, cluster.FaultPause)
		if err != nil {
			return err
		}
		return r.start(ctx, st, nemesis.Pause{Node: node})
	case spec.StepResume:
		if st.Client != "" {
			return r.stopOn(ctx, "resume", st.Client, fault.KindClientPause)
		}
		return r.stopOn(ctx, "resume", st.Node, fault.KindPause)
	case spec.StepKill, spec.StepStop:
		if st.Amnesia {
			if _, err := nodeAs[nemesis.Wipeable](r, st.Node, cluster.FaultWipe); err != nil {
				return err
			}
		}
		if st.Kind == spec.StepKill {
			node, err := nodeAs[nemesis.Killable](r, st.Node, cluster.FaultKill)
			if err != nil {
				return err
			}
			return r.start(ctx, st, nemesis.Kill{Node: node, Amnesia: st.Amnesia})
		}
		node, err := nodeAs[nemesis.Stoppable](r, st.Node, cluster.FaultStop)
		if err != nil {
			return err
		}
		return r.start(ctx, st, nemesis.Stop{Node: node, Amnesia: st.Amnesia})
	case spec.StepRestart:
		return r.stopOn(ctx, "restart", st.Node, fault.KindKill, fault.KindStop)
	case spec.StepPromote:
		rep, err := nodeAs[nemesis.Promotable](r, st.Replica, cluster.FaultReplica)
		if err != nil {
			return err
		}
		return r.start(ctx, st, nemesis.Promote{Net: r.net, Replica: rep, Links: clientLinks(r.sc.Clients, []string{st.Node})})
	case spec.StepRandom:
		return r.random(ctx, st)
	}
	return fmt.Errorf("unknown step kind %q", st.Kind)
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
	if st.Signal {
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

// nodeAs is node name as the interface C that fault f needs; the refusal,
// when its kind or backend lacks f, is a *cluster.UnsupportedError.
func nodeAs[C any](r *runner, name string, f cluster.Fault) (C, error) {
	n, err := r.node(name)
	if err != nil {
		var zero C
		return zero, err
	}
	return cluster.Capable[C](n, f)
}

// refuseLinks is the refusal of a link fault on a node whose kind takes
// none; links to the storage node, which is no backend's, are always
// proxied.
func (r *runner) refuseLinks(links []history.Link) error {
	for _, l := range links {
		if n, ok := r.cluster.Node(l.Node); ok {
			if err := n.Kind().Refuse(n.Name(), cluster.FaultLink); err != nil {
				return err
			}
		}
	}
	return nil
}

// start injects f, healing it on its own after the step's "for" if given;
// "for: 0s" (kill and stop) heals it at once.
func (r *runner) start(ctx context.Context, st spec.Step, f nemesis.Fault) error {
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

func (r *runner) linkFault(ctx context.Context, st spec.Step, links []history.Link) error {
	if err := r.refuseLinks(links); err != nil {
		return err
	}
	dir := fault.Direction(st.Direction)
	var f nemesis.Fault
	switch st.Fault {
	case "drop":
		f = nemesis.Cut{Net: r.net, Links: links, Direction: dir}
	case "reset":
		f = nemesis.Reset{Net: r.net, Links: links, Direction: dir}
	case "refuse":
		f = nemesis.Refuse{Net: r.net, Links: links}
	case "delay":
		f = nemesis.Delay{Net: r.net, Links: links, Direction: dir, By: st.Delay.Draw(r.nemRand).Truncate(time.Millisecond)}
	default:
		return fmt.Errorf("unknown link fault %q", st.Fault)
	}
	return r.start(ctx, st, f)
}

func (r *runner) partition(ctx context.Context, st spec.Step) error {
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
		if err = r.refusePeerSplit(st.Sides); err != nil {
			break
		}
		if links = sidesLinks(r.net.Links(), st.Sides); len(links) == 0 {
			err = errors.New("partition: no proxied link between the sides")
		}
	default:
		err = fmt.Errorf("unknown partition shape %q", st.Shape)
	}
	if err == nil {
		err = r.refuseLinks(links)
	}
	if err != nil {
		return err
	}
	return r.start(ctx, st, nemesis.Partition{Net: r.net, Shape: st.Shape, Links: links})
}

// random plays a random schedule drawn from the run's seed; the step ends
// when the schedule does.
func (r *runner) random(ctx context.Context, st spec.Step) error {
	spec := st.Schedule
	spec.Points = r.pausePoints()
	ops, err := fault.Plan(spec, r.sc.Clients, r.nodeNames(), r.nemRand)
	if err != nil {
		return err
	}
	env := nemesis.Env{Net: r.net, Nodes: map[string]nemesis.ScheduleNode{}, Gates: r.faults.gates, Procs: r.drivers.pausers()}
	for _, n := range r.cluster.Nodes() {
		// Every node may take any of the schedule's faults.
		for _, f := range []cluster.Fault{cluster.FaultLink, cluster.FaultClock, cluster.FaultPause, cluster.FaultKill, cluster.FaultStop, cluster.FaultWipe} {
			sn, err := cluster.Capable[nemesis.ScheduleNode](n, f)
			if err != nil {
				return err
			}
			env.Nodes[n.Name()] = sn
		}
	}
	r.logf("random schedule: %d faults over %v", len(ops), st.Schedule.Total)
	return r.nem.RunSchedule(ctx, ops, env, func(op fault.Op) { r.logf("random: %s", op) })
}

// pausePoints are where this run's clients can be paused: the lock's hook
// points, and before the write when the workload writes the storage.
func (r *runner) pausePoints() []fault.Point { return r.sc.PausePoints() }
