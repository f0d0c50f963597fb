package checker

import (
	"testing"

	"splitbrain/history"
	"splitbrain/history/historytest"
)

// The liveness promises are judged on every play; they decide the verdict
// only where the play expects them, each promise on its own.
func TestLivenessDecidesWhereExpected(t *testing.T) {
	// n1 alone; c1 holds and releases; c2 is refused a free lock with no
	// fault anywhere: deadlock freedom broken, fault tolerance untested.
	b := new(historytest.Builder)
	b.Setup(0, history.LockSetup{Kind: "single", Nodes: []string{"n1"}, Quorum: 1, Expiry: historytest.Sec(1), Retry: historytest.Sec(0.1)})
	b.Acquire("c1", "k", 0.1, 0.11, 1.1).Release("c1", "k", 0.5, 0.51)
	b.Add("c2", history.Invoke, history.Acquire, "k", 1)
	b.Add("c2", history.Fail, history.Acquire, "k", 1.01)
	b.Add(history.ProcessHarness, history.Info, history.End, "", 2)
	for _, tc := range []struct {
		expect  string
		verdict Verdict
		met     bool
	}{
		{"safe", Valid, true},
		{"lock safe, deadlock-freedom violation", Invalid, true},
		{"lock safe, liveness ok", Invalid, false},
		{"lock safe, fault-tolerance any", Unknown, false},
	} {
		res := Check(b.Events(), CheckOptions(tc.expect)...)
		if res.Verdict != tc.verdict || Met(tc.expect, res) != tc.met {
			t.Errorf("expecting %q: verdict %s (%s), met %v; want %s, met %v", tc.expect, res.Verdict, res.Reason, Met(tc.expect, res), tc.verdict, tc.met)
		}
		if res.Liveness == nil || res.Liveness.DeadlockFreedom.Verdict != Invalid || res.Liveness.FaultTolerance.Verdict != Unknown {
			t.Errorf("expecting %q: liveness %+v", tc.expect, res.Liveness)
		}
	}
	// A prefix of a run proves no promise kept.
	ok := new(historytest.Builder)
	ok.Setup(0, history.LockSetup{Kind: "single", Nodes: []string{"n1"}, Quorum: 1, Expiry: historytest.Sec(1), Retry: historytest.Sec(0.1)})
	ok.Acquire("c1", "k", 0.1, 0.11, 1.1)
	res := Check(ok.Events(), Incomplete("cut short"))
	if res.Liveness.DeadlockFreedom.Verdict != Unknown {
		t.Errorf("an incomplete history's deadlock freedom: %+v", res.Liveness.DeadlockFreedom)
	}
	for _, p := range res.Properties {
		if p.Name == PropDeadlockFreedom && p.Verdict != Unknown {
			t.Errorf("property %+v", p)
		}
	}
}
