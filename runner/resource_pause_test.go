package runner_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/locks"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

// resourceLoss is a resource check's verdict, reason and count of what it
// lost, from a run's result.
type resourceLoss func(res checker.Result) (found bool, v checker.Verdict, reason string, lost int)

// Kleppmann's figure 1 on every resource: a client paused in its critical
// section past its lease writes from a stale read. Without fencing each
// resource's own check reports the harm; with fencing the storage rejects
// the stale write (visible in the history) and the resource stays correct.
func TestPauseInCriticalSectionOnEveryResource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind string
		// named is what the resource's reason calls the violation.
		named []string
		check resourceLoss
	}{
		{"counter", []string{"update(s) lost"}, func(res checker.Result) (bool, checker.Verdict, string, int) {
			if res.Counter == nil {
				return false, "", "", 0
			}
			return true, res.Counter.Verdict, res.Counter.Reason, res.Counter.LostUpdates
		}},
		{"bank", []string{"transfer(s) lost", "money not conserved"}, func(res checker.Result) (bool, checker.Verdict, string, int) {
			if res.Bank == nil {
				return false, "", "", 0
			}
			lost := res.Bank.LostTransfers
			if lost == 0 && res.Bank.BadReads > 0 {
				lost = res.Bank.BadReads
			}
			return true, res.Bank.Verdict, res.Bank.Reason, lost
		}},
		{"set", []string{"acknowledged add(s) lost"}, func(res checker.Result) (bool, checker.Verdict, string, int) {
			if res.Set == nil {
				return false, "", "", 0
			}
			return true, res.Set.Verdict, res.Set.Reason, res.Set.LostCount
		}},
	} {
		// The built-ins pause c1 right after the grant, before its read;
		// before-write pauses it between its read and its write, as in
		// Kleppmann's figure.
		for _, at := range []string{"after-acquire", "before-write"} {
			for _, fenced := range []bool{false, true} {
				// The family fences its storage wherever the lock hands
				// out tokens (fencing: auto): fenced-simple's play is the
				// fenced one.
				name, lock := "pause-critical-section", locks.Redlock.Name
				if fenced {
					name, lock = name+"-fenced", locks.FencedSimple.Name
				}
				t.Run(tc.kind+"/"+name+"/"+at, func(t *testing.T) {
					t.Parallel()
					family, err := spec.Load("pause-critical-section")
					if err != nil {
						t.Fatal(err)
					}
					sc := family.PlayAgainst(lock)
					if sc.Workload.Fencing != fenced {
						t.Fatalf("%s plays fencing %v, want %v", lock, sc.Workload.Fencing, fenced)
					}
					sc.Workload.Kind = tc.kind
					paused := false
					for i, st := range sc.Steps {
						if st.Kind == spec.StepPause && st.Client == "c1" {
							sc.Steps[i].Point, paused = at, true
						}
					}
					if !paused {
						t.Fatalf("%s has no pause of c1 to move to %s", name, at)
					}
					out := runScenario(t, context.Background(), sc, 1)
					// After-acquire, c1 reads only once it resumes, so the
					// harm needs c2's write to land in c1's 400 ms between
					// its read and its write; c2 writes once a cycle of
					// 400 ms plus its round trips, which a loaded machine
					// stretches past that window now and then (CI, once in
					// bank). Before-write is certain: c1 read before its
					// pause. So up to three plays, on seeds 1 to 3.
					for seed := int64(2); !fenced && at == "after-acquire" && seed <= 3; seed++ {
						if _, _, _, lost := tc.check(out.Result); lost > 0 {
							break
						}
						t.Logf("seed %d: nothing lost; playing seed %d", seed-1, seed)
						out = runScenario(t, context.Background(), sc, seed)
					}
					// Fenced, the storage turns c1's scripted stale write
					// away; a write it applied outside its writer's lease
					// is a client stalled past its lease that the story
					// did not script (once, in a loaded make test: c2,
					// starved of the CPU, landed its transfer between the
					// next holder's read and write, before any higher
					// token had written, as a fencing storage allows).
					// The checker names such a write; the story tests
					// c1's pause, so up to three plays here too.
					for seed := int64(2); fenced && seed <= 3; seed++ {
						if _, v, _, _ := tc.check(out.Result); v == checker.Valid || len(out.Result.OutsideLease) == 0 {
							break
						}
						t.Logf("seed %d: %s, and a write applied outside its lease (%s); playing seed %d",
							seed-1, out.Result.Verdict, out.Result.OutsideLease[0].Text, seed)
						out = runScenario(t, context.Background(), sc, seed)
					}
					res := out.Result
					found, v, reason, lost := tc.check(res)
					if !found {
						t.Fatalf("no %s check in the result (verdict %s: %s)", tc.kind, res.Verdict, res.Reason)
					}
					t.Logf("%s: %s %s (%s)", tc.kind, name, v, reason)
					if !fenced {
						if v != checker.Invalid || lost == 0 {
							t.Errorf("%s check %s with %d lost (%s), want invalid with something lost", tc.kind, v, lost, reason)
						}
						if !containsAny(reason, tc.named) {
							t.Errorf("%s reason %q names none of %q", tc.kind, reason, tc.named)
						}
						if res.Verdict != checker.Invalid || !out.AsExpected {
							t.Errorf("verdict %s (%s), want invalid%s", res.Verdict, res.Reason, stallsOf(res))
						}
						return
					}
					if v != checker.Valid || lost != 0 {
						t.Errorf("%s check %s with %d lost (%s), want valid", tc.kind, v, lost, reason)
					}
					if res.Verdict != checker.Valid || !out.AsExpected {
						t.Errorf("verdict %s (%s), want valid%s", res.Verdict, res.Reason, stallsOf(res))
					}
					if res.Fencing == nil || res.Fencing.Verdict != checker.Valid || res.Fencing.Rejected == 0 {
						t.Errorf("fencing = %+v, want a stale write rejected", res.Fencing)
					}
					if n := rejectedWrites(t, out.Dir); n == 0 {
						t.Error("the history holds no write the storage rejected")
					}
				})
			}
		}
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// rejectedWrites counts the resource writes in the stored history that the
// storage rejected: completions of type fail carrying its rejection.
func rejectedWrites(t *testing.T, dir string) int {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(dir, runstore.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events {
		switch e.F {
		case history.Write, history.Transfer, history.Add:
		default:
			continue
		}
		if e.Type == history.Fail && strings.Contains(e.Err, "rejected by fencing") {
			var ack history.Ack
			if e.Decode(&ack) == nil && ack.Highest != nil && e.Token != nil && *e.Token < *ack.Highest {
				n++
			}
		}
	}
	return n
}
