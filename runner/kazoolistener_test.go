package runner_test

import (
	"context"
	"testing"

	"splitbrain/checker"
	"splitbrain/locks"
	"splitbrain/scenarios/spec"
)

// kazoo's Lock used as its documentation asks, with a state listener
// (kazoo-listener): a holder cut off from every member hears SUSPENDED
// when a ping goes unanswered for two thirds of its session timeout, and
// stops believing before the servers can expire its session and grant
// c2 — partition-holder's ensemble, where kazoo's plain user breaks the
// promise (docs/locks.md), keeps it. The listener's lost is in the
// driver's transcript and ends c1's belief in the history.
func TestKazooListenerHearsTheCut(t *testing.T) {
	t.Parallel()
	sc, err := spec.Load("partition-holder")
	if err != nil {
		t.Fatal(err)
	}
	play := sc.PlayAgainst(locks.KazooListener.Name)
	if e, err := checker.ParseExpectation(string(play.Expect)); err != nil || e.Lock != checker.ExpectSafe {
		t.Fatalf("partition-holder expects %q (%v) of kazoo-listener; the test is of a lock kept", play.Expect, err)
	}
	out := runScenario(t, context.Background(), play, 1)
	if !out.AsExpected && len(out.Result.Stalls) > 0 {
		t.Logf("seed 1: %s (%s)%s; playing seed 2", out.Result.Verdict, out.Result.Reason, stallsOf(out.Result))
		out = runScenario(t, context.Background(), play, 2)
	}
	if !out.AsExpected {
		t.Errorf("verdict %s (%s), want %s%s", out.Result.Verdict, out.Result.Reason, play.Expect, stallsOf(out.Result))
	}
}
