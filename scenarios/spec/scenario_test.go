package spec

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestBuiltinScenariosParse(t *testing.T) {
	names := Builtin()
	if len(names) < 2 {
		t.Fatalf("Builtin() = %v, want at least clock-jump and its control", names)
	}
	for _, name := range names {
		sc, err := Load(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if sc.Name != name {
			t.Errorf("%s: file says name %q", name, sc.Name)
		}
	}
	sc, err := Load("clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Nodes != 5 || len(sc.Clients) != 2 || sc.Lock.TTL != 10*time.Second || sc.Expect != ExpectViolation {
		t.Errorf("clock-jump parsed as %+v", sc)
	}
	var jump *Step
	for i := range sc.Steps {
		if sc.Steps[i].Kind == StepClock {
			jump = &sc.Steps[i]
		}
	}
	if jump == nil || jump.Node != "n3" || jump.Span.Min <= sc.Lock.TTL {
		t.Errorf("clock-jump's jump step = %+v, want n3 past the TTL", jump)
	}
}

func TestLoadUnknownScenario(t *testing.T) {
	_, err := Load("no-such-scenario")
	if !errors.Is(err, ErrUnknownScenario) || !strings.Contains(err.Error(), "clock-jump") {
		t.Errorf("got %v, want ErrUnknownScenario listing the built-ins", err)
	}
}

const good = `name: t
expect: safe
cluster: {nodes: 3}
lock: {ttl: 1s}
workload: {clients: 2}
steps:
  - acquire: {client: c1}
`

func TestParseErrorsNameLineAndField(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"unknown top-level field", good + "colour: red\n", []string{"f.yaml:8", "colour", "valid fields: name, description"}},
		{"unknown lock field", strings.Replace(good, "{ttl: 1s}", "{ttl: 1s, tll: 2s}", 1), []string{"f.yaml:4", "tll", "unknown field in lock"}},
		{"bad ttl", strings.Replace(good, "ttl: 1s", "ttl: fast", 1), []string{"f.yaml:4", "lock.ttl", `"fast"`, "such as 1500ms"}},
		{"bad expect", strings.Replace(good, "expect: safe", "expect: maybe", 1), []string{"f.yaml:2", "expect", "violation, safe, any"}},
		{"missing expect", strings.Replace(good, "expect: safe\n", "", 1), []string{"expect", "missing"}},
		{"too many nodes", strings.Replace(good, "nodes: 3", "nodes: 99", 1), []string{"f.yaml:3", "cluster.nodes", "1 to 15"}},
		{"unknown client", strings.Replace(good, "client: c1", "client: c7", 1), []string{"f.yaml:7", "steps[0].acquire.client", `"c7"`, "c1, c2"}},
		{"unknown node", good + "  - cut: {client: c1, nodes: [n1, n9]}\n", []string{"f.yaml:8", "steps[1].cut.nodes", `"n9"`, "n1, n2, n3"}},
		{"unknown step", good + "  - explode: {node: n1}\n", []string{"f.yaml:8", "steps[1].explode", "unknown step"}},
		{"unknown step field", good + "  - clock: {node: n1, jump: 1s, by: 2s}\n", []string{"f.yaml:8", "steps[1].clock.by", "valid fields: node, jump"}},
		{"missing step field", good + "  - clock: {node: n1}\n", []string{"f.yaml:8", "steps[1].clock.jump", "missing"}},
		{"bad jump", good + "  - clock: {node: n1, jump: 5s..2s}\n", []string{"f.yaml:8", "steps[1].clock.jump", "3s..6s"}},
		{"negative wait", good + "  - wait: -1s\n", []string{"f.yaml:8", "steps[1].wait"}},
		{"bad heal", good + "  - heal: everything\n", []string{"f.yaml:8", "steps[1].heal", "links, clocks, nodes, clients, failover, all"}},
		{"two keys in a step", good + "  - {wait: 1s, heal: all}\n", []string{"f.yaml:8", "steps[1]", "exactly one"}},
		{"no steps", strings.Split(good, "steps:")[0], []string{"steps", "at least one step"}},
		{"not yaml", "name: [unclosed\n", []string{"f.yaml"}},
		{"empty", "", []string{"f.yaml", "empty"}},
		{"bad name", strings.Replace(good, "name: t", "name: Bad Name", 1), []string{"name", "lower-case"}},
		{"node timeout not below ttl", strings.Replace(good, "{ttl: 1s}", "{ttl: 1s, node_timeout: 1s}", 1), []string{"f.yaml:4", "lock.node_timeout", "shorter than lock.ttl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "f.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseGoodFile(t *testing.T) {
	sc, err := Parse([]byte(good+"  - clock: {node: n2, jump: -2s}\n  - wait: 1s..2s\n  - heal: all\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Lock.Key != "lock" || sc.Lock.Kind != "redlock" {
		t.Errorf("defaults: %+v", sc.Lock)
	}
	want := []Step{
		{Kind: StepAcquire, Line: 7, Client: "c1"},
		{Kind: StepClock, Line: 8, Node: "n2", Span: Span{-2 * time.Second, -2 * time.Second}},
		{Kind: StepWait, Line: 9, Span: Span{time.Second, 2 * time.Second}},
		{Kind: StepHeal, Line: 10, Heal: "all"},
	}
	if len(sc.Steps) != len(want) {
		t.Fatalf("steps %+v", sc.Steps)
	}
	for i := range want {
		got := sc.Steps[i]
		if got.Kind != want[i].Kind || got.Line != want[i].Line || got.Client != want[i].Client ||
			got.Node != want[i].Node || got.Span != want[i].Span || got.Heal != want[i].Heal {
			t.Errorf("step %d = %+v, want %+v", i, got, want[i])
		}
	}
}

func TestSpanDrawStaysInRangeAndFollowsSeed(t *testing.T) {
	s := Span{3 * time.Second, 8 * time.Second}
	a, b := rand.New(rand.NewPCG(7, 1)), rand.New(rand.NewPCG(7, 1))
	for range 1000 {
		x, y := s.Draw(a), s.Draw(b)
		if x != y {
			t.Fatalf("same seed drew %v and %v", x, y)
		}
		if x < s.Min || x > s.Max {
			t.Fatalf("drew %v outside %v", x, s)
		}
	}
	if d := (Span{time.Second, time.Second}).Draw(a); d != time.Second {
		t.Errorf("fixed span drew %v", d)
	}
}
