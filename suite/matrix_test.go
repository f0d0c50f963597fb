package suite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/locks"
	"splitbrain/runstore"
)

// writeRun writes a run folder holding only its result.json, as a play
// of scenario against lock would leave it.
func writeRun(t *testing.T, dir, scenario, lock string, seed int64, verdict checker.Verdict, started time.Time) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := runstore.Record{
		Meta:       runstore.Meta{Scenario: scenario, Lock: lock, Seed: seed, Started: started, Expect: "violation"},
		Result:     checker.Result{Verdict: verdict},
		AsExpected: verdict == checker.Invalid,
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, runstore.ResultFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The matrix of a few run folders alone: found under a store (a link not
// followed), each story's family and n/a read off the built-in story,
// plays in the order they started, the seeds listed, a folder whose
// record does not read named and left out.
func TestFindRunsAndRebuild(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	second := writeRun(t, filepath.Join(store, "clock-jump", "b"), "clock-jump", locks.Redlock.Name, 4, checker.Valid, t0.Add(time.Minute))
	first := writeRun(t, filepath.Join(store, "clock-jump", "a"), "clock-jump", locks.Redlock.Name, 3, checker.Invalid, t0)
	if err := os.Symlink(first, filepath.Join(store, "latest")); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(store, "broken")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, runstore.ResultFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirs, err := FindRuns(store)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{bad, first, second}; !reflect.DeepEqual(dirs, want) {
		t.Fatalf("FindRuns = %v, want %v (the link left out)", dirs, want)
	}
	out := filepath.Join(t.TempDir(), "matrix")
	m, runs, unread, err := Rebuild(out, append(dirs, first), "splitbrain matrix STORE")
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 || unread == nil {
		t.Errorf("%d runs read, unread %v; want 2 and the broken folder named", runs, unread)
	}
	if m.Title != "splitbrain matrix" || m.Command != "splitbrain matrix STORE" || !reflect.DeepEqual(m.Seeds, []int64{3, 4}) || !m.Started.Equal(t0) {
		t.Errorf("matrix %q %q seeds %v started %v", m.Title, m.Command, m.Seeds, m.Started)
	}
	if !reflect.DeepEqual(m.Scenarios, []string{"clock-jump"}) || !slices.Contains(m.Locks, locks.Single.Name) {
		t.Errorf("rows %v, columns %v; want clock-jump and every built-in lock kind", m.Scenarios, m.Locks)
	}
	for _, c := range m.Cells {
		switch {
		case c.Family != string(FamilyClock):
			t.Errorf("%s/%s: family %q", c.Scenario, c.Lock, c.Family)
		case c.Lock == locks.Redlock.Name:
			if c.Runs != 2 || c.Invalid != 1 || c.Plays[0].Seed != 3 || !c.Flaky {
				t.Errorf("redlock cell: %d runs, %d invalid, first seed %d, flaky %v; want 2, 1, 3, flaky", c.Runs, c.Invalid, c.Plays[0].Seed, c.Flaky)
			}
		case c.Lock == locks.Etcd.Name && c.NA == "":
			t.Errorf("clock-jump/etcd: no n/a (a Go binary's clock)")
		}
	}
	if _, err := os.Stat(filepath.Join(out, runstore.MatrixFile)); err != nil {
		t.Error(err)
	}
}
