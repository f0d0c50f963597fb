package runner

import (
	"slices"
	"testing"

	"splitbrain/fault"
	"splitbrain/scenarios/spec"
)

// Only stories whose faults are all of nodes, clocks and clients go
// without proxies; one link-touching step anywhere keeps them all.
func TestTouchesLinks(t *testing.T) {
	t.Parallel()
	direct := []string{
		"random-clock-counter", "random-clock-set", "random-kill-counter", "random-kill-set",
		"random-pause-counter", "random-pause-set",
		"consensus-lease-expires-waiting",
		// kills and restarts only: liveness over nodes that go and come back
		"liveness-delayed-restart", "liveness-nodes-down",
	}
	for _, name := range spec.Builtin() {
		sc, err := spec.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := touchesLinks(sc), !slices.Contains(direct, name); got != want {
			t.Errorf("%s: touchesLinks = %v, want %v", name, got, want)
		}
	}
	random := func(kinds ...string) spec.Step {
		return spec.Step{Kind: spec.StepRandom, Schedule: fault.ScheduleSpec{Kinds: kinds}}
	}
	for _, tc := range []struct {
		name  string
		steps []spec.Step
		want  bool
	}{
		{"no steps", nil, false},
		{"node, clock and client faults", []spec.Step{{Kind: spec.StepAcquire}, {Kind: spec.StepKill}, {Kind: spec.StepRestart},
			{Kind: spec.StepPause}, {Kind: spec.StepResume}, {Kind: spec.StepClock}, {Kind: spec.StepStrobe}, {Kind: spec.StepHeal}}, false},
		{"cut", []spec.Step{{Kind: spec.StepAcquire}, {Kind: spec.StepCut}}, true},
		{"net", []spec.Step{{Kind: spec.StepNet}}, true},
		{"partition", []spec.Step{{Kind: spec.StepPartition}}, true},
		{"replication", []spec.Step{{Kind: spec.StepReplication}}, true},
		{"promote", []spec.Step{{Kind: spec.StepPromote}}, true},
		{"random without partitions", []spec.Step{random(fault.RandomClock, fault.RandomKill, fault.RandomAmnesia, fault.RandomPause, fault.RandomClientPause)}, false},
		{"random with partitions", []spec.Step{random(fault.RandomClock, fault.RandomPartition)}, true},
		{"a step kind not known to be link-free", []spec.Step{{Kind: "some-new-kind"}}, true},
	} {
		sc := &spec.Scenario{Steps: tc.steps}
		if got := touchesLinks(sc); got != tc.want {
			t.Errorf("%s: touchesLinks = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !touchesLinks(&spec.Scenario{Sentinel: &spec.SentinelSpec{}}) {
		t.Error("a story with sentinels: touchesLinks = false, want true (every link between them is proxied)")
	}
}
