package checker

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"splitbrain/history"
	"splitbrain/history/historytest"
)

// clockJumpHistory is the shape of Kleppmann's clock-jump counterexample:
// c1 is granted by n1..n3, n3's clock jumps and drops c1's key, and c2 is
// granted by n3..n5 while c1 still believes it holds the lock.
func clockJumpHistory() []history.Event {
	b := &historytest.Builder{}
	b.Fault(0, historytest.Cut(1, history.PhaseStart, "c1", "n4", "n5"))
	b.Acquire("c1", "k", 0.1, 0.2, 2.1)
	b.Fault(0.5, history.Fault{ID: 2, Kind: "clock-jump", Phase: history.PhaseStart, Nodes: []string{"n3"}, Offset: int64(5 * time.Second)})
	b.Fault(0.7, historytest.Cut(1, history.PhaseStop, "c1", "n4", "n5"))
	b.Fault(0.8, historytest.Cut(3, history.PhaseStart, "c2", "n1", "n2"))
	b.Acquire("c2", "k", 1.0, 1.1, 3.0)
	b.Fault(1.2, historytest.Cut(3, history.PhaseStop, "c2", "n1", "n2"))
	b.Release("c1", "k", 1.9, 1.95)
	b.Release("c2", "k", 2.5, 2.6)
	return b.Events()
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name       string
		events     []history.Event
		opts       []Option
		verdict    Verdict
		violations int
		ops        int
		reason     string // substring of Reason
	}{
		{
			name:       "clock jump: overlapping beliefs",
			events:     clockJumpHistory(),
			verdict:    Invalid,
			violations: 1,
			ops:        4,
			reason:     "mutual exclusion violated",
		},
		{
			name: "c2 acquires after c1's deadline; c2 fails while c1 holds",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 1.0).
				Add("c2", history.Invoke, history.Acquire, "k", 0.5).
				Add("c2", history.Fail, history.Acquire, "k", 0.6, historytest.Err("quorum not reached")).
				Acquire("c2", "k", 1.2, 1.3, 2.0).
				Release("c2", "k", 1.5, 1.6).Events(),
			verdict: Valid,
			ops:     4,
		},
		{
			name: "release before the deadline ends the belief",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 5.0).
				Release("c1", "k", 1.0, 1.1).
				Acquire("c2", "k", 1.4, 1.5, 3.0).Events(),
			verdict: Valid,
			ops:     4,
		},
		{
			// A lease ends at its deadline, its release or its replacement
			// by a granted lease: c1 asking again and being refused
			// leaves c1 holding the lease it has (workload.Client keeps
			// it), so c2's grant overlaps it.
			name: "a refused second acquire does not end the lease its client holds",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 2.0).
				Add("c1", history.Invoke, history.Acquire, "k", 0.3).
				Acquire("c2", "k", 0.5, 0.6, 2.5).
				Add("c1", history.Fail, history.Acquire, "k", 0.7, historytest.Err("quorum not reached")).Events(),
			verdict:    Invalid,
			violations: 1,
			ops:        4,
			reason:     "mutual exclusion violated",
		},
		{
			name: "the same refused acquire, c2 granted after c1's deadline",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 2.0).
				Add("c1", history.Invoke, history.Acquire, "k", 0.3).
				Add("c1", history.Fail, history.Acquire, "k", 0.7, historytest.Err("quorum not reached")).
				Acquire("c2", "k", 2.1, 2.2, 3.0).Events(),
			verdict: Valid,
			ops:     4,
		},
		{
			// The other side: a granted re-acquire replaces c1's lease,
			// so c1's first lease ends at the new grant, not its deadline.
			name: "a granted second acquire replaces its client's lease",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 5.0).
				Acquire("c1", "k", 0.3, 0.4, 1.0).
				Acquire("c2", "k", 1.1, 1.2, 2.0).Events(),
			verdict: Valid,
			ops:     6,
		},
		{
			name: "without that release the same history overlaps",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 5.0).
				Acquire("c2", "k", 1.4, 1.5, 3.0).Events(),
			verdict:    Invalid,
			violations: 1,
			ops:        4,
		},
		{
			// c1 continues as c1.1 after an unknown outcome, still holding
			// its lease (as workload.Client does); a grant to c1.1 replaces
			// it, as a grant to c1 would. (Found by the reference check.)
			name: "a grant to a client continuing under a new process replaces its lease",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 2.0).
				Add("c1", history.Invoke, history.Extend, "k", 0.3).
				Add("c1", history.Info, history.Extend, "k", 0.4, historytest.Err("i/o timeout")).
				Acquire("c1.1", "k", 0.5, 0.6, 2.5).Events(),
			verdict: Valid,
			ops:     4,
		},
		{
			name: "the same grant to another client overlaps",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 2.0).
				Add("c1", history.Invoke, history.Extend, "k", 0.3).
				Add("c1", history.Info, history.Extend, "k", 0.4, historytest.Err("i/o timeout")).
				Acquire("c2", "k", 0.5, 0.6, 2.5).Events(),
			verdict:    Invalid,
			violations: 1,
			ops:        4,
		},
		{
			// A grant that had lapsed at its OK, extended at that very
			// instant: the extension is late (the validity ends at the
			// deadline), so c1 believes from the extend's OK, inside
			// c2's belief. (Found by the reference check.)
			name: "a lapsed grant extended at the instant of its OK",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0, 0, 0).
				Add("c1", history.Invoke, history.Extend, "k", 0).
				Add("c1", history.OK, history.Extend, "k", 0, historytest.Deadline(0.5)).
				Acquire("c2", "k", 0.1, 0.2, 1.0).Events(),
			verdict:    Invalid,
			violations: 1,
			ops:        4,
		},
		{
			name: "separate keys do not conflict",
			events: (&historytest.Builder{}).
				Acquire("c1", "a", 0.1, 0.2, 2.0).
				Acquire("c2", "b", 0.3, 0.5, 2.0).Events(),
			verdict: Valid,
			ops:     4,
		},
		{
			name: "failed, unknown and pending acquires are not operations",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 2.0).
				Add("c2", history.Invoke, history.Acquire, "k", 0.3).
				Add("c2", history.Fail, history.Acquire, "k", 0.4).
				Add("c3", history.Invoke, history.Acquire, "k", 0.5).
				Add("c3", history.Info, history.Acquire, "k", 0.9, historytest.Err("i/o timeout")).
				Add("c4", history.Invoke, history.Acquire, "k", 1.0).Events(),
			verdict: Valid,
			ops:     2,
		},
		{
			name:    "empty history",
			events:  nil,
			verdict: Unknown,
			reason:  "no operations recorded",
		},
		{
			name: "only failed acquires",
			events: (&historytest.Builder{}).
				Add("c1", history.Invoke, history.Acquire, "k", 0.1).
				Add("c1", history.Fail, history.Acquire, "k", 0.2).Events(),
			verdict: Unknown,
			reason:  "no acquire succeeded",
		},
		{
			name: "only a grant that had lapsed by its OK",
			events: (&historytest.Builder{}).
				Add("c1", history.Invoke, history.Acquire, "k", 0.1).
				Add("c1", history.OK, history.Acquire, "k", 0.3, historytest.Deadline(0.2)).Events(),
			verdict: Unknown,
			reason:  "every lease granted had lapsed before its client saw the grant",
		},
		{
			name: "completion without invoke",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 1.0).
				Add("c2", history.OK, history.Acquire, "k", 0.5, historytest.Deadline(2)).Events(),
			verdict: Unknown,
			reason:  "completes no pending invoke",
		},
		{
			name: "completion of a different function",
			events: (&historytest.Builder{}).
				Add("c1", history.Invoke, history.Acquire, "k", 0.1).
				Add("c1", history.OK, history.Release, "k", 0.2).Events(),
			verdict: Unknown,
			reason:  "completes a acquire",
		},
		{
			name: "double invoke",
			events: (&historytest.Builder{}).
				Add("c1", history.Invoke, history.Acquire, "k", 0.1).
				Add("c1", history.Invoke, history.Acquire, "k", 0.2).Events(),
			verdict: Unknown,
			reason:  "still pending",
		},
		{
			name: "time going backwards",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.5, 0.6, 1.0).
				Add("c2", history.Invoke, history.Acquire, "k", 0.1).Events(),
			verdict: Unknown,
			reason:  "earlier than the event before it",
		},
		{
			name: "incomplete history without a violation",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 1.0).Events(),
			opts:    []Option{Incomplete("torn last line")},
			verdict: Unknown,
			ops:     2,
			reason:  "torn last line",
		},
		{
			name:       "incomplete history with a violation is still invalid",
			events:     clockJumpHistory(),
			opts:       []Option{Incomplete("torn last line")},
			verdict:    Invalid,
			violations: 1,
			ops:        4,
		},
		{
			name: "an extend pushes the deadline",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 1.0).
				Add("c1", history.Invoke, history.Extend, "k", 0.7).
				Add("c1", history.OK, history.Extend, "k", 0.8, historytest.Deadline(3.0)).
				Acquire("c2", "k", 1.4, 1.5, 3.0).Events(),
			verdict:    Invalid,
			violations: 1,
			ops:        4,
		},
		{
			name: "a failed extend does not",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 1.0).
				Add("c1", history.Invoke, history.Extend, "k", 0.7).
				Add("c1", history.Fail, history.Extend, "k", 0.8).
				Acquire("c2", "k", 1.4, 1.5, 3.0).Events(),
			verdict: Valid,
			ops:     4,
		},
		{
			name: "release under a new process id is matched by lock value",
			events: (&historytest.Builder{}).
				Add("c1", history.Invoke, history.Acquire, "k", 0.1).
				Add("c1", history.OK, history.Acquire, "k", 0.2, historytest.Deadline(5), historytest.Value("v1")).
				Add("c1", history.Invoke, history.Write, "", 0.3).
				Add("c1", history.Info, history.Write, "", 0.4).
				Add("c1b", history.Invoke, history.Release, "k", 0.5, historytest.Value("v1")).
				Add("c1b", history.OK, history.Release, "k", 0.6).
				Acquire("c2", "k", 1.0, 1.1, 3.0).Events(),
			verdict: Valid,
			ops:     4,
		},
		{
			name: "re-acquire by the same client is not a self-overlap",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 5.0).
				Acquire("c1", "k", 0.5, 0.6, 5.0).Events(),
			verdict: Valid,
			ops:     4,
		},
		{
			name: "grant without a deadline is held until release",
			events: (&historytest.Builder{}).
				Add("c1", history.Invoke, history.Acquire, "k", 0.1).
				Add("c1", history.OK, history.Acquire, "k", 0.2).
				Acquire("c2", "k", 1.4, 1.5, 3.0).Events(),
			verdict:    Invalid,
			violations: 1,
			ops:        3,
		},
		{
			name: "touching intervals are not an overlap",
			events: (&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 1.0).
				Acquire("c2", "k", 0.9, 1.0, 2.0).Events(),
			verdict: Valid,
			ops:     4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Check(tt.events, tt.opts...)
			if res.Verdict != tt.verdict {
				t.Fatalf("verdict = %s (%s), want %s", res.Verdict, res.Reason, tt.verdict)
			}
			if len(res.Violations) != tt.violations || res.ViolationCount != tt.violations {
				t.Errorf("violations = %d (count %d), want %d: %+v", len(res.Violations), res.ViolationCount, tt.violations, res.Violations)
			}
			if res.Ops != tt.ops {
				t.Errorf("ops = %d, want %d", res.Ops, tt.ops)
			}
			if !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", res.Reason, tt.reason)
			}
			if res.Reason == "" {
				t.Error("empty reason")
			}
			if (res.Verdict == Invalid) != res.HasVisualization() {
				t.Errorf("HasVisualization = %v for a %s result", res.HasVisualization(), res.Verdict)
			}
		})
	}
}

func TestClockJumpViolationExplained(t *testing.T) {
	res := Check(clockJumpHistory())
	if res.Verdict != Invalid || len(res.Violations) != 1 {
		t.Fatalf("got %s with %d violations, want one violation", res.Verdict, len(res.Violations))
	}
	v := res.Violations[0]
	if v.Key != "k" || v.Clients != [2]string{"c1", "c2"} {
		t.Errorf("violation on %q by %v, want \"k\" by [c1 c2]", v.Key, v.Clients)
	}
	// c1 believes [0.2, release invoke 1.9]; c2 believes [1.1, 2.5].
	if v.From != historytest.Sec(1.1) || v.To != historytest.Sec(1.9) {
		t.Errorf("overlap = [%d, %d], want [%d, %d]", v.From, v.To, historytest.Sec(1.1), historytest.Sec(1.9))
	}
	var kinds []string
	for _, f := range v.Faults {
		kinds = append(kinds, f.Label())
	}
	want := []string{"cut c1→n4,n5", "clock-jump n3 +5s", "cut c2→n1,n2"}
	if strings.Join(kinds, "|") != strings.Join(want, "|") {
		t.Errorf("faults = %q, want %q", kinds, want)
	}
	wantText := `c1 and c2 both believed they held lock "k" from 1.10s to 1.90s (0.800s); active faults: ` +
		`cut c1→n4,n5 0s–0.700s; clock-jump n3 +5s from 0.500s, never healed; cut c2→n1,n2 0.800s–1.20s`
	if v.Text != wantText {
		t.Errorf("text =\n%s\nwant\n%s", v.Text, wantText)
	}
	if len(res.Keys) != 1 || len(res.Keys[0].Beliefs) != 2 {
		t.Fatalf("keys = %+v", res.Keys)
	}
	c1 := res.Keys[0].Beliefs[0]
	if c1.Client != "c1" || c1.End != historytest.Sec(1.9) || c1.EndReason != EndRelease || c1.EndIndex < 0 {
		t.Errorf("c1 belief = %+v, want it to end at its release", c1)
	}
	if len(res.Faults) != 3 || res.Faults[1].Healed || !res.Faults[0].Healed {
		t.Errorf("faults = %+v", res.Faults)
	}
}

func TestFaultsOutsideTheWindowAreNotBlamed(t *testing.T) {
	b := &historytest.Builder{}
	b.Fault(0, history.Fault{ID: 1, Kind: "kill", Phase: history.PhaseStart, Nodes: []string{"n2"}})
	b.Fault(0.05, history.Fault{ID: 1, Kind: "kill", Phase: history.PhaseStop, Nodes: []string{"n2"}})
	b.Acquire("c1", "k", 0.1, 0.2, 5.0)
	b.Acquire("c2", "k", 1.4, 1.5, 3.0)
	b.Fault(4, history.Fault{ID: 2, Kind: "pause", Phase: history.PhaseStart, Nodes: []string{"n1"}})
	res := Check(b.Events())
	if res.Verdict != Invalid || len(res.Violations) != 1 {
		t.Fatalf("got %s, %d violations", res.Verdict, len(res.Violations))
	}
	if v := res.Violations[0]; len(v.Faults) != 0 || !strings.HasSuffix(v.Text, "no fault was active") {
		t.Errorf("violation = %+v, want no faults blamed", v)
	}
}

func TestBeliefEndsAtDeadlineWhenEarlierThanRelease(t *testing.T) {
	res := Check((&historytest.Builder{}).
		Acquire("c1", "k", 0.1, 0.2, 1.0).
		Release("c1", "k", 1.5, 1.6).
		Add("c2", history.Invoke, history.Acquire, "k", 2.0).
		Add("c2", history.Info, history.Acquire, "k", 2.5).Events())
	if res.Verdict != Valid {
		t.Fatalf("verdict %s: %s", res.Verdict, res.Reason)
	}
	k := res.Keys[0]
	if b := k.Beliefs[0]; b.End != historytest.Sec(1.0) || b.EndReason != EndDeadline {
		t.Errorf("belief = %+v, want it to end at the deadline", b)
	}
	if k.Acquired != 1 || k.Unknown != 1 || k.Releases != 1 || len(k.Attempts) != 1 || k.Attempts[0].Outcome != "info" {
		t.Errorf("key info = %+v", k)
	}
}

func TestPorcupineTimeoutIsUnknown(t *testing.T) {
	valid := (&historytest.Builder{}).Acquire("c1", "k", 0.1, 0.2, 1.0).Acquire("c2", "k", 1.1, 1.2, 2.0).Events()
	t.Run("injected", func(t *testing.T) {
		res := Check(valid, WithTimeout(time.Second))
		if res.Verdict != Valid {
			t.Fatalf("control: %s", res.Verdict)
		}
		cfgTimeout := func(c *config) {
			c.check = func(porcupine.Model, []porcupine.Operation, time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
				return porcupine.Unknown, porcupine.LinearizationInfo{}
			}
		}
		res = Check(valid, cfgTimeout, WithTimeout(time.Second))
		if res.Verdict != Unknown || !strings.Contains(res.Reason, "did not finish within 1s") {
			t.Errorf("got %s (%s), want unknown for a timeout", res.Verdict, res.Reason)
		}
		// Overlapping beliefs prove a violation without porcupine's help.
		res = Check(clockJumpHistory(), cfgTimeout)
		if res.Verdict != Invalid || len(res.Violations) != 1 || !strings.Contains(res.Reason, "porcupine: unknown") {
			t.Errorf("got %s (%s), want invalid from the interval check", res.Verdict, res.Reason)
		}
		if !res.HasVisualization() {
			t.Error("no visualization of the failing window")
		}
	})
	t.Run("real", func(t *testing.T) {
		// Every acquire is invoked at 0, and every client sees its grant
		// and releases at one instant: a piece of hundreds of operations
		// at one instant, more than the lock's own order of a piece
		// decides (lease.linearizes), so porcupine searches it — and
		// cannot finish in a nanosecond. With time, it finds the order.
		b := &historytest.Builder{}
		const n = 300
		for i := 0; i < n; i++ {
			b.Add(clientName(i), history.Invoke, history.Acquire, "k", 0)
		}
		for i := 0; i < n; i++ {
			b.Add(clientName(i), history.OK, history.Acquire, "k", 1, historytest.Deadline(2))
		}
		for i := 0; i < n; i++ {
			b.Add(clientName(i), history.Invoke, history.Release, "k", 1)
		}
		res := Check(b.Events(), WithTimeout(time.Nanosecond))
		if res.Verdict != Unknown || !strings.Contains(res.Reason, "did not finish") {
			t.Fatalf("got %s (%s), want unknown", res.Verdict, res.Reason)
		}
		if res.Ops != 2*n {
			t.Errorf("ops = %d, want %d", res.Ops, 2*n)
		}
		if res := Check(b.Events()); res.Verdict != Valid {
			t.Errorf("control: got %s (%s), want valid", res.Verdict, res.Reason)
		}
	})
}

func clientName(i int) string { return "c" + itoa(i+1) }

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestPorcupineIllegalWithoutOverlapIsInvalid(t *testing.T) {
	valid := (&historytest.Builder{}).Acquire("c1", "k", 0.1, 0.2, 1.0).Acquire("c2", "k", 1.1, 1.2, 2.0).Events()
	illegal := func(c *config) {
		c.check = func(porcupine.Model, []porcupine.Operation, time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
			return porcupine.Illegal, porcupine.LinearizationInfo{}
		}
	}
	res := Check(valid, illegal)
	if res.Verdict != Invalid || len(res.Violations) != 0 || !strings.Contains(res.Reason, "no two belief intervals overlap") {
		t.Errorf("got %s (%s) with %d violations", res.Verdict, res.Reason, len(res.Violations))
	}
}

func TestPanicIsUnknown(t *testing.T) {
	boom := func(c *config) {
		c.check = func(porcupine.Model, []porcupine.Operation, time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
			panic("boom")
		}
	}
	res := Check(clockJumpHistory(), boom)
	if res.Verdict != Unknown || !strings.Contains(res.Reason, "boom") {
		t.Errorf("got %s (%s), want unknown naming the panic", res.Verdict, res.Reason)
	}
	if res.HasVisualization() {
		t.Error("a failed check offers a visualization")
	}
}

func TestBadNemesisValueIsANote(t *testing.T) {
	b := (&historytest.Builder{}).Acquire("c1", "k", 0.1, 0.2, 1.0)
	b.Add(history.ProcessNemesis, history.Info, history.Nemesis, "", 0.5, func(e *history.Event) { e.Value = json.RawMessage(`"nope"`) })
	res := Check(b.Events())
	if res.Verdict != Valid || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "nemesis event 2") {
		t.Errorf("got %s, notes %q", res.Verdict, res.Notes)
	}
}

func TestWriteVisualization(t *testing.T) {
	// A quiet, valid stretch first: the visualization shows only the
	// failing window, not the whole history.
	b := &historytest.Builder{}
	b.Acquire("c3", "k", 0, 0.01, 0.05).Release("c3", "k", 0.02, 0.03)
	b.Acquire("c3", "other", 0.04, 0.045, 0.05)
	b.Add("c4", history.Invoke, history.Acquire, "k", 1.5)
	b.Add("c4", history.Fail, history.Acquire, "k", 1.6, historytest.Err("quorum not reached"))
	events := b.Events()
	for _, e := range clockJumpHistory() {
		e.Time += historytest.Sec(0.1)
		events = append(events, e)
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time < events[j].Time })
	for i := range events {
		events[i].Index = int64(i)
	}
	res := Check(events)
	if res.Verdict != Invalid {
		t.Fatalf("verdict %s: %s", res.Verdict, res.Reason)
	}
	if got := len(res.viz.Ops); got != 4 {
		t.Errorf("failing window has %d ops, want the 4 of c1 and c2 on k", got)
	}
	var buf bytes.Buffer
	if err := res.WriteVisualization(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{"<html", "acquire(c1) on \\\"k\\\"", "clock-jump n3 +5s", "nemesis", "c4 acquire \\\"k\\\": fail"} {
		if !strings.Contains(html, want) {
			t.Errorf("visualization lacks %q", want)
		}
	}
	if strings.Contains(html, "c3") {
		t.Error("visualization shows c3, which is outside the failing window")
	}

	valid := Check((&historytest.Builder{}).Acquire("c1", "k", 0.1, 0.2, 1.0).Events())
	if err := valid.WriteVisualization(&buf); !errors.Is(err, ErrNoVisualization) {
		t.Errorf("valid result: err = %v, want ErrNoVisualization", err)
	}
}

func TestResultJSONRoundTrip(t *testing.T) {
	res := Check(clockJumpHistory())
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Verdict != Invalid || len(back.Violations) != 1 || back.Violations[0].Text != res.Violations[0].Text ||
		len(back.Violations[0].Faults) != 3 || back.Violations[0].Faults[1].Kind != "clock-jump" {
		t.Errorf("round trip lost data: %s", b)
	}
	if !strings.Contains(string(b), `"verdict":"invalid"`) {
		t.Errorf("json = %s", b)
	}
	if back.HasVisualization() {
		t.Error("a result read from JSON claims a visualization")
	}
}

func TestExitCodes(t *testing.T) {
	if Valid.ExitCode() != 0 || Invalid.ExitCode() != 1 || Unknown.ExitCode() != 2 || Verdict("").ExitCode() != 2 {
		t.Error("exit codes do not follow Jepsen's 0/1/2")
	}
}

func TestNotesAreCapped(t *testing.T) {
	notes := make([]string, MaxNotes+7)
	for i := range notes {
		notes[i] = "note " + itoa(i)
	}
	got := capNotes(notes)
	if len(got) != MaxNotes+1 || got[0] != "note 0" || got[MaxNotes] != "… and 7 more note(s) not listed" {
		t.Errorf("capNotes kept %d notes, last %q", len(got), got[len(got)-1])
	}
	if short := capNotes(notes[:3]); len(short) != 3 {
		t.Errorf("capNotes changed a short list: %q", short)
	}
}

// A client paused between the validity check and the return sees a grant
// whose validity has already ended: the lock promised it nothing (P1 holds),
// but its critical section still overlaps the next holder's (P2 does not).
func TestLeaseLapsedAtGrantIsP2sToJudge(t *testing.T) {
	b := &historytest.Builder{}
	b.Add("c1", history.Invoke, history.Acquire, "k", 0.1)
	b.Add("c2", history.Invoke, history.Acquire, "k", 2.1)
	b.Add("c2", history.OK, history.Acquire, "k", 2.2, historytest.Deadline(4.0), historytest.Nodes("n3", "n4", "n5"))
	b.Add("c1", history.OK, history.Acquire, "k", 3.0, historytest.Deadline(2.0), historytest.Nodes("n1", "n2", "n3"))
	b.Release("c1", "k", 3.1, 3.2).Release("c2", "k", 3.5, 3.6)
	events := b.Events()
	res := Check(events)
	byName := map[string]Verdict{}
	for _, p := range res.Properties {
		byName[p.Name] = p.Verdict
	}
	if byName[PropLeaseLock] != Valid {
		t.Errorf("P1 = %s, want valid: c1's lease had lapsed before it saw the grant", byName[PropLeaseLock])
	}
	if byName[PropCriticalSection] != Invalid || res.Verdict != Invalid {
		t.Errorf("P2 = %s, verdict %s (%s); want invalid: c1 acted on the lapsed lease while c2 held the lock",
			byName[PropCriticalSection], res.Verdict, res.Reason)
	}
}

// One rule for a grant whose validity had ended by the time its client saw
// it: it carries no belief for P1, in the interval sweep and in porcupine's
// operations alike. c2 holds the lock from 0.15s to 2s; c1's acquire,
// invoked at 0.1s, comes back at 1s with a deadline around it. Before the
// OK (or at it) the grant promised nothing: P1 holds, whatever porcupine
// would make of an expiry at the deadline. After it, c1 believed for an
// instant inside c2's belief: P1 is broken.
func TestLapsedGrantOneRule(t *testing.T) {
	tests := []struct {
		name     string
		deadline float64
		p1       Verdict
		overlaps int
	}{
		{"deadline well before the OK, after the other grant", 0.5, Valid, 0},
		{"deadline just before the OK", 0.999, Valid, 0},
		{"deadline at the OK", 1.0, Valid, 0},
		{"deadline just after the OK", 1.001, Invalid, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &historytest.Builder{}
			b.Add("c1", history.Invoke, history.Acquire, "k", 0.1)
			b.Acquire("c2", "k", 0.12, 0.15, 2.0)
			b.Add("c1", history.OK, history.Acquire, "k", 1.0, historytest.Deadline(tt.deadline))
			res := Check(b.Events())
			p1 := property(t, res, PropLeaseLock)
			if p1.Verdict != tt.p1 || res.ViolationCount != tt.overlaps {
				t.Fatalf("P1 = %s with %d overlap(s) (%s), want %s with %d", p1.Verdict, res.ViolationCount, p1.Reason, tt.p1, tt.overlaps)
			}
			if tt.p1 == Valid && res.Ops != 2 {
				t.Errorf("ops = %d, want c2's 2 only: the lapsed grant is no operation of P1", res.Ops)
			}
			if tt.p1 == Invalid && !strings.Contains(p1.Reason, "1 overlapping belief interval") {
				t.Errorf("reason = %q, want the overlap named", p1.Reason)
			}
			// P2 still judges what c1 did with the grant, in the sweep
			// and in porcupine's operations alike.
			if cs := res.CriticalSection; cs == nil || cs.Verdict != Invalid || cs.Ops != 4 {
				t.Errorf("P2 = %+v, want invalid over the 4 operations of both grants", cs)
			}
		})
	}
}

// A deadline no lock could have granted on the harness's one clock makes
// the history inconsistent: unknown with the reason, never invalid. A
// lock measures the validity from an instant after the invoke and before
// the OK, and grants at most the TTL from there (less the drift
// allowance, ttl/100 + 2ms): so a deadline before the invoke, or later
// than the OK + TTL + drift, cannot happen. The upper bound counts from
// the OK, not the invoke: a lock set to retry starts its last attempt
// long after the invoke. Each edge both sides; the plausible side of each
// is judged as usual.
func TestImplausibleDeadlineIsUnknown(t *testing.T) {
	const ttl = 1.0
	drift := 0.01*ttl + 0.002
	at := func(ns int64) historytest.Mod {
		return func(e *history.Event) { e.Deadline = &ns }
	}
	// c1's grant overlaps c2's (granted at 1.21s) when its deadline is
	// past 1.21s: a violation when plausible.
	upper := func(dl int64, f history.Func) []history.Event {
		b := &historytest.Builder{}
		b.Add("c1", history.Invoke, history.Acquire, "k", 0.1, historytest.TTL(ttl))
		ok := 0.2
		if f == history.Extend {
			// Granted until 0.5s, extended at 0.3s.
			b.Add("c1", history.OK, history.Acquire, "k", 0.2, historytest.Deadline(0.5), historytest.Value("v1"))
			b.Add("c1", history.Invoke, history.Extend, "k", 0.25, historytest.TTL(ttl), historytest.Value("v1"))
			ok = 0.3
		}
		b.Add("c1", history.OK, f, "k", ok, at(dl), historytest.Value("v1"))
		b.Acquire("c2", "k", 1.205, 1.21, 2.0)
		return b.Events()
	}
	// c1 is invoked at 1s and sees its grant at 1.5s, inside c2's belief.
	lower := func(dl int64) []history.Event {
		b := &historytest.Builder{}
		b.Acquire("c2", "k", 0.4, 0.5, 3.0)
		b.Add("c1", history.Invoke, history.Acquire, "k", 1.0, historytest.TTL(ttl))
		b.Add("c1", history.OK, history.Acquire, "k", 1.5, at(dl))
		return b.Events()
	}
	edge := historytest.Sec(0.2 + ttl + drift)
	tests := []struct {
		name    string
		events  []history.Event
		verdict Verdict
		reason  string
	}{
		{"deadline at OK + TTL + drift", upper(edge, history.Acquire), Invalid, "mutual exclusion violated"},
		{"deadline 1ns past OK + TTL + drift", upper(edge+1, history.Acquire), Unknown,
			"later than its OK at 0.200s plus the TTL (1.00s) and the drift allowance (0.012s)"},
		{"extend: deadline at OK + TTL + drift", upper(edge+historytest.Sec(0.1), history.Extend), Invalid, "mutual exclusion violated"},
		{"extend: deadline 1ns past OK + TTL + drift", upper(edge+historytest.Sec(0.1)+1, history.Extend), Unknown,
			"later than its OK at 0.300s"},
		{"without a TTL recorded, no upper bound", func() []history.Event {
			ev := upper(edge+historytest.Sec(5), history.Acquire)
			ev[0].TTL = 0
			return ev
		}(), Invalid, "mutual exclusion violated"},
		{"deadline at the invoke", lower(historytest.Sec(1.0)), Invalid, "critical sections overlapped"},
		{"deadline 1ns before the invoke", lower(historytest.Sec(1.0) - 1), Unknown,
			"before the acquire was invoked at 1.00s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Check(tt.events)
			if res.Verdict != tt.verdict || !strings.Contains(res.Reason, tt.reason) {
				t.Fatalf("verdict %s (%s), want %s with %q", res.Verdict, res.Reason, tt.verdict, tt.reason)
			}
			if tt.verdict == Unknown && !strings.Contains(res.Reason, "inconsistent") {
				t.Errorf("reason %q does not say the history is inconsistent", res.Reason)
			}
		})
	}
	// A lock that retried: its last attempt began long after the invoke,
	// so the deadline is far past invoke + TTL, and plausible.
	b := &historytest.Builder{}
	b.Add("c1", history.Invoke, history.Acquire, "k", 0.1, historytest.TTL(ttl))
	b.Add("c1", history.OK, history.Acquire, "k", 3.0, historytest.Deadline(3.0+ttl-drift))
	if res := Check(b.Events()); res.Verdict != Valid {
		t.Errorf("retried acquire: %s (%s), want valid", res.Verdict, res.Reason)
	}
}

// An extend whose OK comes at the lease's deadline comes too late, by the
// rule that makes a grant whose deadline is at its OK lapsed: the validity
// ends at the deadline. Just before it, the extend pushes the deadline of
// the belief it extends.
func TestExtendAtTheDeadline(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ok      float64
		beliefs int
		note    bool
	}{
		{"extend OK just before the deadline", 0.999, 1, false},
		{"extend OK at the deadline", 1.0, 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := Check((&historytest.Builder{}).
				Acquire("c1", "k", 0.1, 0.2, 1.0).
				Add("c1", history.Invoke, history.Extend, "k", 0.9).
				Add("c1", history.OK, history.Extend, "k", tt.ok, historytest.Deadline(2.0)).Events())
			if res.Verdict != Valid || len(res.Keys) != 1 || len(res.Keys[0].Beliefs) != tt.beliefs {
				t.Fatalf("%s with keys %+v, want valid with %d belief(s)", res.Verdict, res.Keys, tt.beliefs)
			}
			if got := strings.Contains(strings.Join(res.Notes, "\n"), "succeeded after its lease had lapsed"); got != tt.note {
				t.Errorf("notes %q: late extension noted = %v, want %v", res.Notes, got, tt.note)
			}
		})
	}
}
