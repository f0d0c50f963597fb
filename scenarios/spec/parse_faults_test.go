package spec

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"splitbrain/fault"
)

const faultsHead = `name: t
expect: any
cluster: {nodes: 5, replicas: [n1], persistence: {default: aof-everysec, n3: aof-always}}
lock: {ttl: 1s}
workload: {clients: 2}
steps:
`

func TestParseFaultSteps(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want Step
	}{
		{"net: {client: c1, nodes: [n4, n5]}",
			Step{Kind: StepNet, Client: "c1", Nodes: []string{"n4", "n5"}, LinkFault: LinkFault{Fault: "drop", Direction: "both"}}},
		{"net: {client: c2, nodes: [n1], fault: delay, delay: 90s, direction: to-node, for: 2s}",
			Step{Kind: StepNet, Client: "c2", Nodes: []string{"n1"}, LinkFault: LinkFault{Fault: "delay", Direction: "to-node",
				Delay: Span{90 * time.Second, 90 * time.Second}}, For: Span{2 * time.Second, 2 * time.Second}, HasFor: true}},
		{"net: {client: c1, nodes: [n2], fault: refuse}",
			Step{Kind: StepNet, Client: "c1", Nodes: []string{"n2"}, LinkFault: LinkFault{Fault: "refuse", Direction: "both"}}},
		{"replication: {node: n1, fault: reset, direction: to-client}",
			Step{Kind: StepReplication, Node: "n1", Replica: "r1", LinkFault: LinkFault{Fault: "reset", Direction: "to-client"}}},
		{"partition: {shape: isolate, nodes: [n3]}",
			Step{Kind: StepPartition, Partition: Partition{Shape: "isolate"}, Nodes: []string{"n3"}}},
		{"partition: {shape: halves, clients: [c2, c1], for: 1s..2s}",
			Step{Kind: StepPartition, Partition: Partition{Shape: "halves"}, Clients: []string{"c2", "c1"}, For: Span{time.Second, 2 * time.Second}, HasFor: true}},
		{"partition: {shape: client, client: c1, nodes: [n1, n2]}",
			Step{Kind: StepPartition, Partition: Partition{Shape: "client"}, Client: "c1", Nodes: []string{"n1", "n2"}}},
		{"partition: {shape: random}", Step{Kind: StepPartition, Partition: Partition{Shape: "random"}}},
		{"strobe: {node: n3, delta: -5s, period: 50ms, for: 1s}",
			Step{Kind: StepStrobe, Node: "n3", Span: Span{-5 * time.Second, -5 * time.Second}, Period: 50 * time.Millisecond,
				For: Span{time.Second, time.Second}, HasFor: true}},
		{"clock: {node: n3, jump: -1.5s, for: 800ms}",
			Step{Kind: StepClock, Node: "n3", Span: Span{-1500 * time.Millisecond, -1500 * time.Millisecond},
				For: Span{800 * time.Millisecond, 800 * time.Millisecond}, HasFor: true}},
		{"clock: {node: n3, jump: 2s}", Step{Kind: StepClock, Node: "n3", Span: Span{2 * time.Second, 2 * time.Second}}},
		{"clock-reset: {nodes: [n3]}", Step{Kind: StepClockReset, Nodes: []string{"n3"}}},
		{"clock-reset: {}", Step{Kind: StepClockReset}},
		{"pause: {node: n2, for: 3s}", Step{Kind: StepPause, Node: "n2", For: Span{3 * time.Second, 3 * time.Second}, HasFor: true}},
		{"pause: {client: c1, at: after-acquire, for: 3s}",
			Step{Kind: StepPause, Client: "c1", ClientPause: ClientPause{Point: "after-acquire"}, For: Span{3 * time.Second, 3 * time.Second}, HasFor: true}},
		{"pause: {client: c1, at: after-acquire, for: 3s, signal: true}",
			Step{Kind: StepPause, Client: "c1", ClientPause: ClientPause{Point: "after-acquire", Signal: true}, For: Span{3 * time.Second, 3 * time.Second}, HasFor: true}},
		{"pause: {client: c1, at: after-acquire, for: 3s, signal: false}",
			Step{Kind: StepPause, Client: "c1", ClientPause: ClientPause{Point: "after-acquire", SignalOff: true}, For: Span{3 * time.Second, 3 * time.Second}, HasFor: true}},
		{"pause: {client: c1, at: after-acquire, for: 3s, signal: auto}",
			Step{Kind: StepPause, Client: "c1", ClientPause: ClientPause{Point: "after-acquire", SignalAuto: true}, For: Span{3 * time.Second, 3 * time.Second}, HasFor: true}},
		{"resume: {client: c1}", Step{Kind: StepResume, Client: "c1"}},
		{"kill: {node: n3, amnesia: true, for: 0s}", Step{Kind: StepKill, Node: "n3", Amnesia: true, HasFor: true}},
		{"stop: {node: n3}", Step{Kind: StepStop, Node: "n3"}},
		{"restart: {node: n3}", Step{Kind: StepRestart, Node: "n3"}},
		{"promote: {node: n1}", Step{Kind: StepPromote, Node: "n1", Replica: "r1"}},
		{"promote: {node: n1, replica: r1}", Step{Kind: StepPromote, Node: "n1", Replica: "r1"}},
		{"heal: failover", Step{Kind: StepHeal, Heal: "failover"}},
		{"random: {faults: [partition, kill], targets: [one, majority], interval: 1s, duration: 200ms..800ms, for: 10s, max_clock: 5s}",
			Step{Kind: StepRandom, Schedule: fault.ScheduleSpec{Kinds: []string{"partition", "kill"},
				Targets: []fault.Target{"one", "majority"}, Interval: time.Second, MinFor: 200 * time.Millisecond,
				MaxFor: 800 * time.Millisecond, Total: 10 * time.Second, MaxClock: 5 * time.Second}}},
	} {
		t.Run(tc.yaml, func(t *testing.T) {
			sc, err := Parse([]byte(faultsHead+"  - "+tc.yaml+"\n"), "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := sc.Steps[0]
			tc.want.Line = 7
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// With a workload that writes the storage node, its links can be faulted too.
func TestParseNetToStorage(t *testing.T) {
	sc, err := Parse([]byte(strings.Replace(faultsHead, "workload: {clients: 2}", "workload: {clients: 2, kind: counter}", 1)+
		"  - net: {client: c1, nodes: [storage, n2], fault: delay, delay: 3s, direction: to-node}\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Steps[0].Nodes; !reflect.DeepEqual(got, []string{"storage", "n2"}) {
		t.Errorf("nodes %v", got)
	}
}

func TestParseClusterFaultSettings(t *testing.T) {
	sc, err := Parse([]byte(faultsHead+"  - wait: 1s\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"n1": "aof-everysec", "n2": "aof-everysec", "n3": "aof-always", "n4": "aof-everysec", "n5": "aof-everysec"}
	if !reflect.DeepEqual(sc.Persistence, want) || !reflect.DeepEqual(sc.Replicas, []string{"n1"}) {
		t.Errorf("persistence %v, replicas %v", sc.Persistence, sc.Replicas)
	}
	// A node may get several replicas: r1, r1b, ...; the steps name one.
	sc, err = Parse([]byte(strings.Replace(faultsHead, "replicas: [n1]", "replicas: {n1: 2, n3: 1}", 1)+
		"  - replication: {node: n1, replica: r1b, fault: drop}\n  - promote: {node: n1, replica: r1b}\n  - promote: {node: n3}\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sc.Replicas, []string{"n1", "n3"}) || !reflect.DeepEqual(sc.ReplicasOf("n1"), []string{"r1", "r1b"}) ||
		!reflect.DeepEqual(sc.ReplicasOf("n3"), []string{"r3"}) || sc.ReplicasOf("n2") != nil {
		t.Errorf("replicas %v (%v): of n1 %v, n3 %v, n2 %v", sc.Replicas, sc.ReplicaCount, sc.ReplicasOf("n1"), sc.ReplicasOf("n3"), sc.ReplicasOf("n2"))
	}
	if got := []string{sc.Steps[0].Replica, sc.Steps[1].Replica, sc.Steps[2].Replica}; !reflect.DeepEqual(got, []string{"r1b", "r1b", "r3"}) {
		t.Errorf("the steps act on replicas %v, want r1b, r1b, r3", got)
	}
	sc, err = Parse([]byte(strings.Replace(good, "{nodes: 3}", "{nodes: 3, persistence: aof-always}", 1)), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Persistence["n2"] != "aof-always" || sc.Replicas != nil {
		t.Errorf("persistence %v, replicas %v", sc.Persistence, sc.Replicas)
	}
	sc, err = Parse([]byte(good), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Persistence["n1"] != PersistNone {
		t.Errorf("default persistence %v", sc.Persistence)
	}
}

func TestParseFaultStepErrors(t *testing.T) {
	head := func(cluster string) string {
		return strings.Replace(faultsHead, "{nodes: 5, replicas: [n1], persistence: {default: aof-everysec, n3: aof-always}}", cluster, 1)
	}
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"bad persistence", head("{nodes: 3, persistence: rdb}") + "  - wait: 1s\n", []string{"f.yaml:3", "cluster.persistence", "none, aof-everysec, aof-always"}},
		{"persistence of unknown node", head("{nodes: 3, persistence: {n7: none}}") + "  - wait: 1s\n", []string{"f.yaml:3", "cluster.persistence.n7", `"n7"`}},
		{"replica of unknown node", head("{nodes: 3, replicas: [n9]}") + "  - wait: 1s\n", []string{"f.yaml:3", "cluster.replicas", `"n9"`}},
		{"replicas not a list", head("{nodes: 3, replicas: n1}") + "  - wait: 1s\n", []string{"cluster.replicas", "[n1]", "{n1: 2}"}},
		{"too many replicas", head("{nodes: 3, replicas: {n1: 9}}") + "  - wait: 1s\n", []string{"f.yaml:3", "cluster.replicas.n1", "from 1 to 4"}},
		{"replicas of unknown node", head("{nodes: 3, replicas: {n7: 2}}") + "  - wait: 1s\n", []string{"cluster.replicas", `"n7"`}},
		{"replica not of the node", head("{nodes: 3, replicas: {n1: 2, n2: 1}}") + "  - promote: {node: n1, replica: r2}\n",
			[]string{"f.yaml:7", "steps[0].promote.replica", `"r2" is not a replica of n1; want one of r1, r1b`}},
		{"second replica of a node with one", faultsHead + "  - replication: {node: n1, replica: r1b}\n",
			[]string{"steps[0].replication.replica", "want one of r1 (cluster.replicas gives n1 1)"}},
		{"unknown net fault", faultsHead + "  - net: {client: c1, nodes: [n1], fault: explode}\n", []string{"f.yaml:7", "steps[0].net.fault", "drop, reset, refuse, delay"}},
		{"delay without time", faultsHead + "  - net: {client: c1, nodes: [n1], fault: delay}\n", []string{"f.yaml:7", "steps[0].net.delay", "missing"}},
		{"time without delay", faultsHead + "  - net: {client: c1, nodes: [n1], delay: 2s}\n", []string{"steps[0].net.delay", "only for fault: delay"}},
		{"delay too long", faultsHead + "  - net: {client: c1, nodes: [n1], fault: delay, delay: 3h}\n", []string{"steps[0].net.delay", "1ms to 1h0m0s"}},
		{"refuse with direction", faultsHead + "  - net: {client: c1, nodes: [n1], fault: refuse, direction: to-node}\n", []string{"steps[0].net.direction", "no direction"}},
		{"bad direction", faultsHead + "  - net: {client: c1, nodes: [n1], direction: up}\n", []string{"steps[0].net.direction", "both, to-node, to-client"}},
		{"net to unknown node", faultsHead + "  - net: {client: c1, nodes: [n8]}\n", []string{"steps[0].net.nodes", `"n8"`}},
		{"net to storage without one", faultsHead + "  - net: {client: c1, nodes: [storage]}\n", []string{"f.yaml:7", "steps[0].net.nodes", "no storage node"}},
		{"net unknown field", faultsHead + "  - net: {client: c1, nodes: [n1], speed: 2}\n", []string{"f.yaml:7", "steps[0].net.speed", "valid fields: client, nodes"}},
		{"replication without replica", faultsHead + "  - replication: {node: n2}\n", []string{"f.yaml:7", "steps[0].replication.node", "n2 has no replica", "replicas: [n2]"}},
		{"promote without replica", faultsHead + "  - promote: {node: n4}\n", []string{"steps[0].promote.node", "no replica"}},
		{"unknown shape", faultsHead + "  - partition: {shape: donut}\n", []string{"steps[0].partition.shape", "isolate, client, halves, bridge, random"}},
		{"isolate without nodes", faultsHead + "  - partition: {shape: isolate}\n", []string{"steps[0].partition.nodes", "missing"}},
		{"client shape without client", faultsHead + "  - partition: {shape: client, nodes: [n1]}\n", []string{"steps[0].partition", "needs client and nodes"}},
		{"bridge too small", faultsHead + "  - partition: {shape: bridge, nodes: [n1, n2]}\n", []string{"steps[0].partition.nodes", "at least 3"}},
		{"random with nodes", faultsHead + "  - partition: {shape: random, nodes: [n1]}\n", []string{"steps[0].partition.nodes", "not used by shape random"}},
		{"zero for", faultsHead + "  - partition: {shape: random, for: 0s}\n", []string{"steps[0].partition.for", "more than 0s"}},
		{"clock zero for", faultsHead + "  - clock: {node: n1, jump: 1s, for: 0s}\n", []string{"f.yaml:7", "steps[0].clock.for", "more than 0s"}},
		{"clock bad for", faultsHead + "  - clock: {node: n1, jump: 1s, for: soon}\n", []string{"steps[0].clock.for", "a duration such as 5s"}},
		{"strobe zero delta", faultsHead + "  - strobe: {node: n1, delta: 0s, period: 10ms}\n", []string{"steps[0].strobe.delta", "cannot be 0"}},
		{"strobe without period", faultsHead + "  - strobe: {node: n1, delta: 1s}\n", []string{"steps[0].strobe.period", "missing"}},
		{"pause both", faultsHead + "  - pause: {node: n1, client: c1}\n", []string{"steps[0].pause", "exactly one of node"}},
		{"client pause without for", faultsHead + "  - pause: {client: c1, at: after-acquire}\n", []string{"steps[0].pause.for", "needs a duration"}},
		{"client pause bad point", faultsHead + "  - pause: {client: c1, at: lunch, for: 1s}\n", []string{"steps[0].pause.at", "after-replies, after-acquire, before-write, before-release, any, random"}},
		{"client pause bad signal", faultsHead + "  - pause: {client: c1, at: after-acquire, for: 1s, signal: sometimes}\n", []string{"steps[0].pause.signal", `"sometimes" is not valid`, "auto"}},
		{"before-write without a storage", faultsHead + "  - pause: {client: c1, at: before-write, for: 1s}\n", []string{"f.yaml:7", "steps[0].pause.at", "only the counter, bank and set workloads"}},
		{"node pause with point", faultsHead + "  - pause: {node: n1, at: any}\n", []string{"steps[0].pause.at", "only for a client pause"}},
		{"bad amnesia", faultsHead + "  - kill: {node: n1, amnesia: maybe}\n", []string{"steps[0].kill.amnesia", "true or false"}},
		{"random unknown fault", faultsHead + "  - random: {faults: [meteor], interval: 1s, duration: 1s, for: 5s}\n", []string{"steps[0].random.faults", "partition, clock"}},
		{"random overlapping", faultsHead + "  - random: {faults: [kill], interval: 1s, duration: 2s, for: 5s}\n", []string{"f.yaml:7", "steps[0].random", "must not overlap"}},
		{"random missing interval", faultsHead + "  - random: {faults: [kill], duration: 1s, for: 5s}\n", []string{"steps[0].random.interval", "missing"}},
		{"random bad target", faultsHead + "  - random: {faults: [kill], targets: [half], interval: 1s, duration: 1s, for: 5s}\n", []string{"steps[0].random.targets", "one, minority, majority, all"}},
		{"bad heal", faultsHead + "  - heal: everything\n", []string{"steps[0].heal", "links, clocks, nodes, clients, failover, all"}},
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
