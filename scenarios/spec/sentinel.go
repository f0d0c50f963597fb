package spec

import (
	"fmt"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"
)

// SentinelSpec is the file's cluster.sentinel: Sentinel watches n1 and its
// replicas and fails n1 over on its own; the one-deployment locks find
// the master through it.
type SentinelSpec struct {
	// Count sentinels, s1..sN (three unless given).
	Count int
	// Quorum of sentinels must find the master down (a majority unless
	// given); a failover also needs a majority to elect its leader.
	Quorum int
	// DownAfter and FailoverTimeout are Sentinel's
	// down-after-milliseconds and failover-timeout, kept short in stories.
	DownAfter       time.Duration
	FailoverTimeout time.Duration
}

// ShapeSides is the partition shape that cuts every proxied link between
// two sides, each a list of clients, nodes, replicas and sentinels: with
// Sentinel, the links between servers matter as much as the clients'.
const ShapeSides = "sides"

// UntilPromoted waits until Sentinel has made a replica the master.
const UntilPromoted = "promoted"

// SentinelNames names count sentinels: s1, s2, ...
func SentinelNames(count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("s%d", i+1)
	}
	return out
}

func (p *parser) sentinel(n *yaml.Node, sc *Scenario) *SentinelSpec {
	const field = "cluster.sentinel"
	if n.Kind == 0 {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, field, "want a mapping such as {down_after: 500ms, failover_timeout: 2s}")
		return nil
	}
	s := &SentinelSpec{Count: 3, DownAfter: time.Second, FailoverTimeout: 3 * time.Second}
	var quorum *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "sentinels":
			s.Count = p.count(v, field+".sentinels", 3, 1, 7)
		case "quorum":
			quorum = v
		case "down_after":
			s.DownAfter = p.duration(v, field+".down_after", time.Second, 100*time.Millisecond)
		case "failover_timeout":
			s.FailoverTimeout = p.duration(v, field+".failover_timeout", 3*time.Second, 100*time.Millisecond)
		default:
			p.fail(k, field+"."+k.Value, "unknown field; want sentinels, quorum, down_after or failover_timeout")
		}
	}
	s.Quorum = s.Count/2 + 1
	if quorum != nil {
		s.Quorum = p.count(quorum, field+".quorum", s.Quorum, 1, s.Count)
	}
	if sc.Nodes != 1 || !slices.Contains(sc.Replicas, "n1") {
		p.fail(n, field, "Sentinel watches one master, n1, and fails it over to a replica: want cluster.nodes 1 and cluster.replicas with n1")
	}
	for _, name := range SentinelNames(s.Count) {
		p.nodes[name] = true
	}
	return s
}

// sides parses a partition's sides: lists of clients, nodes, replicas and
// sentinels, each named once.
func (p *parser) sides(st *Step, v *yaml.Node, field string) {
	if v == nil || v.Kind != yaml.SequenceNode || len(v.Content) < 2 {
		p.fail(v, field, "want two or more lists of who is on each side, such as [[n1, s1, c1], [r1, s2, s3, c2]]")
		return
	}
	known := map[string]bool{}
	for n := range p.nodes {
		known[n] = true
	}
	for c := range p.cls {
		known[c] = true
	}
	for node, count := range p.replicated {
		for _, r := range ReplicaNames(node, count) {
			known[r] = true
		}
	}
	seen := map[string]bool{}
	for i, side := range v.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		if side.Kind != yaml.SequenceNode || len(side.Content) == 0 {
			p.fail(side, f, "want a list of names such as [n1, s1, c1]")
			continue
		}
		var names []string
		for _, m := range side.Content {
			switch {
			case !known[m.Value]:
				p.fail(m, f, "unknown name %q; this run has %s", m.Value, names2(known))
			case seen[m.Value]:
				p.fail(m, f, "%s is on two sides", m.Value)
			}
			seen[m.Value] = true
			names = append(names, m.Value)
		}
		st.Sides = append(st.Sides, names)
	}
}

func names2(set map[string]bool) string { return names(set) }
