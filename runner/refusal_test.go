package runner_test

import (
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
			playMeetsExpectation(t, play)
		})
	}
}
