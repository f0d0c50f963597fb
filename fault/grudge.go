package fault

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"splitbrain/history"
)

// A grudge is the set of client↔node links a partition cuts. Redlock's
// nodes never talk to each other, so a partition of a Redlock deployment is
// a bipartite grudge between clients and nodes: the shapes below are
// Jepsen's partitions projected onto clients × nodes. Each takes clients
// and nodes in the order given, so a caller that wants a random shape
// shuffles them first (Shuffled) with the run's seed.

// Shapes of partition, as named in scenario files and schedules.
const (
	ShapeIsolate = "isolate" // every client cut from some nodes
	ShapeHalves  = "halves"  // a majority and a minority side
	ShapeClient  = "client"  // one client cut from some nodes
	ShapeBridge  = "bridge"  // two sides and one node both reach
	ShapeRandom  = "random"  // each link cut or not, at random
)

// Isolate cuts every client from each of nodes.
func Isolate(clients, nodes []string) []history.Link {
	var out []history.Link
	for _, c := range clients {
		for _, n := range nodes {
			out = append(out, history.Link{Client: c, Node: n})
		}
	}
	return out
}

// ClientCut cuts one client from each of nodes.
func ClientCut(client string, nodes []string) []history.Link {
	return Isolate([]string{client}, nodes)
}

// Halves splits nodes into two sides, the first ⌈n/2⌉ nodes (a majority
// when n is odd; with an even n neither side has one) and the rest, and
// clients alternately into the first and the second side; each client is
// cut from the nodes of the other side. With one node nothing can be
// split.
func Halves(clients, nodes []string) ([]history.Link, error) {
	if len(nodes) < 2 {
		return nil, fmt.Errorf("halves: %d node(s), want at least 2", len(nodes))
	}
	first := nodes[:(len(nodes)+1)/2]
	return sides(clients, first, nodes[len(first):]), nil
}

// Bridge splits nodes into two sides and a bridge, the middle node, that
// both sides reach: clients alternate between the sides and each is cut
// from the other side's nodes but not from the bridge. Jepsen's bridge
// lets a node belong to two majorities at once.
func Bridge(clients, nodes []string) ([]history.Link, error) {
	if len(nodes) < 3 {
		return nil, fmt.Errorf("bridge: %d node(s), want at least 3", len(nodes))
	}
	mid := len(nodes) / 2
	return sides(clients, nodes[:mid], nodes[mid+1:]), nil
}

// sides cuts clients alternately from b (those on side a) and from a.
func sides(clients, a, b []string) []history.Link {
	var out []history.Link
	for i, c := range clients {
		other := b
		if i%2 == 1 {
			other = a
		}
		out = append(out, ClientCut(c, other)...)
	}
	return out
}

// RandomGrudge cuts each client↔node link with probability 1/2, and at
// least one.
func RandomGrudge(clients, nodes []string, r *rand.Rand) []history.Link {
	all := Isolate(clients, nodes)
	var out []history.Link
	for _, l := range all {
		if r.IntN(2) == 0 {
			out = append(out, l)
		}
	}
	if len(out) == 0 && len(all) > 0 {
		out = append(out, all[r.IntN(len(all))])
	}
	return out
}

// Shuffled returns a shuffled copy of xs.
func Shuffled(xs []string, r *rand.Rand) []string {
	out := slices.Clone(xs)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
