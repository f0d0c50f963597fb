package spec

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"splitbrain/fault"
)

// The faults of issue 36 (clock rate, power loss, CPU starvation, lost
// replies): their steps as a scenario writes them, their refusals, their
// explicit form for shrinking and their random schedules.

func TestParseNewFaultSteps(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want Step
	}{
		{"clock: {node: n3, rate: 1.05}", Step{Kind: StepClock, Node: "n3", Rate: 1.05}},
		{"clock: {node: n3, rate: +5%, for: 2s}", Step{Kind: StepClock, Node: "n3", Rate: 1.05, For: fixed(2 * time.Second), HasFor: true}},
		{"clock: {node: n1, rate: -0.05%}", Step{Kind: StepClock, Node: "n1", Rate: 1 - 0.0005}},
		{"clock: {node: n1, rate: 500ppm}", Step{Kind: StepClock, Node: "n1", Rate: 1.0005}},
		{"kill: {node: n1, power: true}", Step{Kind: StepKill, Node: "n1", Power: true}},
		{"kill: {node: n1, power: true, for: 1s}", Step{Kind: StepKill, Node: "n1", Power: true, For: fixed(time.Second), HasFor: true}},
		{"random: {faults: [power], interval: 1s, duration: 1s, for: 5s}",
			Step{Kind: StepRandom, Schedule: fault.ScheduleSpec{Kinds: []string{"power"}, Interval: time.Second,
				MinFor: time.Second, MaxFor: time.Second, Total: 5 * time.Second}}},
		{"starve: {node: n2, cpu: 5%, for: 3s}", Step{Kind: StepStarve, Node: "n2", Share: 0.05, For: fixed(3 * time.Second), HasFor: true}},
		{"starve: {client: c1, cpu: 0.1}", Step{Kind: StepStarve, Client: "c1", Share: 0.1}},
		{"fsync: {node: n3, delay: 2s, for: 5s}", Step{Kind: StepFsync, Node: "n3", LinkFault: LinkFault{Delay: fixed(2 * time.Second)}, For: fixed(5 * time.Second), HasFor: true}},
		{"random: {faults: [fsync, power], interval: 1s, duration: 1s, for: 5s}",
			Step{Kind: StepRandom, Schedule: fault.ScheduleSpec{Kinds: []string{"fsync", "power"}, Interval: time.Second,
				MinFor: time.Second, MaxFor: time.Second, Total: 5 * time.Second}}},
		{"net: {client: c1, nodes: [n1, n2], fault: lose-reply}",
			Step{Kind: StepNet, Client: "c1", Nodes: []string{"n1", "n2"}, LinkFault: LinkFault{Fault: "lose-reply", Direction: "both"}}},
		{"random: {faults: [clock-rate], interval: 1s, duration: 1s, for: 5s, max_rate: 2%}",
			Step{Kind: StepRandom, Schedule: fault.ScheduleSpec{Kinds: []string{"clock-rate"}, Interval: time.Second,
				MinFor: time.Second, MaxFor: time.Second, Total: 5 * time.Second, MaxRate: 0.02}}},
	} {
		t.Run(tc.yaml, func(t *testing.T) {
			sc, err := Parse([]byte(faultsHead+"  - "+tc.yaml+"\n"), "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := sc.Steps[0]
			tc.want.Line = 7
			if got.Kind == StepClock && got.Rate != 0 && tc.want.Rate != 0 && nearRate(got.Rate, tc.want.Rate) {
				got.Rate = tc.want.Rate
			}
			if got.Kind == StepRandom && nearRate(got.Schedule.MaxRate, tc.want.Schedule.MaxRate) {
				got.Schedule.MaxRate = tc.want.Schedule.MaxRate
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func nearRate(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

func TestParseNewFaultStepErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"rate and jump", "clock: {node: n1, jump: 1s, rate: 1.1}", []string{"f.yaml:7", "steps[0].clock.rate", "exactly one of jump"}},
		{"rate of 1", "clock: {node: n1, rate: 1}", []string{"steps[0].clock.rate", "not 1"}},
		{"rate too fast", "clock: {node: n1, rate: 20}", []string{"steps[0].clock.rate", "from 0.1 to 10"}},
		{"rate not a number", "clock: {node: n1, rate: fast}", []string{"steps[0].clock.rate", "1.05", "+5%", "500ppm"}},
		{"clock without jump or rate", "clock: {node: n1}", []string{"steps[0].clock.jump", "missing"}},
		{"starve both", "starve: {node: n1, client: c1, cpu: 5%}", []string{"f.yaml:7", "steps[0].starve", "exactly one of node"}},
		{"starve without cpu", "starve: {node: n1}", []string{"steps[0].starve.cpu", "missing"}},
		{"starve all of a cpu", "starve: {node: n1, cpu: 100%}", []string{"steps[0].starve.cpu", "from 1% to 99%"}},
		{"starve unknown client", "starve: {client: c9, cpu: 5%}", []string{"steps[0].starve.client", `"c9"`}},
		{"lose-reply with direction", "net: {client: c1, nodes: [n1], fault: lose-reply, direction: to-node}",
			[]string{"steps[0].net.direction", "leave direction out"}},
		{"lose-reply on replication", "replication: {node: n1, fault: lose-reply}", []string{"steps[0].replication.fault", "not replies"}},
		{"power and amnesia", "kill: {node: n1, power: true, amnesia: true}", []string{"f.yaml:7", "steps[0].kill.power", "want one of them"}},
		{"power of a stop", "stop: {node: n1, power: true}", []string{"steps[0].stop.power", "unknown field"}},
		{"power not a bool", "kill: {node: n1, power: yes please}", []string{"steps[0].kill.power", "true or false"}},
		{"max_rate without unit", "random: {faults: [clock-rate], interval: 1s, duration: 1s, for: 5s, max_rate: 0.05}",
			[]string{"steps[0].random.max_rate", "5%", "500ppm"}},
		{"max_rate too large", "random: {faults: [clock-rate], interval: 1s, duration: 1s, for: 5s, max_rate: 95%}",
			[]string{"steps[0].random", "largest clock rate error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(faultsHead+"  - "+tc.yaml+"\n"), "f.yaml")
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

// What StepNode writes of the new faults, Parse reads back as the same
// step.
func TestNewFaultStepNodeRoundTrip(t *testing.T) {
	const head = `name: t
expect: any
cluster: {nodes: 5, persistence: aof-everysec}
lock: {ttl: 1s}
workload: {kind: counter, clients: 3}
`
	for _, st := range []Step{
		{Kind: StepClock, Node: "n3", Rate: 1.0005, For: fixed(ms(989)), HasFor: true},
		{Kind: StepClock, Node: "n2", Rate: 0.92, For: fixed(ms(10)), HasFor: true},
		{Kind: StepKill, Node: "n4", Power: true, For: fixed(ms(700)), HasFor: true},
		{Kind: StepStarve, Node: "n1", Share: 0.05, For: fixed(ms(1500)), HasFor: true},
		{Kind: StepNet, Client: "c3", Nodes: []string{"n2"}, LinkFault: LinkFault{Fault: "lose-reply", Direction: "both"}, For: fixed(ms(900)), HasFor: true},
		{Kind: StepStarve, Client: "c2", Share: 0.12, For: fixed(ms(1500)), HasFor: true},
	} {
		node, err := StepNode(st)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := yaml.NewEncoder(&buf).Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{node}}); err != nil {
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
}

// A random schedule's clock rates are drawn from the seed within its
// max_rate, either way, and each becomes a clock step with its rate that
// records a clock-rate fault.
func TestRandomClockRate(t *testing.T) {
	spec := fault.ScheduleSpec{Kinds: []string{fault.RandomClockRate}, Targets: []fault.Target{fault.TargetAll},
		Interval: time.Second, MinFor: time.Second, MaxFor: time.Second, Total: 20 * time.Second, MaxRate: 0.08}
	nodes := []string{"n1", "n2", "n3"}
	ops, err := fault.Plan(spec, []string{"c1"}, nodes, rand.New(rand.NewPCG(7, StreamNemesis)))
	if err != nil {
		t.Fatal(err)
	}
	var fast, slow bool
	for _, op := range ops {
		steps, err := opSteps(op, time.Second, 9)
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) != len(nodes) || len(op.Rates) != len(nodes) {
			t.Fatalf("op %v: %d steps, %d rates, want one per node", op, len(steps), len(op.Rates))
		}
		for i, s := range steps {
			r := op.Rates[i]
			if e := r - 1; (e > 0 && (e < 0.008-1e-9 || e > 0.08+1e-9)) || (e < 0 && (-e < 0.008-1e-9 || -e > 0.08+1e-9)) || e == 0 {
				t.Errorf("rate %v: want an error of 0.8 %% to 8 %% either way", r)
			}
			fast, slow = fast || r > 1, slow || r < 1
			want := Step{Kind: StepClock, Node: nodes[i], Rate: r, Line: 9, For: fixed(time.Second), HasFor: true}
			if !reflect.DeepEqual(s.Step, want) {
				t.Errorf("step %+v, want %+v", s.Step, want)
			}
			if rec := s.Records[0]; rec.Kind != fault.KindClockRate || rec.Rate != r {
				t.Errorf("records %+v, want a clock-rate ×%v", rec, r)
			}
		}
	}
	if !fast || !slow {
		t.Errorf("20 draws of rates: fast %v, slow %v; want both", fast, slow)
	}
}

// A kill with a power loss needs the power-loss capability of its node's
// kind, as amnesia needs a wipe; a random schedule of power losses too.
func TestPowerLossNeeds(t *testing.T) {
	if c, ok := (Step{Kind: StepStarve, Client: "c1"}).Needs(); ok {
		t.Errorf("a client's starvation needs %q of a node, want nothing", c)
	}
	for _, tc := range []struct {
		st   Step
		want fault.Capability
	}{
		{Step{Kind: StepKill, Power: true}, fault.Power},
		{Step{Kind: StepKill, Amnesia: true}, fault.Wipe},
		{Step{Kind: StepKill}, fault.Kill},
		{Step{Kind: StepRandom, Schedule: fault.ScheduleSpec{Kinds: []string{"pause", "power"}}}, fault.Power},
		{Step{Kind: StepClock, Rate: 1.1}, fault.Clock},
		{Step{Kind: StepStarve, Node: "n1"}, fault.CPU},
		{Step{Kind: StepRandom, Schedule: fault.ScheduleSpec{Kinds: []string{"starve"}}}, fault.CPU},
		{Step{Kind: StepFsync, Node: "n1"}, fault.Fsync},
		{Step{Kind: StepRandom, Schedule: fault.ScheduleSpec{Kinds: []string{"fsync"}}}, fault.Fsync},
		{Step{Kind: StepRandom, Schedule: fault.ScheduleSpec{Kinds: []string{"clock-rate"}}}, fault.Clock},
	} {
		if got, ok := tc.st.Needs(); !ok || got != tc.want {
			t.Errorf("%+v needs %q (%v), want %q", tc.st, got, ok, tc.want)
		}
	}
}

// A random schedule's starvations keep 1 % to 20 % of one CPU, drawn from
// the seed, and become starve steps on nodes.
func TestRandomStarve(t *testing.T) {
	spec := fault.ScheduleSpec{Kinds: []string{fault.RandomStarve}, Interval: time.Second,
		MinFor: time.Second, MaxFor: time.Second, Total: 10 * time.Second}
	ops, err := fault.Plan(spec, []string{"c1"}, []string{"n1", "n2", "n3"}, rand.New(rand.NewPCG(3, StreamNemesis)))
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Share < 0.01 || op.Share > 0.2 {
			t.Errorf("op %v: share %v, want 1 %% to 20 %%", op, op.Share)
		}
		steps, err := opSteps(op, time.Second, 4)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range steps {
			if s.Step.Kind != StepStarve || s.Step.Node != op.Nodes[i] || s.Step.Share != op.Share || s.Records[0].Kind != fault.KindStarve {
				t.Errorf("step %+v records %+v, want %s starved to %v", s.Step, s.Records, op.Nodes[i], op.Share)
			}
		}
	}
}

// A random schedule's lost replies: one client's links to the target's
// nodes, each losing its next reply.
func TestRandomLostReply(t *testing.T) {
	spec := fault.ScheduleSpec{Kinds: []string{fault.RandomLostReply}, Targets: []fault.Target{fault.TargetMajority}, Interval: time.Second,
		MinFor: time.Second, MaxFor: time.Second, Total: 5 * time.Second}
	ops, err := fault.Plan(spec, []string{"c1", "c2"}, []string{"n1", "n2", "n3"}, rand.New(rand.NewPCG(5, StreamNemesis)))
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		steps, err := opSteps(op, time.Second, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) != 1 || len(op.Nodes) != 2 || len(op.Clients) != 1 {
			t.Fatalf("op %v: %d steps, want one client's step to 2 of 3 nodes", op, len(steps))
		}
		s := steps[0]
		if s.Step.Kind != StepNet || s.Step.Fault != "lose-reply" || s.Step.Client != op.Clients[0] ||
			!reflect.DeepEqual(s.Records[0].Links, fault.Isolate(op.Clients, op.Nodes)) || s.Records[0].Kind != fault.KindLostReply {
			t.Errorf("op %v: step %+v records %+v", op, s.Step, s.Records)
		}
	}
	if _, err := fault.Plan(spec, nil, []string{"n1"}, rand.New(rand.NewPCG(5, StreamNemesis))); err == nil {
		t.Error("lost replies planned without clients")
	}
}
