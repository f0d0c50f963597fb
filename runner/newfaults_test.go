package runner_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"splitbrain/checker"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/internal/cpulimit"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

// The faults of issue 36 played as scripted steps: a clock running fast,
// a starved node, a release whose replies are lost (it took effect: the
// next client gets the lock), a power loss. Each is recorded as it was
// asked and healed by the end. The node timeout and retries are
// generous: c2's pooled connection to n3 died with n3's power (EOF on its
// first command) and n2 was starved a moment before, so with 200 ms and
// one attempt CI's busy machine refused c2 (granted by 1 of 3).
func TestNewFaultsPlayAsSteps(t *testing.T) {
	t.Parallel()
	starve := "  - starve: {node: n2, cpu: 10%, for: 300ms}\n"
	if err := cpulimit.Available(); err != nil {
		t.Logf("no CPU limits on this machine, the starvation is left out: %v", err)
		starve = ""
	}
	sc := parse(t, `name: new-faults
expect: any
cluster: {nodes: 3, persistence: aof-everysec}
lock: {kind: redlock, ttl: 5s, node_timeout: 1s, retries: 2}
workload: {clients: 2}
steps:
  - acquire: {client: c1}
  - clock: {node: n1, rate: 1.5, for: 300ms}
`+starve+`  - net: {client: c1, nodes: [n1, n2, n3], fault: lose-reply, for: 3s}
  - release: {client: c1}
  - kill: {node: n3, power: true, for: 200ms}
  - wait: 1s
  - heal: all
  - acquire: {client: c2, expect: acquired}
`)
	out, log := runLogged(t, sc, 1)
	fs := nemesisOps(t, out.Dir)
	assertAllHealed(t, fs, "new-faults")
	var kinds []string
	for _, f := range seedOps(fs) {
		kinds = append(kinds, checker.FaultLabel(f))
		switch f.Kind {
		case fault.KindClockRate:
			if f.Rate != 1.5 || f.Nodes[0] != "n1" {
				t.Errorf("clock rate %+v, want n1 at ×1.5", f)
			}
		case fault.KindKill:
			if !strings.Contains(f.Detail, "lost power") {
				t.Errorf("kill %+v, want a power loss", f)
			}
		}
	}
	want := []string{"clock-rate n1 ×1.5", "lost-reply c1→n1,n2,n3", "kill n3"}
	if starve != "" {
		want = []string{"clock-rate n1 ×1.5", "starve n2", "lost-reply c1→n1,n2,n3", "kill n3"}
	}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("faults %q, want %q\n%s", kinds, want, log)
	}
	// c1's release went through with its replies lost: not known to c1
	// (our Redlock reports a release that no node answered as "not
	// held", a fail), done on the nodes, so that c2 got the lock.
	events, err := history.ReadFile(filepath.Join(out.Dir, runstore.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var release, acquire history.Type
	for _, e := range events {
		if e.F == history.Release && e.Process == "c1" && e.Type != history.Invoke {
			release = e.Type
		}
		if e.F == history.Acquire && e.Process == "c2" && e.Type != history.Invoke {
			acquire = e.Type
		}
	}
	if release == history.OK || acquire != history.OK {
		t.Errorf("c1's release %q, c2's acquire %q; want not ok (its replies lost) and granted (it took effect)\n%s", release, acquire, log)
	}
}

// A random schedule of the new kinds unrolls into exactly the faults a
// real run with that seed records (what shrinking relies on).
func TestNewRandomKindsUnrollMatchesRun(t *testing.T) {
	t.Parallel()
	kinds := "[clock-rate, power, lost-reply, fsync, starve]"
	if cpulimit.Available() != nil {
		kinds = "[clock-rate, power, lost-reply, fsync]"
	}
	sc, err := spec.Parse([]byte(`name: new-random
expect: any
cluster: {nodes: 3, persistence: aof-everysec}
lock: {kind: redlock, ttl: 300ms, node_timeout: 100ms}
workload: {kind: mutex, clients: 2, duration: 2s}
steps:
  - wait: 100ms
  - random: {faults: `+kinds+`, interval: 200ms, duration: 50ms..150ms, for: 1500ms, max_rate: 8%}
`), "new-random.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const seed = 11
	faults, _, err := sc.Unroll(seed)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range faults {
		for _, r := range f.Records {
			want = append(want, checker.FaultLabel(r))
		}
	}
	out := runScenario(t, context.Background(), sc, seed)
	var got []string
	for _, f := range out.Result.Faults {
		got = append(got, checker.FaultLabel(f.Fault))
	}
	if len(want) < 5 {
		t.Fatalf("only %d faults unrolled: %v", len(want), want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the run recorded\n  %s\nUnroll drew\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
