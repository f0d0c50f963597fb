package fault_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"splitbrain/fault"
	"splitbrain/history"
)

func links(pairs ...string) []history.Link {
	var out []history.Link
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, history.Link{Client: pairs[i], Node: pairs[i+1]})
	}
	return out
}

var five = []string{"n1", "n2", "n3", "n4", "n5"}

func TestGrudgeShapes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		got     func() ([]history.Link, error)
		want    []history.Link
		wantErr bool
	}{
		{"isolate one node", func() ([]history.Link, error) { return fault.Isolate([]string{"c1", "c2"}, []string{"n3"}), nil },
			links("c1", "n3", "c2", "n3"), false},
		{"client cut", func() ([]history.Link, error) { return fault.ClientCut("c1", []string{"n4", "n5"}), nil },
			links("c1", "n4", "c1", "n5"), false},
		{"halves of five", func() ([]history.Link, error) { return fault.Halves([]string{"c1", "c2", "c3"}, five) },
			links("c1", "n4", "c1", "n5", "c2", "n1", "c2", "n2", "c2", "n3", "c3", "n4", "c3", "n5"), false},
		{"halves of two", func() ([]history.Link, error) { return fault.Halves([]string{"c1", "c2"}, []string{"n1", "n2"}) },
			links("c1", "n2", "c2", "n1"), false},
		{"halves of four", func() ([]history.Link, error) { return fault.Halves([]string{"c1", "c2"}, five[:4]) },
			links("c1", "n3", "c1", "n4", "c2", "n1", "c2", "n2"), false},
		{"halves of one", func() ([]history.Link, error) { return fault.Halves([]string{"c1"}, []string{"n1"}) }, nil, true},
		{"bridge of five", func() ([]history.Link, error) { return fault.Bridge([]string{"c1", "c2"}, five) },
			links("c1", "n4", "c1", "n5", "c2", "n1", "c2", "n2"), false},
		{"bridge of four", func() ([]history.Link, error) { return fault.Bridge([]string{"c1", "c2"}, five[:4]) },
			links("c1", "n4", "c2", "n1", "c2", "n2"), false},
		{"bridge of two", func() ([]history.Link, error) { return fault.Bridge([]string{"c1"}, five[:2]) }, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.got()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// reachable lists the nodes client still reaches under grudge g.
func reachable(g []history.Link, client string, nodes []string) []string {
	var out []string
	for _, n := range nodes {
		if !slices.Contains(g, history.Link{Client: client, Node: n}) {
			out = append(out, n)
		}
	}
	return out
}

// What the shapes are for: under halves two clients on different sides
// share no node; under a bridge both reach a majority, through the bridge.
func TestGrudgeQuorums(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		nodes := fault.Shuffled(five, r)
		h, _ := fault.Halves([]string{"c1", "c2"}, nodes)
		a, b := reachable(h, "c1", five), reachable(h, "c2", five)
		if len(a) != 3 || len(b) != 2 || slices.ContainsFunc(a, func(n string) bool { return slices.Contains(b, n) }) {
			t.Fatalf("halves %v: c1 reaches %v, c2 %v", nodes, a, b)
		}
		br, _ := fault.Bridge([]string{"c1", "c2"}, nodes)
		a, b = reachable(br, "c1", five), reachable(br, "c2", five)
		if len(a) != 3 || len(b) != 3 || !slices.Contains(a, nodes[2]) || !slices.Contains(b, nodes[2]) {
			t.Fatalf("bridge %v: c1 reaches %v, c2 %v", nodes, a, b)
		}
	}
}

func TestRandomGrudgeFollowsSeed(t *testing.T) {
	clients := []string{"c1", "c2", "c3"}
	seen := map[string]bool{}
	for seed := range uint64(30) {
		a := fault.RandomGrudge(clients, five, rand.New(rand.NewPCG(seed, 1)))
		b := fault.RandomGrudge(clients, five, rand.New(rand.NewPCG(seed, 1)))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: %v then %v", seed, a, b)
		}
		if len(a) == 0 {
			t.Fatalf("seed %d: empty grudge", seed)
		}
		all := fault.Isolate(clients, five)
		for _, l := range a {
			if !slices.Contains(all, l) {
				t.Fatalf("seed %d: link %v is not a client↔node link", seed, l)
			}
		}
		seen[nemesisString(a)] = true
	}
	if len(seen) < 20 {
		t.Errorf("30 seeds gave only %d different grudges", len(seen))
	}
	// One link is still a grudge.
	if g := fault.RandomGrudge([]string{"c1"}, []string{"n1"}, rand.New(rand.NewPCG(3, 3))); len(g) != 1 {
		t.Errorf("single link: %v", g)
	}
}

func nemesisString(ls []history.Link) string {
	s := ""
	for _, l := range ls {
		s += l.String() + " "
	}
	return s
}
