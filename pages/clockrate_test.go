package pages

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/history/historytest"
)

// A clock rate draws the node's offset as a slope from the fault's start
// (marked with its rate) to its heal, where it steps back to where it
// was: the line rises by (rate-1) of the fault's length, then drops.
func TestClockRateDrawsGrowingOffset(t *testing.T) {
	b := &historytest.Builder{}
	b.Acquire("c1", evilKey, 0.1, 0.2, 2.1)
	b.Fault(0.5, history.Fault{ID: 1, Kind: "clock-rate", Phase: history.PhaseStart, Nodes: []string{"n3"}, Rate: 1.5})
	b.Fault(1.5, history.Fault{ID: 1, Kind: "clock-rate", Phase: history.PhaseStop, Nodes: []string{"n3"}, Rate: 1.5})
	b.Release("c1", evilKey, 1.9, 1.95)
	events := b.Events()
	res := checker.Check(events)
	sc := newScale(res, events)
	tl := buildTimeline(meta("clock-rate", ""), res, nil, resourceOps(history.Pair(events).Ops, res), sc)
	var marks []string
	for _, s := range tl.Over {
		if s.Class == "clock-jump" {
			marks = append(marks, s.Label)
		}
	}
	if len(marks) != 1 || marks[0] != "n3 ×1.5" {
		t.Errorf("clock markers %q, want one 'n3 ×1.5'", marks)
	}
	if len(tl.Paths) != 1 || tl.Paths[0].Class != "clock-offset" {
		t.Fatalf("clock offset paths %+v, want one", tl.Paths)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 0.01 }
	d := tl.Paths[0].D
	// M x0 y0, H to the start, L up to the heal, V back down, H to the end.
	m := regexp.MustCompile(`^M(\S+) (\S+)H(\S+)L(\S+) (\S+)V(\S+)H(\S+)$`).FindStringSubmatch(d)
	if m == nil {
		t.Fatalf("clock offset path %q, want a flat line, a slope, a step back and a flat line", d)
	}
	num := func(i int) float64 {
		v, err := strconv.ParseFloat(m[i], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if !near(num(3), sc.x(historytest.Sec(0.5))) || !near(num(4), sc.x(historytest.Sec(1.5))) {
		t.Errorf("slope from x=%v to x=%v, want from 0.5 s to 1.5 s", num(3), num(4))
	}
	zero, top := num(2), num(5)
	if top >= zero || num(6) != zero {
		t.Errorf("slope rises to y=%v from y=%v and steps back to y=%v: want up (smaller y) and back to %v", top, zero, num(6), zero)
	}
	if want := "+500ms"; !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(tl.Paths[0].Title) {
		t.Errorf("path title %q, want its scale, the largest offset %s (0.5 × 1 s)", tl.Paths[0].Title, want)
	}
}
