package spec

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"splitbrain/fault"
	"splitbrain/history"
)

// A generated scenario's steps, unrolled for one seed: every fault as the
// run with that seed injects it, at the time it starts, as one explicit
// step (nothing left to draw, a for: that heals it). Shrinking (package
// shrink) searches over these, and writes what it keeps back as ordinary
// steps: waits and faults.

// TimedFault is one fault of a run, fully drawn.
type TimedFault struct {
	// At is when the fault starts, from the start of the steps, which is
	// the start of the generated workload.
	At time.Duration
	// Step is the fault as one explicit step, in the form StepNode writes
	// and Parse reads back. Its Line is that of the file's step it came
	// from.
	Step Step
	// From says where it came from, for messages: the file's step and,
	// for a random schedule, the fault it drew.
	From string
	// Records is what the run records as this fault starts (kind, nodes,
	// links and offset of its nemesis events, in order). A random
	// schedule's partition, written as one net step per client, records
	// one partition fault, on its first step; the others record nothing.
	Records []history.Fault
}

// ErrNotUnrollable means a step has no time of its own in a generated
// workload, or lasts until another step ends it, so that its scenario
// cannot be written as faults at times.
var ErrNotUnrollable = errors.New("cannot be written as faults at times")

// Unroll draws sc's steps as a run of sc with seed draws them, and returns
// its faults in the order they start and the time the steps end. sc must
// have a generated workload whose steps are waits for a time, random
// schedules and faults that heal on their own (for:).
//
// The draws mirror the runner's, step by step (runner/play.go, runner/play_faults.go): the
// nemesis stream for faults, the workload stream for waits. A test checks
// them against a real run's history, and package shrink checks them
// against the run it shrinks.
func (sc *Scenario) Unroll(seed int64) ([]TimedFault, time.Duration, error) {
	if !sc.Workload.Generated() {
		return nil, 0, fmt.Errorf("%s: %w: its workload is scripted (steps drive the clients); only a generated workload (workload.kind %s) can be", sc.File, ErrNotUnrollable, generatorKinds)
	}
	nem := rand.New(rand.NewPCG(uint64(seed), StreamNemesis))
	wl := rand.New(rand.NewPCG(uint64(seed), StreamWorkload))
	var out []TimedFault
	var t time.Duration
	for i, st := range sc.Steps {
		where := fmt.Sprintf("%s:%d: steps[%d] (%s)", sc.File, st.Line, i, st.Kind)
		unsupported := func(why string) error {
			return fmt.Errorf("%s: %w: %s", where, ErrNotUnrollable, why)
		}
		switch st.Kind {
		case StepWait:
			if st.Until != "" {
				return nil, 0, unsupported(fmt.Sprintf("a wait until %s takes as long as the condition does", st.Until))
			}
			t += st.Span.Draw(wl)
			continue
		case StepRandom:
			faults, end, err := sc.unrollSchedule(st, t, where, nem)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, faults...)
			t = end
			continue
		case StepNet, StepReplication, StepPartition, StepStrobe, StepClock, StepPause, StepKill, StepStop, StepStarve, StepFsync:
		default:
			return nil, 0, unsupported("only waits for a time, random schedules and faults with for: can")
		}
		faults, err := sc.unrollFault(st, nem)
		if err != nil {
			return nil, 0, unsupported(err.Error())
		}
		for _, f := range faults {
			f.At, f.From = t, where
			out = append(out, f)
		}
	}
	return out, t, nil
}

func fixed(d time.Duration) Span { return Span{Min: d, Max: d} }

// unrollFault draws one fault step as faultStep and step draw it, in the
// same order.
func (sc *Scenario) unrollFault(st Step, nem *rand.Rand) ([]TimedFault, error) {
	forDrawn := func() error {
		if !st.HasFor {
			return errors.New("a fault without for: lasts until a later step heals it")
		}
		st.For = fixed(st.For.Draw(nem))
		return nil
	}
	one := func(rec history.Fault) ([]TimedFault, error) {
		if err := forDrawn(); err != nil {
			return nil, err
		}
		return []TimedFault{{Step: st, Records: []history.Fault{rec}}}, nil
	}
	switch st.Kind {
	case StepNet, StepReplication:
		if st.Fault == "delay" {
			st.Delay = fixed(st.Delay.Draw(nem).Truncate(time.Millisecond))
		}
		links := fault.Isolate([]string{st.Client}, st.Nodes)
		if st.Kind == StepReplication {
			links = []history.Link{{Client: ReplicaName(st.Node), Node: st.Node}}
		}
		return one(history.Fault{Kind: linkFaultKinds[st.Fault], Links: links})
	case StepPartition:
		links, err := sc.partitionLinks(st, nem)
		if err != nil {
			return nil, err
		}
		if err := forDrawn(); err != nil {
			return nil, err
		}
		return cutSteps(links, st.For.Min, st.Line, history.Fault{Kind: fault.KindPartition, Links: links}), nil
	case StepStrobe:
		st.Span = fixed(st.Span.Draw(nem))
		return one(history.Fault{Kind: fault.KindClockStrobe, Nodes: []string{st.Node}, Offset: int64(st.Span.Min)})
	case StepClock:
		if st.Rate != 0 {
			return one(history.Fault{Kind: fault.KindClockRate, Nodes: []string{st.Node}, Rate: st.Rate})
		}
		st.Span = fixed(st.Span.Draw(nem))
		return one(history.Fault{Kind: fault.KindClockJump, Nodes: []string{st.Node}, Offset: int64(st.Span.Min)})
	case StepPause:
		if st.Client == "" {
			return one(history.Fault{Kind: fault.KindPause, Nodes: []string{st.Node}})
		}
		if st.Point == "random" {
			points := sc.PausePoints()
			st.Point = string(points[nem.IntN(len(points))])
		}
		// A client pause draws its duration whether or not for: was
		// given as a range (pauseClient).
		st.For, st.HasFor = fixed(st.For.Draw(nem)), true
		return []TimedFault{{Step: st, Records: []history.Fault{{Kind: fault.KindClientPause, Nodes: []string{st.Client}}}}}, nil
	case StepKill:
		return one(history.Fault{Kind: fault.KindKill, Nodes: []string{st.Node}})
	case StepStop:
		return one(history.Fault{Kind: fault.KindStop, Nodes: []string{st.Node}})
	case StepStarve:
		return one(history.Fault{Kind: fault.KindStarve, Nodes: []string{st.Node + st.Client}})
	case StepFsync:
		st.Delay = fixed(st.Delay.Draw(nem))
		return one(history.Fault{Kind: fault.KindFsyncDelay, Nodes: []string{st.Node}})
	}
	return nil, fmt.Errorf("no explicit form for a %s step", st.Kind)
}

var linkFaultKinds = map[string]string{"drop": fault.KindCut, "reset": fault.KindReset, "refuse": fault.KindRefuse, "delay": fault.KindDelay, "lose-reply": fault.KindLostReply}

// partitionLinks are the links a partition step cuts, as partition draws
// them.
func (sc *Scenario) partitionLinks(st Step, nem *rand.Rand) ([]history.Link, error) {
	clients, nodes := st.Clients, st.Nodes
	if len(clients) == 0 {
		clients = sc.Clients
	}
	if len(nodes) == 0 {
		nodes = sc.nodeNames()
	}
	switch st.Shape {
	case fault.ShapeIsolate:
		return fault.Isolate(clients, nodes), nil
	case fault.ShapeClient:
		return fault.ClientCut(st.Client, nodes), nil
	case fault.ShapeHalves:
		return fault.Halves(clients, nodes)
	case fault.ShapeBridge:
		return fault.Bridge(clients, nodes)
	case fault.ShapeRandom:
		return fault.RandomGrudge(clients, nodes, nem), nil
	}
	return nil, fmt.Errorf("unknown partition shape %q", st.Shape)
}

// cutSteps writes a partition's links as one net step per client (drop,
// both ways, which is what a partition does to each link), so that
// shrinking can keep one client's cut without the others'. rec goes on
// the first.
func cutSteps(links []history.Link, d time.Duration, line int, rec history.Fault) []TimedFault {
	var order []string
	byClient := map[string][]string{}
	for _, l := range links {
		if _, ok := byClient[l.Client]; !ok {
			order = append(order, l.Client)
		}
		byClient[l.Client] = append(byClient[l.Client], l.Node)
	}
	var out []TimedFault
	for i, c := range order {
		f := TimedFault{Step: Step{Kind: StepNet, Line: line, Client: c, Nodes: byClient[c], LinkFault: LinkFault{Fault: "drop", Direction: string(fault.Both)}, For: fixed(d), HasFor: true}}
		if i == 0 {
			f.Records = []history.Fault{rec}
		}
		out = append(out, f)
	}
	return out
}

// unrollSchedule draws a random step's schedule as random does and writes
// each of its faults as steps; it returns them and when the schedule ends.
// A drawn partition is written as one net step per client (cutSteps).
func (sc *Scenario) unrollSchedule(st Step, start time.Duration, where string, nem *rand.Rand) ([]TimedFault, time.Duration, error) {
	ops, steps, err := sc.ScheduleSteps(st, nem)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", where, err)
	}
	var out []TimedFault
	end := start
	for j, op := range ops {
		first := len(out)
		for _, f := range steps[j] {
			out = append(out, explicit(f)...)
		}
		for k := first; k < len(out); k++ {
			out[k].At, out[k].From = start+op.At, fmt.Sprintf("%s: %s", where, op)
		}
		end = start + op.At + op.For
	}
	return out, end, nil
}

// explicit is f in the form a scenario file writes it: a drawn partition
// (a partition step with its links) as one net step per client.
func explicit(f TimedFault) []TimedFault {
	if f.Step.Kind != StepPartition || f.Step.Links == nil {
		return []TimedFault{f}
	}
	return cutSteps(f.Step.Links, f.Step.For.Min, f.Step.Line, f.Records[0])
}

// ScheduleSteps draws the random schedule of st (a random step) from nem,
// and writes each drawn fault as the explicit steps that play it: the
// runner plays these, and Unroll writes them for shrinking, so that a
// schedule has one translation from what was drawn to what is done. The
// steps of ops[i] are steps[i]; their At is ops[i].At, from the
// schedule's start.
func (sc *Scenario) ScheduleSteps(st Step, nem *rand.Rand) ([]fault.Op, [][]TimedFault, error) {
	spec := st.Schedule
	spec.Points = sc.PausePoints()
	ops, err := fault.Plan(spec, sc.Clients, sc.nodeNames(), nem)
	if err != nil {
		return nil, nil, err
	}
	steps := make([][]TimedFault, len(ops))
	for j, op := range ops {
		// A client pause stays armed until the next fault is due (the
		// last one: for its own duration), then holds its client for its
		// whole duration: the schedule waits for it.
		within := op.For
		if j+1 < len(ops) {
			within = max(ops[j+1].At-op.At, time.Millisecond)
		}
		if steps[j], err = opSteps(op, within, st.Line); err != nil {
			return nil, nil, err
		}
		for k := range steps[j] {
			steps[j][k].At = op.At
		}
	}
	return ops, steps, nil
}

// opSteps writes one drawn fault of a random schedule as steps, one per
// node or client it acts on (a partition: one step with its drawn links),
// each with what it records as it starts.
func opSteps(op fault.Op, within time.Duration, line int) ([]TimedFault, error) {
	d := fixed(op.For)
	var out []TimedFault
	add := func(st Step, rec history.Fault) {
		st.Line, st.For, st.HasFor = line, d, true
		out = append(out, TimedFault{Step: st, Records: []history.Fault{rec}})
	}
	switch op.Kind {
	case fault.RandomPartition:
		add(Step{Kind: StepPartition, Partition: Partition{Shape: op.Shape, Links: op.Links}},
			history.Fault{Kind: fault.KindPartition, Links: op.Links})
		return out, nil
	case fault.RandomLostReply:
		add(Step{Kind: StepNet, Client: op.Clients[0], Nodes: op.Nodes, LinkFault: LinkFault{Fault: "lose-reply", Direction: string(fault.Both)}},
			history.Fault{Kind: fault.KindLostReply, Links: fault.Isolate(op.Clients, op.Nodes)})
		return out, nil
	case fault.RandomClientPause:
		for _, c := range op.Clients {
			add(Step{Kind: StepPause, Client: c, ClientPause: ClientPause{Point: string(op.Point), Within: within}},
				history.Fault{Kind: fault.KindClientPause, Nodes: []string{c}})
		}
		return out, nil
	}
	for i, n := range op.Nodes {
		switch op.Kind {
		case fault.RandomClock:
			if op.Strobe > 0 {
				add(Step{Kind: StepStrobe, Node: n, Span: fixed(op.Offsets[0]), Period: op.Strobe},
					history.Fault{Kind: fault.KindClockStrobe, Nodes: []string{n}, Offset: int64(op.Offsets[0])})
			} else {
				add(Step{Kind: StepClock, Node: n, Span: fixed(op.Offsets[i])},
					history.Fault{Kind: fault.KindClockJump, Nodes: []string{n}, Offset: int64(op.Offsets[i])})
			}
		case fault.RandomClockRate:
			add(Step{Kind: StepClock, Node: n, Rate: op.Rates[i]},
				history.Fault{Kind: fault.KindClockRate, Nodes: []string{n}, Rate: op.Rates[i]})
		case fault.RandomPause:
			add(Step{Kind: StepPause, Node: n}, history.Fault{Kind: fault.KindPause, Nodes: []string{n}})
		case fault.RandomKill:
			if op.Graceful {
				add(Step{Kind: StepStop, Node: n}, history.Fault{Kind: fault.KindStop, Nodes: []string{n}})
			} else {
				add(Step{Kind: StepKill, Node: n}, history.Fault{Kind: fault.KindKill, Nodes: []string{n}})
			}
		case fault.RandomAmnesia:
			add(Step{Kind: StepKill, Node: n, Amnesia: true}, history.Fault{Kind: fault.KindKill, Nodes: []string{n}})
		case fault.RandomStarve:
			add(Step{Kind: StepStarve, Node: n, Share: op.Share}, history.Fault{Kind: fault.KindStarve, Nodes: []string{n}})
		case fault.RandomPower:
			add(Step{Kind: StepKill, Node: n, Power: true}, history.Fault{Kind: fault.KindKill, Nodes: []string{n}})
		case fault.RandomFsync:
			// Each fsync waits as long as the fault lasts: the disk is
			// slow throughout, and the heal frees what waits.
			add(Step{Kind: StepFsync, Node: n, LinkFault: LinkFault{Delay: fixed(op.For)}}, history.Fault{Kind: fault.KindFsyncDelay, Nodes: []string{n}})
		default:
			return nil, fmt.Errorf("random schedule: unknown fault kind %q", op.Kind)
		}
	}
	return out, nil
}

// nodeNames are the lock nodes, n1..nN.
func (sc *Scenario) nodeNames() []string {
	out := make([]string, sc.Nodes)
	for i := range out {
		out[i] = "n" + strconv.Itoa(i+1)
	}
	return out
}

// PausePoints are where sc's clients can be paused: the lock's hook
// points, and before the write when the workload writes the storage.
func (sc *Scenario) PausePoints() []fault.Point {
	if sc.Workload.HasResource() {
		return fault.ResourcePoints
	}
	return fault.HookPoints
}

// StepNode writes an explicit step — a wait for a time, or a fault as
// Unroll returns it — as an item of a scenario file's steps list, in the
// form Parse reads back: `clock: {node: n3, jump: -681ms, for: 989ms}`.
func StepNode(st Step) (*yaml.Node, error) {
	var fields []*yaml.Node
	field := func(k, v string) { fields = append(fields, scalar(k), scalar(v)) }
	span := func(k string, s Span) { field(k, s.String()) }
	switch st.Kind {
	case StepWait:
		if st.Until != "" {
			return nil, fmt.Errorf("a wait until %s has no explicit form", st.Until)
		}
		return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar(string(StepWait)), scalar(st.Span.String())}}, nil
	case StepNet, StepReplication:
		if st.Kind == StepNet {
			field("client", st.Client)
			fields = append(fields, scalar("nodes"), flowList(st.Nodes))
		} else {
			field("node", st.Node)
			if st.Replica != "" {
				field("replica", st.Replica)
			}
		}
		if st.Fault != "" && st.Fault != "drop" {
			field("fault", st.Fault)
		}
		if st.Direction != "" && st.Direction != string(fault.Both) {
			field("direction", st.Direction)
		}
		if st.Fault == "delay" {
			span("delay", st.Delay)
		}
	case StepStrobe:
		field("node", st.Node)
		span("delta", st.Span)
		field("period", st.Period.String())
	case StepClock:
		field("node", st.Node)
		if st.Rate != 0 {
			field("rate", strconv.FormatFloat(st.Rate, 'g', -1, 64))
		} else {
			span("jump", st.Span)
		}
	case StepPause:
		if st.Client != "" {
			field("client", st.Client)
			field("at", st.Point)
		} else {
			field("node", st.Node)
		}
	case StepKill, StepStop:
		field("node", st.Node)
		if st.Amnesia {
			field("amnesia", "true")
		}
		if st.Power {
			field("power", "true")
		}
	case StepStarve:
		if st.Node != "" {
			field("node", st.Node)
		} else {
			field("client", st.Client)
		}
		field("cpu", strconv.FormatFloat(st.Share*100, 'g', -1, 64)+"%")
	case StepFsync:
		field("node", st.Node)
		span("delay", st.Delay)
	default:
		return nil, fmt.Errorf("a %s step has no explicit form", st.Kind)
	}
	if st.HasFor {
		span("for", st.For)
	}
	if st.Kind == StepPause && st.Client != "" && st.Within > 0 {
		field("within", st.Within.String())
	}
	return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		scalar(string(st.Kind)),
		{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: fields},
	}}, nil
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

func flowList(vs []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, v := range slices.Clone(vs) {
		n.Content = append(n.Content, scalar(v))
	}
	return n
}
