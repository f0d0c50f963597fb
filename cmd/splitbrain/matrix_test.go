package main_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/runstore"
	"splitbrain/suite"
)

// faultSchedule is the run's faults as the history recorded them, in
// order, without times: what the seed decides.
func faultSchedule(t *testing.T, dir string) []string {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(dir, runstore.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events {
		if e.F != history.Nemesis {
			continue
		}
		f, err := e.Fault()
		if err != nil {
			t.Fatal(err)
		}
		// Whether a paused client reached its point is the run's
		// timing, not the seed's.
		if f.Phase == history.PhaseStart && f.Kind != fault.KindClientHeld {
			out = append(out, f.Kind+" "+strings.Join(f.Nodes, ",")+" "+f.Detail)
		}
	}
	return out
}

// --runs N plays each cell N times on seeds derived from the suite's
// seed; each play's seed and command are stored, and the play re-run
// alone with `run --seed S` meets the same fault schedule. The matrix is
// then assembled again from the run folders alone (splitbrain matrix),
// this time with the lone re-run in it too.
func TestSuiteRunsReplayAloneAndMatrixFromFolders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := filepath.Join(t.TempDir(), "runs")
	res := e.runFor(4*time.Minute, "suite", "random-kill-counter", "--lock", "redlock", "--runs", "2", "--parallel", "2", "--seed", "3", "--store", store)
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0", res.code)
	}
	s1 := suite.PlaySeed(3, 1)
	if !strings.Contains(res.stdout, "play seeds by run: 3, "+strconv.FormatInt(s1, 10)) {
		t.Errorf("the derived seeds are not printed")
	}
	m, err := runstore.ReadMatrix(store)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Seeds, []int64{3, s1}) || m.Runs != 2 {
		t.Errorf("matrix seeds %v runs %d, want [3 %d] and 2", m.Seeds, m.Runs, s1)
	}
	if len(m.Cells) != 1 || m.Cells[0].Runs != 2 {
		t.Fatalf("cells %+v, want one cell of 2 plays", m.Cells)
	}
	c := m.Cells[0]
	var play runstore.MatrixPlay
	for _, p := range c.Plays {
		if p.Seed == s1 {
			play = p
		}
	}
	want := "splitbrain run random-kill-counter --seed " + strconv.FormatInt(s1, 10)
	if !strings.HasPrefix(play.Command, want) || !strings.Contains(play.Command, "--lock redlock") {
		t.Fatalf("play of seed %d re-runs with %q, want %q ... --lock redlock", s1, play.Command, want)
	}
	store2 := filepath.Join(t.TempDir(), "alone")
	alone := e.runFor(2*time.Minute, "run", "random-kill-counter", "--lock", "redlock", "--seed", strconv.FormatInt(s1, 10), "--store", store2)
	if alone.code != 0 && alone.code != 1 {
		t.Fatalf("run alone: exit %d", alone.code)
	}
	got, wantSched := faultSchedule(t, filepath.Dir(reportPath(t, alone.stdout))), faultSchedule(t, filepath.Join(store, filepath.FromSlash(play.Dir)))
	if len(wantSched) == 0 || !slices.Equal(got, wantSched) {
		t.Errorf("the play re-run alone met the faults\n%s\nwant those of the suite's play\n%s", strings.Join(got, "\n"), strings.Join(wantSched, "\n"))
	}
	// Run 0 replays the suite's seed itself: its schedule differs from
	// run 1's (different seeds draw different faults).
	for _, p := range c.Plays {
		if p.Seed == 3 && slices.Equal(faultSchedule(t, filepath.Join(store, filepath.FromSlash(p.Dir))), wantSched) {
			t.Error("runs 0 and 1 met the same faults")
		}
	}

	out := filepath.Join(t.TempDir(), "landscape")
	mres := e.run("matrix", store, store2, "--out", out)
	if mres.code != 0 {
		t.Fatalf("matrix: exit %d", mres.code)
	}
	back, err := runstore.ReadMatrix(out)
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]runstore.MatrixCell{}
	for _, c := range back.Cells {
		if c.Scenario != "random-kill-counter" {
			t.Errorf("a row %s that no folder played", c.Scenario)
		}
		cells[c.Lock] = c
	}
	if r := cells["redlock"]; r.Runs != 3 || r.Family != string(suite.FamilyRandom) || r.Expect != "any" {
		t.Errorf("redlock cell from the folders %+v, want 3 plays (the suite's 2 and the lone one) of family random, expect any", r)
	}
	if s, ok := cells["single"]; !ok || s.Runs != 0 || s.NA != "" {
		t.Errorf("single cell %+v, want one that fits and was not played", s)
	}
	if !strings.Contains(mres.stdout, "3 run folders") {
		t.Errorf("matrix does not count the folders")
	}
	// Each lock's promises and price, as suite prints them and matrix.html
	// shows them on top: redlock's line counts the one row it played.
	for _, sum := range back.Summary() {
		if sum.Played == 0 {
			if !strings.Contains(mres.stdout, "  nothing played against ") || !strings.Contains(mres.stdout, sum.Lock+",") && !strings.Contains(mres.stdout, sum.Lock+"\n") {
				t.Errorf("matrix does not list %s as played against nothing:\n%s", sum.Lock, mres.stdout)
			}
			continue
		}
		if !strings.Contains(mres.stdout, "  "+sum.String()+"\n") {
			t.Errorf("matrix does not print %s's summary %q:\n%s", sum.Lock, sum.String(), mres.stdout)
		}
		if sum.Lock == "redlock" && (sum.Played != 1 || sum.Safety.Rows != 1) {
			t.Errorf("redlock's summary %+v, want the one row it played", sum)
		}
	}
	e.checkClean()
}

// Ctrl-C during a parallel suite: every play in flight stops, heals,
// cleans up and writes its report; the matrix is written and says it is
// partial; nothing is left running and the live registry is empty.
func TestInterruptParallelSuite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := filepath.Join(t.TempDir(), "runs")
	r := e.start("suite", "pause-critical-section", "restart-amnesia", "--runs", "3", "--parallel", "3", "--seed", "1", "--store", store)
	// One play ended, others are in flight.
	r.waitFor(t, "as expected", 3*time.Minute)
	deadline := time.Now().Add(time.Minute)
	for len(e.liveEntries()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(e.liveEntries()) == 0 {
		t.Fatal("no play in flight to interrupt")
	}
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 2*time.Minute); code != 2 {
		t.Errorf("exit code %d after Ctrl-C, want 2", code)
	}
	e.checkClean()
	m, err := runstore.ReadMatrix(store)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Partial, "interrupted") {
		t.Errorf("matrix partial %q, want it to say the suite was interrupted", m.Partial)
	}
	if page, err := os.ReadFile(filepath.Join(store, runstore.MatrixFile)); err != nil || !strings.Contains(string(page), "Partial matrix") {
		t.Errorf("matrix.html does not say it is partial (%v)", err)
	}
	if !strings.Contains(r.stdout.String(), "PARTIAL: ") {
		t.Error("the output does not say the matrix is partial")
	}
	// Every play that started left a report, the interrupted ones too.
	plays := 0
	for _, c := range m.Cells {
		plays += c.Runs
	}
	var folders []string
	for _, s := range []string{"pause-critical-section", "restart-amnesia"} {
		entries, _ := os.ReadDir(filepath.Join(store, s))
		for _, ent := range entries {
			if ent.IsDir() { // not the latest link
				folders = append(folders, filepath.Join(store, s, ent.Name()))
			}
		}
	}
	if len(folders) == 0 || len(folders) != plays || plays >= (13+16)*3 {
		t.Errorf("%d run folders, %d plays in the matrix; want every started play, and not all 87", len(folders), plays)
	}
	for _, f := range folders {
		for _, name := range []string{runstore.ResultFile, runstore.ReportFile} {
			if _, err := os.Stat(filepath.Join(f, name)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
}
