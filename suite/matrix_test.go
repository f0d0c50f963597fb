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
	return writeRecord(t, dir, runstore.Record{
		Meta:       runstore.Meta{Scenario: scenario, Lock: lock, Seed: seed, Started: started, Expect: "violation"},
		Result:     checker.Result{Verdict: verdict},
		AsExpected: verdict == checker.Invalid,
	})
}

// writeRecord writes a run folder holding only rec as its result.json.
func writeRecord(t *testing.T, dir string, rec runstore.Record) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
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

// writeReplay writes a replay of the play in first: a sibling folder
// whose record names it (Meta.ReplayOf), as suite.Play leaves one.
func writeReplay(t *testing.T, dir, first string, seed int64, verdict checker.Verdict, started time.Time) string {
	t.Helper()
	return writeRecord(t, dir, runstore.Record{
		Meta: runstore.Meta{Scenario: "clock-jump", Lock: locks.Redlock.Name, Seed: seed, Started: started, Expect: "violation",
			ReplayOf: filepath.Base(first)},
		Result:     checker.Result{Verdict: verdict},
		AsExpected: verdict == checker.Invalid,
	})
}

// A replay decides its seed's play and keeps the first inside it: the
// cell counts one play, met by the replay, not flaky. A replay whose
// first play is not among the folders, or names a play of another seed,
// stands alone, and so does that play.
func TestAssembleReplays(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// the folders given, by name: "first" (seed 3, valid: missed
		// "violation"), "replay" of first (seed 3, invalid: met it),
		// "other" (seed 4, invalid), "replay-of-other-seed" (seed 3,
		// names other)
		folders              []string
		runs, met, replayed  int
		flaky, firstInReplay bool
	}{
		{"replay with its first", []string{"first", "replay"}, 1, 1, 1, false, true},
		{"first alone", []string{"first"}, 1, 0, 0, false, false},
		{"replay without its first", []string{"replay"}, 1, 1, 0, false, false},
		{"replay naming another seed's play", []string{"other", "replay-of-other-seed"}, 2, 2, 0, false, false},
		{"replay, its first and another seed", []string{"first", "replay", "other"}, 2, 2, 1, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := filepath.Join(t.TempDir(), "clock-jump")
			first := filepath.Join(store, "first")
			other := filepath.Join(store, "other")
			write := map[string]func() string{
				"first": func() string { return writeRun(t, first, "clock-jump", locks.Redlock.Name, 3, checker.Valid, t0) },
				"other": func() string {
					return writeRun(t, other, "clock-jump", locks.Redlock.Name, 4, checker.Invalid, t0.Add(time.Minute))
				},
				"replay": func() string {
					return writeReplay(t, filepath.Join(store, "replay"), first, 3, checker.Invalid, t0.Add(2*time.Minute))
				},
				"replay-of-other-seed": func() string {
					return writeReplay(t, filepath.Join(store, "replay-of-other-seed"), other, 3, checker.Invalid, t0.Add(3*time.Minute))
				},
			}
			var dirs []string
			for _, f := range tc.folders {
				dirs = append(dirs, write[f]())
			}
			runs, err := ReadRuns(dirs)
			if err != nil {
				t.Fatal(err)
			}
			m := Assemble(runs, nil, []string{locks.Redlock.Name})
			if err := m.Prepare(filepath.Dir(store)); err != nil {
				t.Fatal(err)
			}
			if len(m.Cells) != 1 {
				t.Fatalf("%d cells, want 1", len(m.Cells))
			}
			c := m.Cells[0]
			if c.Runs != tc.runs || c.Met != tc.met || c.Replayed != tc.replayed || c.Flaky != tc.flaky {
				t.Errorf("%d plays, %d met, %d replayed, flaky %v; want %d, %d, %d, %v", c.Runs, c.Met, c.Replayed, c.Flaky, tc.runs, tc.met, tc.replayed, tc.flaky)
			}
			var inside *runstore.MatrixPlay
			for _, p := range c.Plays {
				if p.First != nil && p.First.Seed == p.Seed {
					inside = p.First
				}
			}
			if (inside != nil) != tc.firstInReplay {
				t.Fatalf("first play inside its replay: %v, want %v", inside != nil, tc.firstInReplay)
			}
			if inside != nil && (inside.Dir != "clock-jump/first" || inside.Report != "clock-jump/first/"+runstore.ReportFile || inside.AsExpected) {
				t.Errorf("the first play kept as %+v, want its folder relative to the matrix and its miss", *inside)
			}
		})
	}
}
