package runner_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"splitbrain/checker"
	"splitbrain/cluster"
	"splitbrain/history"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

func runScenario(t *testing.T, ctx context.Context, sc *spec.Scenario, seed int64) *runner.Outcome {
	t.Helper()
	return runWithProgress(t, ctx, sc, seed, nil)
}

func runWithProgress(t *testing.T, ctx context.Context, sc *spec.Scenario, seed int64, progress io.Writer) *runner.Outcome {
	t.Helper()
	cache := playCache(t)
	out, err := runner.Run(ctx, sc, runner.RunOptions{Seed: seed, Store: t.TempDir(), CacheDir: cache, Progress: progress})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	assertCleanedUp(t, out.Dir, cache)
	return out
}

// assertCleanedUp checks what a finished run must not leave behind: node
// data, registry entries (pid and clock offset files).
func assertCleanedUp(t *testing.T, dir, cache string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "nodes")); !os.IsNotExist(err) {
		t.Errorf("node data left in %s: %v", dir, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "live")); len(entries) != 0 {
		t.Errorf("live registry not empty: %v", entries)
	}
	for _, f := range []string{runstore.HistoryFile, runstore.ResultFile, runstore.ReportFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run dir lacks %s: %v", f, err)
		}
	}
}

// Kleppmann's clock jump breaks Redlock whatever the jump drawn from the
// seed, and the stored history, when re-checked, says the same.
func TestClockJumpFindsTheViolation(t *testing.T) {
	t.Parallel()
	forSeeds(t, 10, func(t *testing.T, seed int64) {
		sc, err := spec.Load("clock-jump")
		if err != nil {
			t.Fatal(err)
		}
		out := runScenario(t, context.Background(), sc, seed)
		res := out.Result
		if res.Verdict != checker.Invalid || !out.AsExpected {
			t.Fatalf("seed %d: verdict %s (%s), want invalid", seed, res.Verdict, res.Reason)
		}
		v := res.Violations[0]
		if v.Clients != [2]string{"c1", "c2"} || v.Key != "lock" || v.To <= v.From {
			t.Errorf("seed %d: violation %+v, want c1 and c2 overlapping on lock", seed, v)
		}
		var jump bool
		for _, f := range v.Faults {
			jump = jump || (f.Kind == "clock-jump" && f.Nodes[0] == "n3")
		}
		if !jump {
			t.Errorf("seed %d: violation does not name n3's clock jump: %+v", seed, v.Faults)
		}
		if _, err := os.Stat(filepath.Join(out.Dir, runstore.PorcupineFile)); err != nil {
			t.Errorf("seed %d: no porcupine visualization: %v", seed, err)
		}
		events, err := history.ReadFile(filepath.Join(out.Dir, runstore.HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		if again := checker.Check(events); again.Verdict != checker.Invalid {
			t.Errorf("seed %d: re-check of the stored history says %s", seed, again.Verdict)
		}
		grants := map[string][]string{}
		for _, e := range events {
			if e.F == history.Acquire && e.Type == history.OK {
				grants[e.Process] = e.Nodes
			}
		}
		if strings.Join(grants["c1"], ",") != "n1,n2,n3" || strings.Join(grants["c2"], ",") != "n3,n4,n5" {
			t.Errorf("seed %d: grants %v, want c1 on n1..n3 and c2 on n3..n5", seed, grants)
		}
	})
}

// Without the jump, the same steps are safe: the checker does not cry wolf.
func TestClockJumpControlIsValid(t *testing.T) {
	t.Parallel()
	forSeeds(t, 10, func(t *testing.T, seed int64) {
		sc, err := spec.Load("clock-jump-control")
		if err != nil {
			t.Fatal(err)
		}
		out := runScenario(t, context.Background(), sc, seed)
		if out.Result.Verdict != checker.Valid || !out.AsExpected {
			t.Fatalf("seed %d: verdict %s (%s), want valid", seed, out.Result.Verdict, out.Result.Reason)
		}
		if _, err := os.Stat(filepath.Join(out.Dir, runstore.PorcupineFile)); !os.IsNotExist(err) {
			t.Errorf("seed %d: porcupine.html written for a valid run", seed)
		}
	})
}

// forSeeds runs f for seeds 1..n, each a parallel subtest with its own
// nodes: the runs mostly wait on TTLs and faults.
func forSeeds(t *testing.T, n int64, f func(t *testing.T, seed int64)) {
	for seed := int64(1); seed <= n; seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			t.Parallel()
			f(t, seed)
		})
	}
}

// An interrupted run (Ctrl-C) still heals, stops every node, and writes a
// report; without a recorded violation its verdict is unknown, never valid.
func TestInterruptedRunCleansUpAndReportsUnknown(t *testing.T) {
	t.Parallel()
	sc, err := spec.Parse([]byte(`name: long
expect: safe
cluster: {nodes: 3}
lock: {ttl: 1s}
workload: {clients: 2}
steps:
  - cut: {client: c1, nodes: [n3]}
  - acquire: {client: c1}
  - clock: {node: n2, jump: 5s}
  - wait: 60s
  - release: {client: c1}
`), "long.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Ctrl-C once the long wait has started: both faults are active then.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := runWithProgress(t, ctx, sc, 1, cancelOn{"wait 1m0s", cancel})
	if out.Result.Verdict != checker.Unknown || !strings.Contains(out.Result.Reason, "interrupted") {
		t.Errorf("verdict %s (%s), want unknown because interrupted", out.Result.Verdict, out.Result.Reason)
	}
	events, err := history.ReadFile(filepath.Join(out.Dir, runstore.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	starts, stops := 0, 0
	for _, e := range events {
		if e.F == history.Nemesis {
			f, _ := e.Fault()
			if f.Phase == history.PhaseStart {
				starts++
			} else {
				stops++
			}
		}
	}
	if starts != 2 || stops != 2 {
		t.Errorf("nemesis events: %d starts, %d stops; want both faults started and healed", starts, stops)
	}
}

// cancelOn cancels a run when its progress shows a line containing text.
type cancelOn struct {
	text   string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.text) {
		c.cancel()
	}
	return len(p), nil
}

// The parser knows the persistence modes by name, without the servers
// (spec.PersistModes); the runner hands them to the nodes as
// cluster.Persistence: the two lists are the same modes in the same order,
// so a mode a file may name is one a Redis node can run, and back.
func TestPersistModesAreTheClusterModes(t *testing.T) {
	t.Parallel()
	var modes []string
	for _, p := range cluster.Redis.Persistence {
		modes = append(modes, string(p))
	}
	if !slices.Equal(modes, spec.PersistModes) || spec.PersistNone != string(cluster.PersistNone) {
		t.Errorf("spec's modes %v (default %s), cluster's %v (default %s)", spec.PersistModes, spec.PersistNone, modes, cluster.PersistNone)
	}
}
