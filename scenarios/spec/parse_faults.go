package spec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"splitbrain/fault"
)

// This file parses the cluster's fault-related settings and the fault
// steps; runner/play_faults.go plays them.

// PersistModes are the modes cluster.persistence takes, cluster.Persistence's
// names (the runner converts them; a test in scenarios checks that the two
// lists agree): the parser knows them without importing the servers.
var PersistModes = []string{PersistNone, "aof-everysec", "aof-always"}

// PersistNone, the default mode, keeps nothing across a restart.
const PersistNone = "none"

// persistence parses cluster.persistence: one mode for every node, or a
// mapping of node names (and "default") to modes.
func (p *parser) persistence(n *yaml.Node, nodes int) map[string]string {
	out := map[string]string{}
	all := func(mode string) {
		for i := 1; i <= nodes; i++ {
			out[fmt.Sprintf("n%d", i)] = mode
		}
	}
	switch n.Kind {
	case 0:
		all(PersistNone)
	case yaml.ScalarNode:
		all(p.enum(n, "cluster.persistence", PersistNone, PersistModes...))
	case yaml.MappingNode:
		all(PersistNone)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			field := "cluster.persistence." + k.Value
			if k.Value == "default" {
				mode := p.enum(v, field, PersistNone, PersistModes...)
				for name := range out {
					if !p.namedIn(n, name) {
						out[name] = mode
					}
				}
				continue
			}
			if p.parseNode(k, field) != "" && p.nodes[k.Value] {
				out[k.Value] = p.enum(v, field, PersistNone, PersistModes...)
			}
		}
	default:
		p.fail(n, "cluster.persistence", "want a mode (%s) or a mapping of nodes to modes such as {default: none, n3: aof-always}",
			strings.Join(PersistModes, ", "))
	}
	return out
}

// namedIn reports whether a persistence mapping names node.
func (p *parser) namedIn(m *yaml.Node, node string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == node {
			return true
		}
	}
	return false
}

// maxReplicas bounds the replicas of one node: Redisson's story needs two.
const maxReplicas = 4

// replicas parses cluster.replicas: a list of the nodes that get one
// replica each, or a mapping from node to how many it gets ({n1: 2}, for
// a story where one replica acknowledges a write and the other does not).
// It returns the nodes, in order, and the counts above one.
func (p *parser) replicas(n *yaml.Node) ([]string, map[string]int) {
	const field = "cluster.replicas"
	p.replicated = map[string]int{}
	if n.Kind == 0 {
		return nil, nil
	}
	var out []string
	add := func(k *yaml.Node, count int) {
		name := p.parseNode(k, field)
		if slices.Contains(out, name) {
			p.fail(k, field, "%s given twice", name)
			return
		}
		out = append(out, name)
		p.replicated[name] = count
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, v := range n.Content {
			add(v, 1)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			add(k, p.count(v, field+"."+k.Value, 1, 1, maxReplicas))
		}
	default:
		p.fail(n, field, "want a list of the nodes that get a replica, such as [n1], or how many each gets, such as {n1: 2}")
		return nil, nil
	}
	counts := map[string]int{}
	for name, c := range p.replicated {
		if c > 1 {
			counts[name] = c
		}
	}
	if len(counts) == 0 {
		counts = nil
	}
	return out, counts
}

// ReplicaName is the name of node's (first) replica: n1's is r1.
func ReplicaName(node string) string { return ReplicaNames(node, 1)[0] }

// ReplicaNames names count replicas of node: n1's are r1, r1b, r1c, ...
func ReplicaNames(node string, count int) []string {
	base := "r" + strings.TrimPrefix(node, "n")
	out := []string{base}
	for i := 1; i < count; i++ {
		out = append(out, base+string(rune('a'+i)))
	}
	return out
}

// ReplicasOf names node's replicas; none when it has none.
func (sc *Scenario) ReplicasOf(node string) []string {
	if !slices.Contains(sc.Replicas, node) {
		return nil
	}
	return ReplicaNames(node, max(sc.ReplicaCount[node], 1))
}

var (
	linkFaults = []string{"drop", "reset", "refuse", "delay", "lose-reply"}
	directions = []string{string(fault.Both), string(fault.ToNode), string(fault.ToClient)}
	shapes     = []string{fault.ShapeIsolate, fault.ShapeClient, fault.ShapeHalves, fault.ShapeBridge, fault.ShapeRandom, ShapeSides}
)

// faultStep wraps the decoder of a fault step's fields: its for: is read
// first, the same for every fault step (a random schedule's for: is its
// length, which it reads itself), and the step is good when its fields
// added no error.
func faultStep(decode func(p *parser, st *Step, in *stepIn)) func(p *parser, st *Step, in *stepIn) bool {
	return func(p *parser, st *Step, in *stepIn) bool {
		before := len(p.errs)
		if v := in.seen["for"]; v != nil && st.Kind != StepRandom {
			var good bool
			if st.For, good = p.span(v, in.field+".for", false); good {
				st.HasFor = true
				if st.For.Min == 0 && st.Kind != StepKill && st.Kind != StepStop {
					p.fail(v, in.field+".for", "%q: want more than 0s (0s means \"restart at once\" and is for kill and stop only)", v.Value)
				}
			}
		}
		decode(p, st, in)
		return len(p.errs) == before
	}
}

func (p *parser) parseStrobe(st *Step, in *stepIn) {
	st.Node = p.parseNode(in.need(p, "node"), in.field+".node")
	if v := in.need(p, "delta"); v != nil {
		if sp, good := p.span(v, in.field+".delta", true); good {
			if sp.Min <= 0 && sp.Max >= 0 {
				p.fail(v, in.field+".delta", "%q: want an offset that cannot be 0, such as 5s, -2s or 1s..3s", v.Value)
			}
			st.Span = sp
		}
	}
	st.Period = p.durationOf(in.need(p, "period"), in.field+".period")
}

// parseNodeDown reads kill and stop.
func (p *parser) parseNodeDown(st *Step, in *stepIn) {
	st.Node = p.parseNode(in.need(p, "node"), in.field+".node")
	if v := in.seen["amnesia"]; v != nil {
		st.Amnesia = p.boolean(v, in.field+".amnesia")
	}
	if v := in.seen["power"]; v != nil {
		st.Power = p.boolean(v, in.field+".power")
		if st.Power && st.Amnesia {
			p.fail(v, in.field+".power", "a power loss loses what was not fsynced, amnesia everything: want one of them")
		}
	}
}

func (p *parser) parseLinkFault(st *Step, in *stepIn) {
	seen, field := in.seen, in.field
	st.Fault, st.Direction = "drop", string(fault.Both)
	if v := seen["fault"]; v != nil {
		st.Fault = p.enum(v, field+".fault", "drop", linkFaults...)
	}
	if v := seen["direction"]; v != nil {
		st.Direction = p.enum(v, field+".direction", string(fault.Both), directions...)
		if st.Fault == "refuse" && st.Direction != string(fault.Both) {
			p.fail(v, field+".direction", "refuse turns connections away, which has no direction; leave direction out")
		}
		if st.Fault == "lose-reply" {
			p.fail(v, field+".direction", "lose-reply loses a reply, on its way to the client; leave direction out")
		}
	}
	v := seen["delay"]
	switch {
	case st.Fault == "delay" && v == nil:
		// Named at the line that asked for the delay.
		p.fail(seen["fault"], field+".delay", "missing: fault delay needs how long bytes are held, such as delay: 90s")
	case st.Fault != "delay" && v != nil:
		p.fail(v, field+".delay", "only for fault: delay")
	case v != nil:
		if sp, good := p.span(v, field+".delay", false); good {
			if sp.Min < time.Millisecond || sp.Max > fault.MaxDelay {
				p.fail(v, field+".delay", "%q: want from 1ms to %v", v.Value, fault.MaxDelay)
			}
			st.Delay = sp
		}
	}
}

func (p *parser) parsePartition(st *Step, in *stepIn) {
	val, field, seen := in.val, in.field, in.seen
	need := func(name string) *yaml.Node { return in.need(p, name) }
	if v := need("shape"); v != nil {
		st.Shape = p.enum(v, field+".shape", "", shapes...)
	}
	if v := seen["client"]; v != nil {
		st.Client = p.client(v, field+".client")
	}
	if v := seen["clients"]; v != nil {
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			p.fail(v, field+".clients", "want a list of clients such as [c1, c2]")
		}
		for _, c := range v.Content {
			st.Clients = append(st.Clients, p.client(c, field+".clients"))
		}
	}
	if v := seen["nodes"]; v != nil {
		st.Nodes = p.parseNodeList(v, field+".nodes", true)
	}
	if v := seen["sides"]; v != nil && st.Shape != ShapeSides {
		p.fail(v, field+".sides", "only for shape sides")
	}
	notFor := func(name, why string) {
		if v := seen[name]; v != nil {
			p.fail(v, field+"."+name, "not used by shape %s: %s", st.Shape, why)
		}
	}
	switch st.Shape {
	case fault.ShapeIsolate:
		if seen["nodes"] == nil {
			p.fail(val, field+".nodes", "missing: shape isolate cuts every client from these nodes")
		}
		notFor("client", "it cuts every client (or those in clients)")
	case fault.ShapeClient:
		if seen["client"] == nil || seen["nodes"] == nil {
			p.fail(val, field, "shape client needs client and nodes: the client is cut from those nodes")
		}
		notFor("clients", "it cuts one client, given as client")
	case fault.ShapeHalves, fault.ShapeBridge:
		notFor("client", "list the clients in the order they alternate between the sides as clients")
		min := map[string]int{fault.ShapeHalves: 2, fault.ShapeBridge: 3}[st.Shape]
		n := len(st.Nodes)
		if seen["nodes"] == nil {
			n = len(p.nodes)
		}
		if n < min {
			p.fail(val, field+".nodes", "shape %s needs at least %d nodes, has %d", st.Shape, min, n)
		}
	case ShapeSides:
		p.sides(st, seen["sides"], field+".sides")
		notFor("client", "list every client on its side")
		notFor("clients", "list every client on its side")
		notFor("nodes", "list every node on its side")
	case fault.ShapeRandom:
		notFor("client", "each client↔node link is cut or not at random")
		notFor("nodes", "each client↔node link is cut or not at random")
	}
}

func (p *parser) pauseTarget(st *Step, in *stepIn) {
	val, field, seen := in.val, in.field, in.seen
	node, client := seen["node"], seen["client"]
	if (node == nil) == (client == nil) {
		p.fail(val, field, "want exactly one of node (pause the redis-server) or client (a client's GC pause)")
		return
	}
	if node != nil {
		st.Node = p.parseNode(node, field+".node")
		for _, f := range []string{"at", "within", "signal"} {
			if v := seen[f]; v != nil {
				p.fail(v, field+"."+f, "only for a client pause")
			}
		}
		return
	}
	st.Client = p.client(client, field+".client")
	if st.Kind == StepResume {
		return
	}
	points := []string{string(fault.AfterReplies), string(fault.AfterAcquire), string(fault.BeforeWrite), string(fault.BeforeRelease), string(fault.AnyPoint), "random"}
	if v := seen["at"]; v != nil {
		st.Point = p.enum(v, field+".at", "", points...)
		if st.Point == string(fault.BeforeWrite) && !p.storage {
			p.fail(v, field+".at", "before-write is where a client writes the storage, which only the counter, bank and set workloads do; use one of them, or another point")
		}
	} else {
		p.fail(val, field+".at", "missing: where the client stops, one of %s", strings.Join(points, ", "))
	}
	// Steps run one after another: a client held without an end would
	// block the step that drives it, and with it the script, for good.
	if !st.HasFor && seen["for"] == nil {
		p.fail(val, field+".for", "missing: a client pause needs a duration, how long the client stays stopped once it reaches its point, such as for: 3s")
	}
	if v := seen["within"]; v != nil {
		st.Within = p.duration(v, field+".within", 0, time.Millisecond)
	}
	if v := seen["signal"]; v != nil {
		if v.Kind == yaml.ScalarNode && v.Value == "auto" {
			st.SignalAuto = true
		} else if v.Kind != yaml.ScalarNode || v.Decode(&st.Signal) != nil {
			p.fail(v, field+".signal", "%q is not valid; want true (stop the driver's process), false (hold the client at its point) or auto (the process where the lock has one, the client otherwise)", v.Value)
		} else {
			st.SignalOff = !st.Signal
		}
	}
}

func (p *parser) parseRandom(st *Step, in *stepIn) {
	val, field, seen := in.val, in.field, in.seen
	need := func(name string) *yaml.Node { return in.need(p, name) }
	s := &st.Schedule
	before := len(p.errs)
	if v := need("faults"); v != nil {
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			p.fail(v, field+".faults", "want a list of fault kinds, some of %s", strings.Join(fault.RandomKinds, ", "))
		}
		for _, k := range v.Content {
			if kind := p.enum(k, field+".faults", "", fault.RandomKinds...); kind != "" {
				s.Kinds = append(s.Kinds, kind)
			}
		}
	}
	if v := seen["targets"]; v != nil {
		names := make([]string, len(fault.Targets))
		for i, t := range fault.Targets {
			names[i] = string(t)
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			p.fail(v, field+".targets", "want a list, some of %s", strings.Join(names, ", "))
		}
		for _, t := range v.Content {
			if target := p.enum(t, field+".targets", "", names...); target != "" {
				s.Targets = append(s.Targets, fault.Target(target))
			}
		}
	}
	s.Interval = p.durationOf(need("interval"), field+".interval")
	if v := need("duration"); v != nil {
		if sp, good := p.span(v, field+".duration", false); good {
			s.MinFor, s.MaxFor = sp.Min, sp.Max
		}
	}
	s.Total = p.durationOf(need("for"), field+".for")
	s.MaxClock = p.durationOf(seen["max_clock"], field+".max_clock")
	if v := seen["max_rate"]; v != nil {
		s.MaxRate = p.rateError(v, field+".max_rate")
	}
	if len(p.errs) == before {
		if err := s.Validate(); err != nil {
			for _, e := range joined(err) {
				p.fail(val, field, "%v", e)
			}
		}
	}
}

// joined splits an errors.Join result into its errors.
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// durationOf parses a duration of at least 1ms; a missing one (nil, already
// reported if required) is 0.
func (p *parser) durationOf(n *yaml.Node, field string) time.Duration {
	if n == nil {
		return 0
	}
	return p.duration(n, field, 0, time.Millisecond)
}

// nodeList parses a list of lock nodes.
func (p *parser) parseNodeList(n *yaml.Node, field string, nonEmpty bool) []string {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode || (nonEmpty && len(n.Content) == 0) {
		p.fail(n, field, "want a list of node names such as [n4, n5]")
		return nil
	}
	var out []string
	for _, v := range n.Content {
		out = append(out, p.parseNode(v, field))
	}
	return out
}

// linkNodes parses the nodes of a net step: lock nodes, and the storage
// node when the workload has one.
func (p *parser) linkNodes(n *yaml.Node, field string) []string {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.fail(n, field, "want a list of node names such as [n4, n5]")
		return nil
	}
	var out []string
	for _, v := range n.Content {
		switch {
		case v.Value == StorageNode && p.storage:
			out = append(out, StorageNode)
		case v.Value == StorageNode:
			p.fail(v, field, "no storage node: only the counter, bank and set workloads have one")
		default:
			out = append(out, p.parseNode(v, field))
		}
	}
	return out
}

// replicatedNode parses a node that must have a replica.
func (p *parser) replicatedNode(n *yaml.Node, field string) string {
	name := p.parseNode(n, field)
	if name != "" && p.nodes[name] && p.replicated[name] == 0 {
		p.fail(n, field, "%s has no replica; add it to cluster.replicas, such as replicas: [%s]", name, name)
	}
	return name
}

// replicaOf parses the replica a replication or promote step acts on: one
// of node's (r1, r1b, ...); without one, its first.
func (p *parser) replicaOf(node string, n *yaml.Node, field string) string {
	count := p.replicated[node]
	if count == 0 {
		return "" // replicatedNode said why
	}
	names := ReplicaNames(node, count)
	if n == nil {
		return names[0]
	}
	if !slices.Contains(names, n.Value) {
		p.fail(n, field, "%q is not a replica of %s; want one of %s (cluster.replicas gives %s %d)",
			n.Value, node, strings.Join(names, ", "), node, count)
		return names[0]
	}
	return n.Value
}

func (p *parser) boolean(n *yaml.Node, field string) bool {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.fail(n, field, "%q is not valid; want true or false", n.Value)
	}
	return b
}

// rateError parses a clock rate's largest error, in percent or ppm (5%,
// 500ppm): how far from real time a random schedule's clock rates go.
func (p *parser) rateError(n *yaml.Node, field string) float64 {
	v := strings.TrimSpace(n.Value)
	r, err := ParseRate(v)
	if err != nil || n.Kind != yaml.ScalarNode || !(strings.HasSuffix(v, "%") || strings.HasSuffix(v, "ppm")) || r <= 1 {
		p.fail(n, field, "%q: want the largest error of a clock's rate, in percent or ppm, such as 5%% or 500ppm", n.Value)
		return 0
	}
	return r - 1
}

// parseStarve reads a starve step: a node or a client, and the share of
// one CPU it keeps, as a fraction or in percent (0.05, 5%).
func (p *parser) parseStarve(st *Step, in *stepIn) {
	node, client := in.seen["node"], in.seen["client"]
	if (node == nil) == (client == nil) {
		p.fail(in.val, in.field, "want exactly one of node (starve the server) or client (starve its lock driver's process)")
		return
	}
	if node != nil {
		st.Node = p.parseNode(node, in.field+".node")
	} else {
		st.Client = p.client(client, in.field+".client")
	}
	if v := in.need(p, "cpu"); v != nil {
		st.Share = p.cpuShare(v, in.field+".cpu")
	}
}

// parseFsync is a slow disk: the node and how long each fsync waits.
func (p *parser) parseFsync(st *Step, in *stepIn) {
	st.Node = p.parseNode(in.need(p, "node"), in.field+".node")
	if v := in.need(p, "delay"); v != nil {
		if sp, good := p.span(v, in.field+".delay", false); good {
			if sp.Min < time.Millisecond || sp.Max > fault.MaxDelay {
				p.fail(v, in.field+".delay", "%q: want from 1ms to %v", v.Value, fault.MaxDelay)
			}
			st.Delay = sp
		}
	}
}

// cpuShare parses a share of one CPU: 0.05 or 5%.
func (p *parser) cpuShare(n *yaml.Node, field string) float64 {
	v := strings.TrimSpace(n.Value)
	scale := 1.0
	if num, ok := strings.CutSuffix(v, "%"); ok {
		v, scale = strings.TrimSpace(num), 0.01
	}
	f, err := strconv.ParseFloat(v, 64)
	share := f * scale
	if n.Kind != yaml.ScalarNode || err != nil || !(share >= fault.MinCPUShare && share <= fault.MaxCPUShare) {
		p.fail(n, field, "%q: want the share of one CPU it keeps, from %v%% to %v%%, such as 5%% or 0.05",
			n.Value, fault.MinCPUShare*100, fault.MaxCPUShare*100)
		return 0
	}
	return share
}
