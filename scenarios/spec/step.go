package spec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"splitbrain/fault"
	"splitbrain/history"
)

// StepKind names what a step does. A step that injects one fault of the
// history's kinds has that kind's name (package fault's), so that a pause
// is "pause" in a scenario file, in the history and as the capability a
// node needs to take it.
type StepKind string

const (
	StepCut     StepKind = fault.KindCut
	StepHeal    StepKind = "heal"
	StepClock   StepKind = "clock"
	StepAcquire StepKind = "acquire"
	StepRelease StepKind = "release"
	StepExtend  StepKind = "extend"
	StepWait    StepKind = "wait"
	// Fault steps, played by runner/play_faults.go.
	StepNet         StepKind = "net"
	StepReplication StepKind = "replication"
	StepPartition   StepKind = fault.KindPartition
	StepStrobe      StepKind = "strobe"
	StepClockReset  StepKind = fault.KindClockReset
	StepPause       StepKind = fault.KindPause
	StepResume      StepKind = "resume"
	StepKill        StepKind = fault.KindKill
	StepStop        StepKind = fault.KindStop
	StepRestart     StepKind = "restart"
	StepPromote     StepKind = fault.KindPromote
	StepRandom      StepKind = "random"
	StepStarve      StepKind = fault.KindStarve
	// StepFsync makes a node's disk slow: each fsync waits (a power
	// loss then takes what everysec had not synced yet).
	StepFsync StepKind = "fsync"
)

// Step is one scripted action. Which fields are set depends on Kind: who
// it acts on and its timing are common to many kinds; what only one kind
// has is grouped by kind (stepKinds says which kind reads which fields).
type Step struct {
	Kind StepKind
	Line int
	// Client is the client a step drives or acts on; Clients, a
	// partition's clients, in the order the shape splits them.
	Client  string
	Clients []string
	// Node is the node a step acts on; Nodes, those of a cut, net step,
	// partition or clock reset.
	Node  string
	Nodes []string
	// Replica is which of Node's replicas (r1, r1b, ...) a replication or
	// promote step acts on.
	Replica string
	// Key is the lock key of acquire, release, extend and wait until
	// expired; empty: the lock's.
	Key string
	// Span is the clock jump (clock), the strobe's delta (strobe) or the
	// pause (wait); a range is drawn from the run's seed.
	Span Span
	// Rate, set instead of a jump, makes a clock step's node's clock run
	// at this factor of real time (1.05: 5 % fast) until healed.
	Rate float64
	// Heal is what a heal step heals: "links", "clocks", "nodes",
	// "clients", "failover" or "all".
	Heal string
	// For heals the fault on its own after this long (for kill and stop:
	// restarts the node, 0s at once); unset (HasFor false) means until a
	// heal, resume or restart step.
	For    Span
	HasFor bool
	// Amnesia: kill, stop restart the node with its data lost.
	Amnesia bool
	// Power: a kill is a power loss, the node's files cut back to what
	// it had fsynced.
	Power bool
	// Period is a strobe's.
	Period time.Duration
	// Share is the share of one CPU a starve step leaves its node or
	// client (0.05: 5 %).
	Share float64
	// Again: a release step retries the client's last release whose
	// outcome was unknown, with the lease it had (etcd issue 22082).
	Again bool
	Outcome
	Condition
	LinkFault
	Partition
	ClientPause
	Schedule fault.ScheduleSpec // random
}

// Outcome is what a scripted acquire (acquired, refused) or extend
// (extended, refused) must achieve for the run to go as scripted; empty:
// any. Expects holds the outcomes named per lock kind, where locks differ
// (expect: {default: acquired, wait-replicas: refused}), any (OutcomeAny)
// among them; Expect is then the default. See ExpectOf.
type Outcome struct {
	Expect  string
	Expects map[string]string
}

// Condition is what a wait step waits for (expired, up, down, ...);
// empty Until: the wait is the step's Span.
type Condition struct {
	Until string
	// Timeout bounds the wait; zero: the default.
	Timeout time.Duration
	// AtMost, instead of Timeout, bounds a wait for a condition that the
	// story may or may not meet: after it the steps go on either way.
	AtMost time.Duration
}

// LinkFault is what a net or replication step does to its links.
type LinkFault struct {
	Fault     string // drop, reset, refuse or delay
	Direction string // both, to-node or to-client
	Delay     Span   // fault delay: how long bytes are held; fsync: how long each fsync waits
}

// Partition is a partition step's shape.
type Partition struct {
	Shape string
	// Sides are who is on which side, for shape sides.
	Sides [][]string
	// Links are a drawn partition's links (ScheduleSteps); Parse never
	// sets them: a partition step of a file draws its links from Shape.
	Links []history.Link
}

// ClientPause is where and how a pause step stops a client.
type ClientPause struct {
	// Point is a hook point, any or random.
	Point string
	// Signal stops the client's driver process (SIGSTOP) at Point.
	Signal bool
	// SignalAuto (signal: auto) stops the process where the lock runs as
	// a driver process, as a GC pause stops every thread of it, and holds
	// an in-process client at its point otherwise: one fault family for
	// every lock.
	SignalAuto bool
	// SignalOff: the file says signal: false, holding the client at its
	// point with its process running — which a lock whose pauses always
	// stop the process (locks.Kind.PauseStops) cannot do: such a story
	// does not fit it (package fit), never a silent SIGSTOP.
	SignalOff bool
	// Within bounds how long the pause stays armed waiting for the client
	// to reach its point (zero: until the run ends); For counts from when
	// the client gets there.
	Within time.Duration
}

// Span is a duration or a range of durations to draw from.
type Span struct {
	Min, Max time.Duration
}

// Draw picks a duration in [Min, Max] from r, in whole milliseconds where
// the range allows, so that logs and reports stay readable.
func (s Span) Draw(r *rand.Rand) time.Duration {
	if s.Max <= s.Min {
		return s.Min
	}
	steps := int64((s.Max - s.Min) / time.Millisecond)
	if steps == 0 {
		return s.Min + time.Duration(r.Int64N(int64(s.Max-s.Min)+1))
	}
	return s.Min + time.Duration(r.Int64N(steps+1))*time.Millisecond
}

func (s Span) String() string {
	if s.Max <= s.Min {
		return s.Min.String()
	}
	return s.Min.String() + ".." + s.Max.String()
}

// stepKind is what the parser knows of one kind of step: the one place a
// kind's fields are listed and decoded.
type stepKind struct {
	kind StepKind
	// fields are the fields of its mapping, as error messages list them;
	// empty: it has only the short form.
	fields string
	// short decodes the short form (wait: 2s, heal: links); nil: the kind
	// is a mapping only.
	short func(p *parser, st *Step, val *yaml.Node, field string) bool
	// decode reads the fields of the mapping, which the parser has checked
	// are among fields; false means the step is not to be used.
	decode func(p *parser, st *Step, in *stepIn) bool
	// needs is the capability a node must have for the step to act on it
	// (see Step.Needs); nil: the step needs none of a node.
	needs func(st Step) (fault.Capability, bool)
}

// stepIn is a step's mapping as its kind's decode reads it.
type stepIn struct {
	val   *yaml.Node            // the mapping
	field string                // where it is: steps[3].pause
	seen  map[string]*yaml.Node // its fields by name
	ok    bool                  // false once a required field was missing
}

// need is the required field name, reported missing when absent.
func (in *stepIn) need(p *parser, name string) *yaml.Node {
	v := in.seen[name]
	if v == nil {
		p.fail(in.val, in.field+"."+name, "missing")
		in.ok = false
	}
	return v
}

// stepKinds are the kinds of step, in the order error messages list them.
var stepKinds = []stepKind{
	{kind: StepCut, fields: "client, nodes", decode: (*parser).decodeCut},
	{kind: StepHeal, short: func(p *parser, st *Step, val *yaml.Node, field string) bool {
		st.Heal = p.enum(val, field, "", "links", "clocks", "nodes", "clients", "failover", "all")
		return st.Heal != ""
	}},
	{kind: StepClock, fields: "node, jump, rate, for", decode: (*parser).decodeClock, needs: needs(fault.Clock)},
	{kind: StepAcquire, fields: "client, key, expect", decode: (*parser).decodeLease},
	{kind: StepRelease, fields: "client, key, again", decode: (*parser).decodeRelease},
	{kind: StepExtend, fields: "client, key, expect", decode: (*parser).decodeLease},
	{kind: StepWait, fields: "until, client, key, node, timeout, at_most",
		short: func(p *parser, st *Step, val *yaml.Node, field string) bool {
			var ok bool
			st.Span, ok = p.waitSpan(val, field)
			return ok
		},
		decode: func(p *parser, st *Step, in *stepIn) bool { return p.parseWaitUntil(st, in) }},
	// Fault steps: parse_faults.go.
	{kind: StepNet, fields: "client, nodes, fault, direction, delay, for", decode: faultStep(func(p *parser, st *Step, in *stepIn) {
		st.Client = p.client(in.need(p, "client"), in.field+".client")
		st.Nodes = p.linkNodes(in.need(p, "nodes"), in.field+".nodes")
		p.parseLinkFault(st, in)
	})},
	{kind: StepReplication, fields: "node, replica, fault, direction, delay, for", decode: faultStep(func(p *parser, st *Step, in *stepIn) {
		st.Node = p.replicatedNode(in.need(p, "node"), in.field+".node")
		st.Replica = p.replicaOf(st.Node, in.seen["replica"], in.field+".replica")
		p.parseLinkFault(st, in)
		if v := in.seen["fault"]; v != nil && st.Fault == "lose-reply" {
			p.fail(v, in.field+".fault", "a replication link carries a stream, not replies; lose-reply is for a client's links (net)")
		}
	})},
	{kind: StepPartition, fields: "shape, client, clients, nodes, sides, for", decode: faultStep((*parser).parsePartition)},
	{kind: StepStrobe, fields: "node, delta, period, for", decode: faultStep((*parser).parseStrobe), needs: needs(fault.Clock)},
	{kind: StepClockReset, fields: "nodes", decode: faultStep(func(p *parser, st *Step, in *stepIn) {
		if v := in.seen["nodes"]; v != nil {
			st.Nodes = p.parseNodeList(v, in.field+".nodes", true)
		}
	}), needs: needs(fault.Clock)},
	{kind: StepPause, fields: "node, client, at, for, within, signal", decode: faultStep((*parser).pauseTarget),
		needs: func(st Step) (fault.Capability, bool) { return fault.Pause, st.Node != "" }},
	{kind: StepResume, fields: "node, client", decode: faultStep((*parser).pauseTarget)},
	{kind: StepKill, fields: "node, amnesia, power, for", decode: faultStep((*parser).parseNodeDown), needs: needsDown(fault.Kill)},
	{kind: StepStop, fields: "node, amnesia, for", decode: faultStep((*parser).parseNodeDown), needs: needsDown(fault.Stop)},
	{kind: StepRestart, fields: "node", decode: faultStep(func(p *parser, st *Step, in *stepIn) {
		st.Node = p.parseNode(in.need(p, "node"), in.field+".node")
	})},
	{kind: StepPromote, fields: "node, replica", decode: faultStep(func(p *parser, st *Step, in *stepIn) {
		st.Node = p.replicatedNode(in.need(p, "node"), in.field+".node")
		st.Replica = p.replicaOf(st.Node, in.seen["replica"], in.field+".replica")
	})},
	{kind: StepStarve, fields: "node, client, cpu, for", decode: faultStep((*parser).parseStarve),
		needs: func(st Step) (fault.Capability, bool) { return fault.CPU, st.Node != "" }},
	{kind: StepFsync, fields: "node, delay, for", decode: faultStep((*parser).parseFsync), needs: needs(fault.Fsync)},
	{kind: StepRandom, fields: "faults, targets, interval, duration, for, max_clock, max_rate", decode: faultStep((*parser).parseRandom),
		needs: func(st Step) (fault.Capability, bool) {
			// The first of the schedule's kinds that some node kinds
			// lack; the others every kind takes.
			for _, f := range st.Schedule.Kinds {
				switch f {
				case fault.RandomClock, fault.RandomClockRate:
					return fault.Clock, true
				case fault.RandomAmnesia:
					return fault.Wipe, true
				case fault.RandomPower:
					return fault.Power, true
				case fault.RandomStarve:
					return fault.CPU, true
				case fault.RandomFsync:
					return fault.Fsync, true
				}
			}
			return "", false
		}},
}

// needs is a step kind's needs when it always needs capability c.
func needs(c fault.Capability) func(Step) (fault.Capability, bool) {
	return func(Step) (fault.Capability, bool) { return c, true }
}

// needsDown is kill's or stop's needs: c, or the wipe of a node that comes
// back with its data lost.
func needsDown(c fault.Capability) func(Step) (fault.Capability, bool) {
	return func(st Step) (fault.Capability, bool) {
		switch {
		case st.Amnesia:
			return fault.Wipe, true
		case st.Power:
			return fault.Power, true
		}
		return c, true
	}
}

// Needs is the capability a node must have for st to act on it (a clock
// step needs clock offsets, a kill with amnesia a wipe), if any: what a
// lock kind's server must support for a story to be played against it.
// Link faults are left out: every kind of server takes them.
func (st Step) Needs() (fault.Capability, bool) {
	if sk, ok := stepKindOf(st.Kind); ok && sk.needs != nil {
		return sk.needs(st)
	}
	return "", false
}

// SplitsNodes reports whether a partition's sides put lock nodes (n1, n2,
// ...) on different sides: a split of the ensemble itself, which needs
// its members' links to each other proxied (fault.PeerLink).
func (p Partition) SplitsNodes() bool {
	with := 0
	for _, s := range p.Sides {
		if slices.ContainsFunc(s, func(n string) bool { return strings.HasPrefix(n, "n") }) {
			with++
		}
	}
	return with > 1
}

// StepKinds lists every kind of step, in the order messages list them.
func StepKinds() []StepKind {
	out := make([]StepKind, len(stepKinds))
	for i, sk := range stepKinds {
		out[i] = sk.kind
	}
	return out
}

// stepKindOf finds kind k.
func stepKindOf(k StepKind) (stepKind, bool) {
	for _, sk := range stepKinds {
		if sk.kind == k {
			return sk, true
		}
	}
	return stepKind{}, false
}

func (p *parser) parseStep(n *yaml.Node, i int) (Step, bool) {
	field := fmt.Sprintf("steps[%d]", i)
	var names []string
	for _, k := range StepKinds() {
		names = append(names, string(k))
	}
	kinds := strings.Join(names, ", ")
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		p.fail(n, field, "want a mapping with exactly one of %s", kinds)
		return Step{}, false
	}
	key, val := n.Content[0], n.Content[1]
	st := Step{Kind: StepKind(key.Value), Line: key.Line}
	field += "." + key.Value
	sk, known := stepKindOf(st.Kind)
	switch {
	case !known:
		p.fail(key, field, "unknown step; want one of %s", kinds)
		return Step{}, false
	case sk.short != nil && (sk.fields == "" || val.Kind != yaml.MappingNode):
		return st, sk.short(p, &st, val, field)
	case val.Kind != yaml.MappingNode:
		p.fail(val, field, "want a mapping with fields %s", sk.fields)
		return Step{}, false
	}
	in := &stepIn{val: val, field: field, seen: map[string]*yaml.Node{}, ok: true}
	for j := 0; j+1 < len(val.Content); j += 2 {
		k, v := val.Content[j], val.Content[j+1]
		in.seen[k.Value] = v
		if !strings.Contains(", "+sk.fields+",", ", "+k.Value+",") {
			p.fail(k, field+"."+k.Value, "unknown field; valid fields: %s", sk.fields)
			in.ok = false
		}
	}
	good := sk.decode(p, &st, in)
	return st, good && in.ok
}

func (p *parser) decodeCut(st *Step, in *stepIn) bool {
	st.Client = p.client(in.need(p, "client"), in.field+".client")
	good := true
	if v := in.need(p, "nodes"); v != nil {
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			p.fail(v, in.field+".nodes", "want a list of node names such as [n4, n5]")
			good = false
		}
		for _, nn := range v.Content {
			st.Nodes = append(st.Nodes, p.parseNode(nn, in.field+".nodes"))
		}
	}
	return good
}

func (p *parser) decodeClock(st *Step, in *stepIn) bool {
	st.Node = p.parseNode(in.need(p, "node"), in.field+".node")
	ok := true
	jump, rate := in.seen["jump"], in.seen["rate"]
	switch {
	case jump != nil && rate != nil:
		p.fail(rate, in.field+".rate", "want exactly one of jump (the clock steps) or rate (it runs fast or slow), not both")
		ok = false
	case rate != nil:
		st.Rate, ok = p.clockRate(rate, in.field+".rate")
	default:
		if v := in.need(p, "jump"); v != nil {
			var good bool
			if st.Span, good = p.span(v, in.field+".jump", true); !good {
				ok = false
			}
		}
	}
	// A jump with for: sets the clock back on its own, as a random
	// schedule's clock faults do: a shrunk schedule (package shrink)
	// writes each of them as one step.
	if v := in.seen["for"]; v != nil {
		var good bool
		if st.For, good = p.span(v, in.field+".for", false); good && st.For.Min == 0 {
			p.fail(v, in.field+".for", "%q: want more than 0s", v.Value)
			good = false
		}
		st.HasFor = good
		ok = ok && good
	}
	return ok
}

// clockRate parses a clock rate: a factor of real time (1.05), or its
// error in percent (+5%, -0.05%) or in ppm (500ppm), as NTP states it.
func (p *parser) clockRate(n *yaml.Node, field string) (float64, bool) {
	r, err := ParseRate(n.Value)
	if err == nil && n.Kind == yaml.ScalarNode {
		err = fault.CheckRate(r)
	}
	if err != nil || n.Kind != yaml.ScalarNode {
		p.fail(n, field, "%q: want a factor of real time such as 1.05, or an error such as +5%%, -0.05%% or 500ppm (from %v to %v times real time, not 1)",
			n.Value, fault.MinClockRate, fault.MaxClockRate)
		return 0, false
	}
	return r, true
}

// ParseRate reads a clock rate as a scenario writes it: a factor of real
// time (1.05), or its error in percent (+5%, -0.05%) or ppm (500ppm).
func ParseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	scale, num := 0.0, s
	switch {
	case strings.HasSuffix(s, "%"):
		scale, num = 1e-2, strings.TrimSuffix(s, "%")
	case strings.HasSuffix(s, "ppm"):
		scale, num = 1e-6, strings.TrimSuffix(s, "ppm")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("clock rate %q: want a number such as 1.05, +5%% or 500ppm", s)
	}
	if scale == 0 {
		return v, nil
	}
	return 1 + v*scale, nil
}

// decodeLease reads acquire, release and extend.
func (p *parser) decodeLease(st *Step, in *stepIn) bool {
	st.Client = p.client(in.need(p, "client"), in.field+".client")
	if v := in.seen["key"]; v != nil {
		st.Key = p.lockKey(v, in.field+".key")
	}
	return p.expectOutcome(st, in.seen["expect"], in.field+".expect")
}

// decodeRelease is a release, or with again: true the retry of the
// client's last release whose outcome was unknown.
func (p *parser) decodeRelease(st *Step, in *stepIn) bool {
	if v := in.seen["again"]; v != nil {
		switch strings.ToLower(v.Value) {
		case "true", "on":
			st.Again = true
		case "false", "off":
		default:
			p.fail(v, in.field+".again", "%q is not valid; want true (retry the client's last release whose outcome was unknown, with the lease it had) or false", v.Value)
			return false
		}
	}
	return p.decodeLease(st, in)
}

func (p *parser) parseNode(n *yaml.Node, field string) string {
	if n == nil {
		return ""
	}
	if !p.nodes[n.Value] {
		p.fail(n, field, "unknown node %q; this cluster has %s", n.Value, names(p.nodes))
	}
	return n.Value
}

func (p *parser) client(n *yaml.Node, field string) string {
	if n == nil {
		return ""
	}
	if !p.cls[n.Value] {
		p.fail(n, field, "unknown client %q; this workload has %s", n.Value, names(p.cls))
	}
	return n.Value
}

func names(set map[string]bool) string {
	var out []string
	for n := range set {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) < len(out[j])
		}
		return out[i] < out[j]
	})
	return strings.Join(out, ", ")
}
