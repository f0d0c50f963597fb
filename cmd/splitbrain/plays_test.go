package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"splitbrain/locks"
	"splitbrain/runstore"
	"splitbrain/scenarios/fit"
	"splitbrain/scenarios/spec"
)

// clockJumpTwoLocks is Kleppmann's clock jump played against our Redlock
// (split by the jump: invalid) and the single-instance lock (which a
// partition of the lock nodes cannot split: valid).
const clockJumpTwoLocks = `name: clock-jump-two-locks
expect: any
cluster: {nodes: 5}
lock: {kind: [redlock, single], ttl: 2s, node_timeout: 250ms}
workload: {clients: 2}
steps:
  - cut: {client: c1, nodes: [n4, n5]}
  - acquire: {client: c1}
  - heal: links
  - clock: {node: n3, jump: 5s}
  - cut: {client: c2, nodes: [n1, n2]}
  - acquire: {client: c2}
  - heal: links
  - release: {client: c1}
  - release: {client: c2}
`

// run plays a scenario once per lock it lists, each its own run folder
// and verdict, and exits with the worst verdict; --lock plays one.
func TestRunPlaysEveryLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := filepath.Join(t.TempDir(), "runs")
	file := filepath.Join(t.TempDir(), "two.yaml")
	writeFile(t, file, clockJumpTwoLocks)

	res := e.run("run", file, "--seed", "4", "--store", store)
	if res.code != 1 {
		t.Errorf("exit code %d, want 1 (one play invalid, one valid)", res.code)
	}
	for _, want := range []string{
		"scenario clock-jump-two-locks against redlock, seed 4", "scenario clock-jump-two-locks against single, seed 4",
		"verdict: INVALID", "verdict: VALID",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if strings.Index(res.stdout, "against redlock") > strings.Index(res.stdout, "against single") {
		t.Error("plays not in the order the file lists the locks")
	}
	var dirs []string
	for _, line := range strings.Split(res.stdout, "\n") {
		if r, ok := strings.CutPrefix(line, "report: "); ok {
			dirs = append(dirs, checkRunDir(t, r, store))
		}
	}
	if len(dirs) != 2 || dirs[0] == dirs[1] {
		t.Fatalf("run folders %v, want two", dirs)
	}
	for i, lock := range []string{"redlock", "single"} {
		data, err := os.ReadFile(filepath.Join(dirs[i], runstore.ResultFile))
		if err != nil {
			t.Fatal(err)
		}
		// Each play's rerun command replays that play alone.
		if !strings.Contains(string(data), `"lock": "`+lock+`"`) || !strings.Contains(string(data), "--seed 4 --lock "+lock) {
			t.Errorf("play %d: result.json does not name lock %s and its rerun command:\n%s", i, lock, data)
		}
	}

	res = e.run("run", file, "--seed", "4", "--store", store, "--json")
	var rows []struct {
		Scenario, Lock, Verdict string
		Report                  string
	}
	if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
		t.Fatalf("--json with two plays: not a JSON array: %v\n%s", err, res.stdout)
	}
	if res.code != 1 || len(rows) != 2 || rows[0].Lock != "redlock" || rows[0].Verdict != "invalid" ||
		rows[1].Lock != "single" || rows[1].Verdict != "valid" {
		t.Errorf("--json: exit %d, rows %+v", res.code, rows)
	}

	res = e.run("run", file, "--seed", "4", "--store", store, "--lock", "single")
	if res.code != 0 || strings.Contains(res.stdout, "against") || strings.Count(res.stdout, "verdict:") != 1 {
		t.Errorf("--lock single: exit %d, want 0 and one play:\n%s", res.code, res.stdout)
	}
	e.checkClean()
}

// The suite command over a story, densely: the story against every lock
// kind, where each played cell meets its expectation and links a report
// that exists, and each n/a cell says why. The story has a per-lock
// expectation (clock-jump: violation for some locks, safe for others,
// played on ZooKeeper's ensemble, n/a for the etcd locks, whose clock
// cannot be moved). A random schedule beside it (random-clock-counter,
// shortened by --time) doubled the plays, about 20 CPU-seconds, and
// checked no more of the command: runner's TestBuiltinsRandomSchedules
// plays each random schedule on every deployment, and a suite's --time is
// TestSuiteMeetsItsExpectations' (one Redis play).
// Every built-in cell is played in CI once, by the runner package's
// TestBuiltinsMeetTheirExpectations and TestBuiltinsRandomSchedules; the
// whole matrix is make suite. Its length is logged, not asserted.
func TestSuiteDense(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the suite takes a minute; -short skips it")
	}
	e := newEnv(t)
	store := filepath.Join(t.TempDir(), "runs")
	started := time.Now()
	stories := []string{"clock-jump"}
	res := e.runFor(5*time.Minute, "suite", stories[0], "--seed", "5", "--store", store, "--json")
	t.Logf("suite %v took %v", stories, time.Since(started).Round(time.Second))
	if res.code != 0 {
		t.Errorf("exit code %d, want 0", res.code)
	}
	var out struct {
		Matrix string                 `json:"matrix"`
		Cells  []runstore.MatrixCell  `json:"cells"`
		Locks  []runstore.LockSummary `json:"locks"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("stdout is not the suite's JSON: %v", err)
	}
	m, err := runstore.ReadMatrix(store)
	if err != nil {
		t.Fatal(err)
	}
	// Each lock's summary, as the terminal prints it.
	summed, _ := json.Marshal(out.Locks)
	if want, _ := json.Marshal(m.Summary()); len(out.Locks) == 0 || string(summed) != string(want) {
		t.Errorf("stdout's lock summaries %s, want the matrix's %s", summed, want)
	}
	if m.Seed != 5 || out.Matrix != filepath.Join(store, runstore.MatrixFile) || m.Partial != "" {
		t.Errorf("matrix seed %d, path %s, partial %q", m.Seed, out.Matrix, m.Partial)
	}
	if len(out.Cells) != len(m.Cells) {
		t.Errorf("stdout has %d cells, matrix.json %d", len(out.Cells), len(m.Cells))
	}
	want := map[[2]string]string{} // cell → why n/a, or ""
	for _, name := range stories {
		sc, err := spec.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, lock := range locks.Matrix() {
			_, why := fit.Lock(sc, lock)
			want[[2]string{name, lock}] = why
		}
		if !slices.Contains(m.Scenarios, name) {
			t.Errorf("matrix has no row %s", name)
		}
	}
	got := map[[2]string]bool{}
	for _, c := range m.Cells {
		key := [2]string{c.Scenario, c.Lock}
		why, ok := want[key]
		if !ok || got[key] {
			t.Errorf("cell %s/%s: not a built-in and lock kind, or twice", c.Scenario, c.Lock)
		}
		got[key] = true
		if why != "" {
			if c.NA != why || c.Runs != 0 {
				t.Errorf("cell %s/%s: n/a %q with %d plays, want n/a %q", c.Scenario, c.Lock, c.NA, c.Runs, why)
			}
			continue
		}
		if c.Runs != 1 || c.Met != 1 {
			t.Errorf("cell %s/%s: %d/%d met %s (%+v)", c.Scenario, c.Lock, c.Met, c.Runs, c.Expect, c.Plays)
		}
		if _, err := os.Stat(filepath.Join(store, filepath.FromSlash(c.Plays[0].Report))); err != nil {
			t.Errorf("cell %s/%s: report: %v", c.Scenario, c.Lock, err)
		}
	}
	for key := range want {
		if !got[key] {
			t.Errorf("no cell for %s against %s", key[0], key[1])
		}
	}
	for _, f := range []string{runstore.MatrixFile, runstore.MatrixJSON} {
		if _, err := os.Stat(filepath.Join(store, f)); err != nil {
			t.Error(err)
		}
	}
	e.checkClean()
}
