package suite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/locks"
	"splitbrain/runner"
	"splitbrain/scenarios/spec"
)

// StoodStill replays a play that missed its expectation while something
// stood still, and nothing else: not a play that met it (stalled or
// not), not a miss with nothing standing still, not a play that made no
// run folder.
func TestStoodStill(t *testing.T) {
	t.Parallel()
	stall := []checker.Stall{{End: 2e9, For: 300e6}}
	for _, tc := range []struct {
		name string
		pr   PlayResult
		want bool
	}{
		{"missed, the harness stood still", PlayResult{Outcome: &runner.Outcome{Result: checker.Result{Stalls: stall}}}, true},
		{"missed, nothing stood still", PlayResult{Outcome: &runner.Outcome{}}, false},
		{"met, the harness stood still", PlayResult{Outcome: &runner.Outcome{AsExpected: true, Result: checker.Result{Stalls: stall}}}, false},
		{"no run folder", PlayResult{}, false},
	} {
		if got := StoodStill(tc.pr); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Play plays a replay after every other play, once, with the same seed,
// its run folder naming the first's; the matrix counts one play for
// the cell, decided by the replay, with the first inside it. Real
// plays of a small story on one redis-server.
func TestPlayReplays(t *testing.T) {
	t.Parallel()
	const src = "name: replayed\nexpect: safe\ncluster: {nodes: 1}\nlock: {kind: single, ttl: 3s}\nworkload: {clients: 2}\nsteps:\n" +
		"  - acquire: {client: c1, expect: acquired}\n  - acquire: {client: c2, expect: refused}\n  - release: {client: c1}\n"
	sc, err := spec.Parse([]byte(src), "replayed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := NewPlan([]*spec.Scenario{sc}, []string{locks.Single.Name}, spec.BackendLocal)
	store := t.TempDir()
	asked := 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prs, err := Play(ctx, plan.Cells, PlayOptions{
		Seed: 7, Runs: 2, Parallel: 2,
		Run: runner.RunOptions{Store: store, CacheDir: t.TempDir(), NoIndex: true, ProgressEvery: -1},
		// The second run's play, as if it had missed with the harness
		// standing still; asked once per first play, never of a replay.
		Replay: func(pr PlayResult) bool {
			asked++
			if pr.ReplayOf != "" {
				t.Errorf("asked whether to replay a replay (of %s)", pr.ReplayOf)
			}
			return pr.Run == 1
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 3 || asked != 2 {
		t.Fatalf("%d plays, asked %d times; want 3 plays (two and a replay), asked twice", len(prs), asked)
	}
	first, replay := prs[1], prs[2]
	if first.Run != 1 || first.ReplayOf != "" || replay.Run != 1 || replay.Seed != first.Seed || replay.ReplayOf != filepath.Base(first.Outcome.Dir) {
		t.Fatalf("plays in order: %+v, %+v; want run 1's play, then its replay naming its folder", first, replay)
	}
	if replay.Outcome == nil || replay.Outcome.Dir == first.Outcome.Dir || !replay.Outcome.AsExpected {
		t.Fatalf("the replay: %+v", replay.Outcome)
	}
	runs, err := ReadRuns([]string{prs[0].Outcome.Dir, first.Outcome.Dir, replay.Outcome.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := runs[2].Rec.Meta.ReplayOf; got != replay.ReplayOf {
		t.Errorf("the replay's record names %q, want %q", got, replay.ReplayOf)
	}
	m := plan.Matrix(runs, 7, 2)
	if err := m.Prepare(store); err != nil {
		t.Fatal(err)
	}
	c := m.Cells[0]
	if c.Runs != 2 || c.Met != 2 || c.Replayed != 1 {
		t.Errorf("cell: %d plays, %d met, %d replayed; want 2, 2, 1", c.Runs, c.Met, c.Replayed)
	}
	for _, p := range c.Plays {
		if (p.First != nil) != (p.Seed == first.Seed) {
			t.Errorf("seed %d: first play inside: %v", p.Seed, p.First != nil)
		}
	}
}
