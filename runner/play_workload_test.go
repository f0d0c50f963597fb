package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/runner"
	"splitbrain/scenarios/spec"
)

const generated = `name: gen
expect: safe
cluster: {nodes: 3}
lock: {ttl: 1s, node_timeout: 200ms}
workload: {clients: 2, kind: counter}
`

func TestWorkloadSectionErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown kind", strings.Replace(generated, "kind: counter", "kind: queue", 1),
			[]string{"f.yaml:5", "workload.kind", `"queue"`, "steps, mutex, counter, bank, set"}},
		{"no kind and no steps", strings.Replace(generated, ", kind: counter", "", 1),
			[]string{"workload.kind", "missing", "mutex, counter, bank or set"}},
		{"keys with steps", strings.Replace(generated, "kind: counter", "keys: 2", 1) + "steps:\n  - wait: 1s\n",
			[]string{"f.yaml:5", "workload.keys", "only for a generated workload"}},
		{"too many keys", strings.Replace(generated, "kind: counter", "kind: counter, keys: 99", 1),
			[]string{"f.yaml:5", "workload.keys", "1 to 64"}},
		{"bad duration", strings.Replace(generated, "kind: counter", "kind: counter, duration: soon", 1),
			[]string{"f.yaml:5", "workload.duration", `"soon"`}},
		{"bad think", strings.Replace(generated, "kind: counter", "kind: counter, think: 5s..1s", 1),
			[]string{"f.yaml:5", "workload.think", "3s..6s"}},
		{"bad fencing", strings.Replace(generated, "kind: counter", "kind: counter, fencing: maybe", 1),
			[]string{"f.yaml:5", "workload.fencing", "on, off or auto"}},
		{"fencing without a resource", strings.Replace(generated, "kind: counter", "kind: mutex, fencing: on", 1),
			[]string{"f.yaml:5", "workload.fencing", "does not write"}},
		{"client steps with a generator", generated + "steps:\n  - wait: 1s\n  - acquire: {client: c1}\n",
			[]string{"f.yaml:8", "steps[1].acquire", "not allowed with workload.kind counter"}},
		{"unknown workload field", strings.Replace(generated, "kind: counter", "kind: counter, writers: 3", 1),
			[]string{"f.yaml:5", "writers", "clients, kind, keys, duration, think, backoff, fencing"}},
		{"bad backoff", strings.Replace(generated, "kind: counter", "kind: counter, backoff: 50ms..10ms", 1),
			[]string{"f.yaml:5", "workload.backoff", `"50ms..10ms"`, "3s..6s"}},
		{"negative backoff", strings.Replace(generated, "kind: counter", "kind: counter, backoff: -1ms", 1),
			[]string{"f.yaml:5", "workload.backoff", `"-1ms"`}},
		{"backoff with steps", strings.Replace(generated, "kind: counter", "backoff: 10ms", 1) + "steps:\n  - wait: 1s\n",
			[]string{"f.yaml:5", "workload.backoff", "only for a generated workload"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Parse([]byte(tc.yaml), "f.yaml")
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

func TestWorkloadSectionParses(t *testing.T) {
	sc, err := spec.Parse([]byte(generated), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := sc.Workload
	if w.Kind != "counter" || w.Keys != 1 || w.Duration != 10*time.Second || w.Fencing || w.Think.Max != 10*time.Millisecond ||
		w.Backoff != nil || len(sc.Steps) != 0 {
		t.Errorf("defaults: %+v, %d steps", w, len(sc.Steps))
	}
	sc, err = spec.Parse([]byte(strings.Replace(generated, "kind: counter",
		"kind: set, keys: 3, duration: 2s, think: 1s..2s, backoff: 0s..30ms, fencing: on", 1)+"steps:\n  - cut: {client: c1, nodes: [n3]}\n  - heal: all\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w = sc.Workload
	if w.Kind != "set" || w.Keys != 3 || w.Duration != 2*time.Second || !w.Fencing ||
		w.Think != (spec.Span{Min: time.Second, Max: 2 * time.Second}) ||
		w.Backoff == nil || *w.Backoff != (spec.Span{Max: 30 * time.Millisecond}) || len(sc.Steps) != 2 {
		t.Errorf("parsed %+v, %d steps", w, len(sc.Steps))
	}
	if sc, err := spec.Load("clock-jump"); err != nil || sc.Workload.Kind != spec.WorkloadSteps {
		t.Errorf("clock-jump: %v, workload %+v: scripted scenarios keep the steps kind", err, sc.Workload)
	}
}

// A generated counter workload on real nodes, with a link cut and heal
// played beside it: a storage node is started and stopped, the resource is
// set up and read back, and everything checks.
func TestGeneratedWorkloadRun(t *testing.T) {
	t.Parallel()
	sc, err := spec.Parse([]byte(strings.Replace(generated, "kind: counter", "kind: counter, duration: 2s, think: 1ms..5ms", 1)+
		"steps:\n  - cut: {client: c1, nodes: [n3]}\n  - wait: 300ms\n  - heal: links\n"), "gen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := runScenario(t, context.Background(), sc, 3)
	res := out.Result
	if res.Verdict != checker.Valid || res.Counter == nil || res.Counter.Verdict != checker.Valid || !out.AsExpected {
		t.Fatalf("verdict %s (%s), counter %+v", res.Verdict, res.Reason, res.Counter)
	}
	if _, err := os.Stat(filepath.Join(out.Dir, "storage", "nodes")); !os.IsNotExist(err) {
		t.Errorf("storage node data left behind: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out.Dir, "storage", "logs", "n1.log")); err != nil {
		t.Errorf("no storage node log: %v", err)
	}
	events, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	procs := map[string]int{}
	cuts := 0
	for _, e := range events {
		procs[e.Process]++
		if e.F == history.Nemesis {
			cuts++
		}
	}
	if procs[history.ProcessInit] != 2 || procs[history.ProcessFinal] != 2 || procs["c1"] == 0 || procs["c2"] == 0 || cuts != 2 {
		t.Errorf("events by process %v, %d nemesis events", procs, cuts)
	}
	if k := res.Counter.Keys[0]; k.Final == nil || *k.Final != int64(k.Applied) || k.Applied < 2 {
		t.Errorf("counter %+v: the final read should count every applied increment", k)
	}
}

// Think times far beyond the TTL play Kleppmann's pause without a nemesis:
// the lock keeps its promise (P1), the resource loses updates.
func TestGeneratedPauseRunLosesUpdates(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"counter", "set"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			sc, err := spec.Parse([]byte(strings.NewReplacer("expect: safe", "expect: violation", "ttl: 1s, node_timeout: 200ms", "ttl: 300ms, node_timeout: 100ms",
				"kind: counter", "kind: "+kind+", duration: 2s, think: 1s").Replace(generated)), "pause.yaml")
			if err != nil {
				t.Fatal(err)
			}
			res := runScenario(t, context.Background(), sc, 1).Result
			if res.Verdict != checker.Invalid || res.Properties[0].Verdict != checker.Valid {
				t.Fatalf("verdict %s (%s), P1 %+v", res.Verdict, res.Reason, res.Properties[0])
			}
			switch kind {
			case "counter":
				if res.Counter.LostUpdates == 0 {
					t.Errorf("counter %+v", res.Counter)
				}
			case "set":
				if res.Set.LostCount == 0 {
					t.Errorf("set %+v", res.Set)
				}
			}
		})
	}
}

// Fencing with a lock that hands out no tokens cannot test fencing: the run
// fails and its verdict is unknown, never valid.
func TestFencingWithoutTokensIsUnknown(t *testing.T) {
	t.Parallel()
	sc, err := spec.Parse([]byte(strings.Replace(generated, "kind: counter", "kind: counter, duration: 500ms, fencing: on", 1)), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner.Run(context.Background(), sc, runner.RunOptions{Seed: 1, Store: t.TempDir(), CacheDir: playCache(t)})
	if err == nil || !strings.Contains(err.Error(), "fencing token") {
		t.Fatalf("err = %v, want the missing fencing token named", err)
	}
	if out == nil || out.Result.Verdict != checker.Unknown {
		t.Fatalf("outcome %+v, want unknown", out)
	}
	if !strings.Contains(out.Result.Reason, "incomplete") {
		t.Errorf("reason %q", out.Result.Reason)
	}
}
