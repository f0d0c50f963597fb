package spec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"splitbrain/fault"

	"go.yaml.in/yaml/v3"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// A built-in random schedule unrolls into the faults Plan draws from the
// seed's nemesis stream, one step per node, after the lead wait. The first
// fault of random-clock-counter with seed 1 is the one a real run of it
// logged: "clock one n4 strobe +1.101s every 115ms for 998ms" at 0.25s.
func TestUnrollRandomSchedule(t *testing.T) {
	sc, err := Load("random-clock-counter")
	if err != nil {
		t.Fatal(err)
	}
	faults, end, err := sc.Unroll(1)
	if err != nil {
		t.Fatal(err)
	}
	spec := sc.Steps[1].Schedule
	spec.Points = fault.ResourcePoints
	ops, err := fault.Plan(spec, sc.Clients, sc.nodeNames(), rand.New(rand.NewPCG(1, StreamNemesis)))
	if err != nil {
		t.Fatal(err)
	}
	var want []Step
	for _, op := range ops {
		for i, n := range op.Nodes {
			st := Step{Node: n, Line: sc.Steps[1].Line, For: fixed(op.For), HasFor: true}
			if op.Strobe > 0 {
				st.Kind, st.Span, st.Period = StepStrobe, fixed(op.Offsets[0]), op.Strobe
			} else {
				st.Kind, st.Span = StepClock, fixed(op.Offsets[i])
			}
			want = append(want, st)
		}
	}
	if len(faults) != len(want) {
		t.Fatalf("%d faults, want %d (%d ops)", len(faults), len(want), len(ops))
	}
	for i, f := range faults {
		if !reflect.DeepEqual(f.Step, want[i]) {
			t.Errorf("fault %d: %+v\nwant %+v", i, f.Step, want[i])
		}
	}
	first := faults[0]
	if first.At != ms(250) || first.Step.Kind != StepStrobe || first.Step.Node != "n4" ||
		first.Step.Span.Min != ms(1101) || first.Step.Period != ms(115) || first.Step.For.Min != ms(998) {
		t.Errorf("first fault %+v at %v, want n4's strobe +1.101s every 115ms for 998ms at 250ms", first.Step, first.At)
	}
	last := ops[len(ops)-1]
	if end != ms(250)+last.At+last.For {
		t.Errorf("steps end at %v, want %v", end, ms(250)+last.At+last.For)
	}
}

// Each op kind of a random schedule becomes the steps that do what its
// faults do, one per node or client; a client pause stays armed until
// the next fault is due.
func TestOpSteps(t *testing.T) {
	d := fixed(ms(300))
	for _, tc := range []struct {
		name   string
		op     fault.Op
		within time.Duration
		want   []Step
	}{
		{"partition", fault.Op{Kind: fault.RandomPartition, For: ms(300), Shape: "halves",
			Links: fault.Isolate([]string{"c1"}, []string{"n1", "n2"})[:2:2]}, 0,
			[]Step{{Kind: StepNet, Client: "c1", Nodes: []string{"n1", "n2"}, LinkFault: LinkFault{Fault: "drop", Direction: "both"}, For: d, HasFor: true}}},
		{"grudge over two clients", fault.Op{Kind: fault.RandomPartition, For: ms(300), Shape: "random",
			Links: append(fault.Isolate([]string{"c2"}, []string{"n3"}), fault.Isolate([]string{"c1"}, []string{"n1"})...)}, 0,
			[]Step{{Kind: StepNet, Client: "c2", Nodes: []string{"n3"}, LinkFault: LinkFault{Fault: "drop", Direction: "both"}, For: d, HasFor: true},
				{Kind: StepNet, Client: "c1", Nodes: []string{"n1"}, LinkFault: LinkFault{Fault: "drop", Direction: "both"}, For: d, HasFor: true}}},
		{"jumps", fault.Op{Kind: fault.RandomClock, For: ms(300), Nodes: []string{"n1", "n3"}, Offsets: []time.Duration{ms(500), -ms(700)}}, 0,
			[]Step{{Kind: StepClock, Node: "n1", Span: fixed(ms(500)), For: d, HasFor: true},
				{Kind: StepClock, Node: "n3", Span: fixed(-ms(700)), For: d, HasFor: true}}},
		{"strobe", fault.Op{Kind: fault.RandomClock, For: ms(300), Nodes: []string{"n2"}, Offsets: []time.Duration{-ms(900)}, Strobe: ms(40)}, 0,
			[]Step{{Kind: StepStrobe, Node: "n2", Span: fixed(-ms(900)), Period: ms(40), For: d, HasFor: true}}},
		{"node pause", fault.Op{Kind: fault.RandomPause, For: ms(300), Nodes: []string{"n5"}}, 0,
			[]Step{{Kind: StepPause, Node: "n5", For: d, HasFor: true}}},
		{"kill", fault.Op{Kind: fault.RandomKill, For: ms(300), Nodes: []string{"n1"}}, 0,
			[]Step{{Kind: StepKill, Node: "n1", For: d, HasFor: true}}},
		{"graceful kill", fault.Op{Kind: fault.RandomKill, For: ms(300), Nodes: []string{"n1"}, Graceful: true}, 0,
			[]Step{{Kind: StepStop, Node: "n1", For: d, HasFor: true}}},
		{"amnesia", fault.Op{Kind: fault.RandomAmnesia, For: ms(300), Nodes: []string{"n4"}}, 0,
			[]Step{{Kind: StepKill, Node: "n4", Amnesia: true, For: d, HasFor: true}}},
		{"client pauses", fault.Op{Kind: fault.RandomClientPause, For: ms(300), Clients: []string{"c1", "c3"}, Point: fault.BeforeWrite}, ms(700),
			[]Step{{Kind: StepPause, Client: "c1", ClientPause: ClientPause{Point: "before-write", Within: ms(700)}, For: d, HasFor: true},
				{Kind: StepPause, Client: "c3", ClientPause: ClientPause{Point: "before-write", Within: ms(700)}, For: d, HasFor: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drawn, err := opSteps(tc.op, tc.within, 0)
			if err != nil {
				t.Fatal(err)
			}
			var faults []TimedFault
			for _, f := range drawn {
				faults = append(faults, explicit(f)...)
			}
			var got []Step
			for _, f := range faults {
				got = append(got, f.Step)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if len(faults[0].Records) != 1 {
				t.Errorf("first step records %v, want the op's first fault", faults[0].Records)
			}
		})
	}
}

// What StepNode writes, Parse reads back as the same step: a shrunk
// scenario says exactly what was replayed.
func TestStepNodeRoundTrip(t *testing.T) {
	const head = `name: t
expect: any
cluster: {nodes: 5, replicas: [n1]}
lock: {ttl: 1s}
workload: {kind: counter, clients: 3}
`
	for _, st := range []Step{
		{Kind: StepWait, Span: fixed(ms(250))},
		{Kind: StepNet, Client: "c2", Nodes: []string{"n1", "n4"}, LinkFault: LinkFault{Fault: "drop", Direction: "both"}, For: fixed(ms(640)), HasFor: true},
		{Kind: StepNet, Client: "c1", Nodes: []string{"storage"}, LinkFault: LinkFault{Fault: "delay", Delay: fixed(ms(90)), Direction: "to-node"}, For: fixed(time.Second), HasFor: true},
		{Kind: StepReplication, Node: "n1", Replica: "r1", LinkFault: LinkFault{Fault: "reset", Direction: "both"}, For: fixed(ms(10)), HasFor: true},
		{Kind: StepStrobe, Node: "n4", Span: fixed(ms(1101)), Period: ms(115), For: fixed(ms(998)), HasFor: true},
		{Kind: StepClock, Node: "n3", Span: fixed(-ms(681)), For: fixed(ms(989)), HasFor: true},
		{Kind: StepPause, Node: "n2", For: fixed(ms(1)), HasFor: true},
		{Kind: StepPause, Client: "c3", ClientPause: ClientPause{Point: "before-write", Within: ms(1000)}, For: fixed(ms(812)), HasFor: true},
		{Kind: StepPause, Client: "c1", ClientPause: ClientPause{Point: "any"}, For: fixed(ms(300)), HasFor: true},
		{Kind: StepKill, Node: "n5", Amnesia: true, For: fixed(ms(450)), HasFor: true},
		{Kind: StepKill, Node: "n5", For: fixed(0), HasFor: true},
		{Kind: StepStop, Node: "n2", For: fixed(ms(1500)), HasFor: true},
	} {
		node, err := StepNode(st)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		if err := enc.Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{node}}); err != nil {
			t.Fatal(err)
		}
		text := strings.TrimSpace(buf.String())
		t.Run(text, func(t *testing.T) {
			sc, err := Parse([]byte(head+"steps:\n  "+text+"\n"), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := sc.Steps[0]
			got.Line = 0
			if !reflect.DeepEqual(got, st) {
				t.Errorf("read back %+v\nwant      %+v", got, st)
			}
		})
	}
	for _, st := range []Step{{Kind: StepWait, Condition: Condition{Until: "up"}}, {Kind: StepHeal, Heal: "all"}, {Kind: StepAcquire, Client: "c1"}} {
		if _, err := StepNode(st); err == nil {
			t.Errorf("StepNode(%+v) wrote it; it has no explicit form", st)
		}
	}
}

// Steps without a time of their own, or faults that last until another
// step heals them, are named with their line and why.
func TestUnrollRefuses(t *testing.T) {
	const head = `name: t
expect: any
cluster: {nodes: 3}
lock: {ttl: 1s}
workload: {kind: counter, clients: 2}
steps:
`
	for _, tc := range []struct {
		name, steps string
		want        []string
	}{
		{"wait until", "  - wait: {until: down, node: n1}\n", []string{"t.yaml:7", "steps[0] (wait)", "until down"}},
		{"fault without for", "  - pause: {node: n1}\n", []string{"t.yaml:7", "without for:"}},
		{"heal", "  - wait: 1s\n  - heal: all\n", []string{"t.yaml:8", "steps[1] (heal)", "faults with for:"}},
		{"clock without for", "  - clock: {node: n1, jump: 1s}\n", []string{"steps[0] (clock)", "without for:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(head+tc.steps), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = sc.Unroll(1)
			if !errors.Is(err, ErrNotUnrollable) {
				t.Fatalf("error %v, want ErrNotUnrollable", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	sc, err := Load("clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sc.Unroll(1); !errors.Is(err, ErrNotUnrollable) || !strings.Contains(err.Error(), "scripted") {
		t.Errorf("scripted clock-jump: %v, want ErrNotUnrollable naming the scripted workload", err)
	}
}
