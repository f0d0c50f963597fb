package runner_test

import (
	"context"
	"testing"

	"splitbrain/scenarios/spec"
)

// A refused acquire whose cleanup is lost with its connection
// (testdata/refusal-reset.yaml): kazoo 2.8.0 leaves its znode to a session
// that lives on, and nobody gets the lock again — deadlock freedom broken
// (kazoo issue 732; reproduced outside the harness first, docs/locks.md);
// Curator retries and deletes guaranteed(), and the lock is free again.
// Both sides of the same story, each on a real ensemble with its driver.
func TestRefusalCleanupCutOff(t *testing.T) {
	t.Parallel()
	sc, err := spec.Load("testdata/refusal-reset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plays := sc.Plays()
	if len(plays) != 2 {
		t.Fatalf("%d plays, want kazoo's and curator's", len(plays))
	}
	for _, play := range plays {
		t.Run(play.Lock.Kind, func(t *testing.T) {
			t.Parallel()
			out := runScenario(t, context.Background(), play, 1)
			if !out.AsExpected && len(out.Result.Stalls) > 0 {
				t.Logf("seed 1: %s (%s)%s; playing seed 2", out.Result.Verdict, out.Result.Reason, stallsOf(out.Result))
				out = runScenario(t, context.Background(), play, 2)
			}
			if !out.AsExpected {
				t.Errorf("verdict %s (%s), want %s%s", out.Result.Verdict, out.Result.Reason, play.Expect, stallsOf(out.Result))
			}
		})
	}
}
