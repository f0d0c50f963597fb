package fanout

import (
	"strings"
	"testing"

	"splitbrain/checker"
	"splitbrain/runstore"
)

// Two matrices of one suite agree when they have the same cells, each
// played on the same seeds, and the scripted stories' plays the same
// verdicts; a random schedule's verdicts may differ.
func TestCompare(t *testing.T) {
	t.Parallel()
	play := func(seed int64, v checker.Verdict) runstore.MatrixPlay {
		return runstore.MatrixPlay{Seed: seed, Verdict: v, AsExpected: v == checker.Invalid}
	}
	base := func() runstore.Matrix {
		return runstore.Matrix{Cells: []runstore.MatrixCell{
			{Scenario: "clock-jump", Lock: "redlock", Runs: 2, Plays: []runstore.MatrixPlay{play(1, checker.Invalid), play(2, checker.Invalid)}},
			{Scenario: "clock-jump", Lock: "zookeeper", NA: "not its story"},
			{Scenario: "random-kill", Lock: "redlock", Runs: 1, Plays: []runstore.MatrixPlay{play(1, checker.Valid)}},
		}}
	}
	scripted := map[string]bool{"clock-jump": true}
	if d := Compare(base(), base(), scripted); len(d) != 0 {
		t.Errorf("a matrix differs from itself: %v", d)
	}
	for _, tt := range []struct {
		name   string
		change func(*runstore.Matrix)
		want   string // in the one difference; "" for none
	}{
		{"a random verdict", func(m *runstore.Matrix) { m.Cells[2].Plays[0] = play(1, checker.Invalid) }, ""},
		{"a scripted verdict", func(m *runstore.Matrix) { m.Cells[0].Plays[1] = play(2, checker.Valid) }, "seed 2"},
		{"a seed", func(m *runstore.Matrix) { m.Cells[2].Plays[0].Seed = 9 }, "seeds [1]"},
		{"a play more", func(m *runstore.Matrix) {
			m.Cells[0].Runs++
			m.Cells[0].Plays = append(m.Cells[0].Plays, play(3, checker.Invalid))
		}, "2 plays"},
		{"n/a", func(m *runstore.Matrix) { m.Cells[1].NA = "" }, "n/a"},
		{"a cell", func(m *runstore.Matrix) { m.Cells = m.Cells[:2] }, "only in the first"},
		// A race the story leaves open ({lock: any}): either verdict, as
		// long as each play met its expectation.
		{"an open race's verdict", func(m *runstore.Matrix) {
			m.Cells[0].Plays[1] = runstore.MatrixPlay{Seed: 2, Verdict: checker.Valid, AsExpected: true}
		}, ""},
		{"an open race not as expected", func(m *runstore.Matrix) {
			m.Cells[0].Plays[1] = runstore.MatrixPlay{Seed: 2, Verdict: checker.Unknown}
		}, "seed 2"},
		// A story that states the lock's answer alone ({lock: safe}:
		// failover's ensemble, whose lease race it leaves open): another
		// verdict from an answer it does not state is the race's; another
		// lock answer is a difference.
		{"a stated part: another verdict, the same lock answer", func(m *runstore.Matrix) {
			m.Cells[0].Plays[1].Verdict = checker.Valid
			m.Cells[0].Plays[1].Answers.FaultTolerance = checker.Valid
		}, ""},
		{"a stated part: another lock answer", func(m *runstore.Matrix) {
			m.Cells[0].Plays[1].Answers.Lock = checker.Invalid
		}, "lock invalid"},
	} {
		b := base()
		tt.change(&b)
		a := base()
		switch {
		case strings.HasPrefix(tt.name, "an open race"):
			a.Cells[0].Expect, b.Cells[0].Expect = "lock any", "lock any"
		case strings.HasPrefix(tt.name, "a stated part"):
			// Both matrices' plays safe by the lock, one answer left
			// open and broken in the first.
			for _, m := range []*runstore.Matrix{&a, &b} {
				m.Cells[0].Expect = "lock safe"
				for i := range m.Cells[0].Plays {
					p := &m.Cells[0].Plays[i]
					p.AsExpected = true
					if p.Answers.Lock == "" {
						p.Answers.Lock = checker.Valid
					}
				}
			}
			a.Cells[0].Plays[1].Answers.FaultTolerance = checker.Invalid
		}
		d := Compare(a, b, scripted)
		switch {
		case tt.want == "" && len(d) != 0:
			t.Errorf("%s: differences %v, want none", tt.name, d)
		case tt.want != "" && (len(d) != 1 || !strings.Contains(d[0], tt.want)):
			t.Errorf("%s: differences %v, want one with %q", tt.name, d, tt.want)
		}
	}
}
