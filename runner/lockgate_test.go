package runner_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/locks"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

// Client pauses reach redsync too, at the points the harness places around
// its calls: paused after its lease came back (Kleppmann's figure 1), c1
// loses an update at the resource; paused after its SET replies, before
// redsync computes its validity, c1's attempt comes back refused — redsync
// subtracts the elapsed time as our Redlock does.
func TestClientPausesReachRedsync(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scenario    string
		wantVerdict checker.Verdict
		// wantSlowFail: c1 has a refused acquire that took longer than
		// the TTL (the pause fell inside the attempt); otherwise c1 has a
		// granted one that did.
		wantSlowFail bool
	}{
		{"pause-critical-section", checker.Invalid, false},
		{"pause-during-acquire", checker.Valid, true},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			sc, err := spec.Load(tt.scenario)
			if err != nil {
				t.Fatal(err)
			}
			if err := sc.Override(spec.Overrides{Lock: locks.Redsync.Name}); err != nil {
				t.Fatal(err)
			}
			out := runScenario(t, context.Background(), sc, 1)
			if out.Result.Verdict != tt.wantVerdict {
				t.Errorf("verdict %s (%s), want %s", out.Result.Verdict, out.Result.Reason, tt.wantVerdict)
			}
			if tt.wantVerdict == checker.Invalid && (out.Result.Counter == nil || out.Result.Counter.LostUpdates == 0) {
				t.Errorf("counter check %+v, want lost updates", out.Result.Counter)
			}
			events, err := history.ReadFile(filepath.Join(out.Dir, runstore.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			invoked := map[string]int64{}
			var slow []history.Event
			for _, e := range events {
				if e.F != history.Acquire || e.Process != "c1" {
					continue
				}
				if e.Type == history.Invoke {
					invoked[e.Process] = e.Time
					continue
				}
				if time.Duration(e.Time-invoked[e.Process]) > sc.Lock.TTL {
					slow = append(slow, e)
				}
			}
			want := history.OK
			if tt.wantSlowFail {
				want = history.Fail
			}
			found := false
			for _, e := range slow {
				found = found || e.Type == want
			}
			if !found {
				t.Errorf("c1 has no %s acquire that outlasted the %v TTL: the pause did not hold redsync where it should (slow ones: %+v)",
					want, sc.Lock.TTL, slow)
			}
		})
	}
}
