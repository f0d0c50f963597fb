package pages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"splitbrain/checker"
	"splitbrain/runstore"
)

// A sweep's page plots each lock's share of broken plays against the
// value, one line per lock, the marked value as a dashed line, each point
// linked to its first broken play; the data beside it is tallied.
func TestWriteSweep(t *testing.T) {
	dir := t.TempDir()
	play := func(lock checker.Verdict, run string) runstore.MatrixPlay {
		return runstore.MatrixPlay{Seed: 1, Verdict: lock, Answers: checker.Answers{Lock: lock}, Dir: filepath.Join(dir, run)}
	}
	s := runstore.Sweep{
		Story: "clock-rate-drift", Param: "rate", Axis: "error (%)", Log: true, Runs: 2, Seed: 5,
		Values: []string{"+0.5%", "+5%"}, X: []float64{0.5, 5},
		Mark:  &runstore.SweepMark{Value: "+1%", X: 1, Label: "drift allowance"},
		Locks: []string{"redlock", "redsync"},
		Points: []runstore.SweepPoint{
			{Lock: "redlock", Value: "+0.5%", X: 0.5, Plays: []runstore.MatrixPlay{play(checker.Valid, "a"), play(checker.Valid, "b")}},
			{Lock: "redsync", Value: "+0.5%", X: 0.5, NA: "does not fit"},
			{Lock: "redlock", Value: "+5%", X: 5, Plays: []runstore.MatrixPlay{play(checker.Valid, "c"), play(checker.Invalid, "d")}},
			{Lock: "redsync", Value: "+5%", X: 5, Plays: []runstore.MatrixPlay{play(checker.Invalid, "e"), play(checker.Unknown, "f")}},
		},
	}
	if err := WriteSweep(dir, s); err != nil {
		t.Fatal(err)
	}
	back, err := runstore.ReadSweep(dir, "clock-rate-drift")
	if err != nil {
		t.Fatal(err)
	}
	p := back.Points[2]
	if p.Runs != 2 || p.Invalid != 1 || p.Rate != 0.5 || p.Interval[0] <= 0 || p.Interval[1] >= 1 {
		t.Errorf("redlock at +5%%: %+v, want 1 of 2 broken with its interval", p)
	}
	if q := back.Points[3]; q.Unknown != 1 || q.Rate != 1 {
		t.Errorf("redsync at +5%%: %+v, want 1 of 1 decided broken and 1 unknown", q)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sweep-clock-rate-drift.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`class="series"`, `class="mark"`, "drift allowance", `href="d/report.html"`, `href="e/report.html"`,
		"1/2", "1/1, 1 unknown", ">n/a<", "(log scale)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<polyline class="series"`); n != 2 {
		t.Errorf("%d lines, want one per lock", n)
	}
}
