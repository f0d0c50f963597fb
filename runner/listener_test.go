package runner_test

import (
	"testing"

	"splitbrain/checker"
	"splitbrain/locks"
	"splitbrain/scenarios/spec"
)

// kazoo's Lock and Curator's mutex used as their documentation asks, with
// a state listener (kazoo-listener, curator-listener): a holder cut off
// from every member hears SUSPENDED when a ping goes unanswered for two
// thirds of its session timeout, and stops believing before the servers
// can expire its session and grant c2 — partition-holder's ensemble,
// where the plain users of both break the promise (docs/locks.md), keeps
// it. The listener's lost is in the driver's transcript and ends c1's
// belief in the history.
func TestStateListenersHearTheCut(t *testing.T) {
	t.Parallel()
	sc, err := spec.Load("partition-holder")
	if err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{locks.KazooListener.Name, locks.CuratorListener.Name} {
		t.Run(lock, func(t *testing.T) {
			t.Parallel()
			play := sc.PlayAgainst(lock)
			if e, err := checker.ParseExpectation(string(play.Expect)); err != nil || e.Lock != checker.ExpectSafe {
				t.Fatalf("partition-holder expects %q (%v) of %s; the test is of a lock kept", play.Expect, err, lock)
			}
			playMeetsExpectation(t, play)
		})
	}
}
