package pages

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"splitbrain/runstore"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/history/historytest"
)

const evilKey = `<script>alert(1)</script>`

// clockJump is the clock-jump counterexample on a lock whose key name would
// be markup if it were not escaped.
func clockJump() []history.Event {
	b := &historytest.Builder{}
	b.Fault(0, historytest.Cut(1, history.PhaseStart, "c1", "n4", "n5"))
	b.Acquire("c1", evilKey, 0.1, 0.2, 2.1)
	b.Fault(0.5, history.Fault{ID: 2, Kind: "clock-jump", Phase: history.PhaseStart, Nodes: []string{"n3"}, Offset: int64(5 * time.Second)})
	b.Fault(0.7, historytest.Cut(1, history.PhaseStop, "c1", "n4", "n5"))
	b.Fault(0.8, historytest.Cut(3, history.PhaseStart, "c2", "n1", "n2"))
	b.Add("c3", history.Invoke, history.Acquire, evilKey, 0.85)
	b.Add("c3", history.Fail, history.Acquire, evilKey, 0.9, func(e *history.Event) { e.Err = "<b>quorum</b> not reached" })
	b.Acquire("c2", evilKey, 1.0, 1.1, 3.0)
	b.Fault(1.2, historytest.Cut(3, history.PhaseStop, "c2", "n1", "n2"))
	b.Release("c1", evilKey, 1.9, 1.95)
	b.Release("c2", evilKey, 2.5, 2.6)
	return b.Events()
}

func meta(scenario, expect string) runstore.Meta {
	return runstore.Meta{
		Scenario:    scenario,
		Description: "Kleppmann's clock jump <i>",
		Lock:        "redlock",
		Seed:        42,
		Nodes:       []string{"n1", "n2", "n3", "n4", "n5"},
		Clients:     []string{"c1", "c2", "c3"},
		TTL:         2 * time.Second,
		Started:     time.Date(2026, 11, 22, 7, 30, 12, 123e6, time.UTC),
		Duration:    2600 * time.Millisecond,
		Expect:      expect,
		Command:     "splitbrain run " + scenario + " --seed 42",
		Backend:     "local",
		Belief:      "at the validity deadline <u>",
	}
}

// writeHistory stores events the way the runner's recorder does.
func writeHistory(t *testing.T, dir string, events []history.Event) {
	t.Helper()
	var sb strings.Builder
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		sb.Write(b)
		sb.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, runstore.HistoryFile), []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

func TestWriteViolatingReport(t *testing.T) {
	store := t.TempDir()
	dir, err := runstore.NewRunDir(store, "clock-jump", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	events := clockJump()
	writeHistory(t, dir, events)
	res := checker.Check(events)
	if res.Verdict != checker.Invalid {
		t.Fatalf("fixture: verdict %s (%s)", res.Verdict, res.Reason)
	}
	m := meta("clock-jump", "violation")
	if err := Write(dir, m, events, res); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{runstore.HistoryFile, runstore.ResultFile, runstore.ReportFile, runstore.PorcupineFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s missing: %v", name, err)
		}
	}
	assertNoTemp(t, dir)

	rec, err := runstore.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Meta.Scenario != m.Scenario || rec.Meta.Seed != 42 || rec.Meta.TTL != m.TTL || !rec.Meta.Started.Equal(m.Started) ||
		rec.Meta.Command != m.Command || len(rec.Meta.Nodes) != 5 {
		t.Errorf("meta did not round-trip: %+v", rec.Meta)
	}
	if rec.Result.Verdict != checker.Invalid || len(rec.Result.Violations) != 1 ||
		rec.Result.Violations[0].Text != res.Violations[0].Text || rec.Result.Violations[0].From != historytest.Sec(1.1) {
		t.Errorf("result did not round-trip: %+v", rec.Result)
	}
	if !rec.AsExpected || rec.Files["porcupine"] != runstore.PorcupineFile || rec.Files["history"] != runstore.HistoryFile {
		t.Errorf("record = as_expected %v, files %v", rec.AsExpected, rec.Files)
	}

	page := readFile(t, filepath.Join(dir, runstore.ReportFile))
	for _, want := range []string{
		`<header class="run-header verdict-invalid">`,
		`<div class="verdict" id="verdict">invalid</div>`,
		`<rect class="overlap z"`,
		`<rect class="belief z"`,
		`<g class="clock-jump z"`,
		`>n3 &#43;5s</text>`,
		`<rect class="fault-band fault-cut z"`,
		`cut c1→n4,n5`,
		`attempt attempt-fail`,
		`href="porcupine.html"`,
		`href="history.jsonl"`,
		`href="result.json"`,
		`splitbrain run clock-jump --seed 42`,
		`both believed they held lock`,
		`belief ends: at the validity deadline &lt;u&gt;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	// Text from the history and the scenario is escaped, everywhere it
	// appears: violation text, tooltips, tables. The page's one script is
	// its own.
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("report has %d <script tags, want only its own", n)
	}
	for _, bad := range []string{"<script>alert", "<b>quorum", "<i>", "<u>"} {
		if strings.Contains(page, bad) {
			t.Errorf("report contains unescaped %q", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("escaped key name not found in the report")
	}
	// Self-contained: nothing is fetched.
	for _, bad := range []string{"https://", "src=", "<link", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("report refers to an outside resource: %q", bad)
		}
	}
	viz := readFile(t, filepath.Join(dir, runstore.PorcupineFile))
	if !strings.Contains(viz, "clock-jump n3 +5s") || strings.Contains(viz, evilKey) {
		t.Error("porcupine.html lacks the fault annotation or carries the key unescaped")
	}
}

func TestWriteValidReport(t *testing.T) {
	dir := t.TempDir()
	events := (&historytest.Builder{}).
		Acquire("c1", "k", 0.1, 0.2, 1.0).
		Add("c2", history.Invoke, history.Acquire, "k", 0.5).
		Add("c2", history.Fail, history.Acquire, "k", 0.6).
		Acquire("c2", "k", 1.2, 1.3, 2.0).
		Release("c2", "k", 1.5, 1.6).Events()
	writeHistory(t, dir, events)
	// A stale visualization from an earlier check of this run must go.
	if err := os.WriteFile(filepath.Join(dir, runstore.PorcupineFile), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := checker.Check(events)
	if res.Verdict != checker.Valid {
		t.Fatalf("fixture: verdict %s", res.Verdict)
	}
	if err := Write(dir, meta("clock-jump-control", "safe"), events, res); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, runstore.PorcupineFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("porcupine.html exists for a valid run: %v", err)
	}
	assertNoTemp(t, dir)
	page := readFile(t, filepath.Join(dir, runstore.ReportFile))
	for _, want := range []string{`<header class="run-header verdict-valid">`, `<div class="verdict" id="verdict">valid</div>`, `<rect class="belief z"`, "as expected"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	for _, bad := range []string{`class="overlap"`, `href="porcupine.html"`, "What went wrong"} {
		if strings.Contains(page, bad) {
			t.Errorf("valid report contains %s", bad)
		}
	}
	rec, err := runstore.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Result.Verdict != checker.Valid || !rec.AsExpected || len(rec.Result.Keys) != 1 ||
		rec.Result.Keys[0].Acquired != 2 || rec.Result.Keys[0].Failed != 1 || len(rec.Result.Keys[0].Beliefs) != 0 || len(rec.Result.Keys[0].Attempts) != 0 {
		t.Errorf("record = %+v", rec)
	}
}

func TestWriteUnknownReport(t *testing.T) {
	dir := t.TempDir()
	res := checker.Check(nil)
	if err := Write(dir, meta("empty", "safe"), nil, res); err != nil {
		t.Fatal(err)
	}
	page := readFile(t, filepath.Join(dir, runstore.ReportFile))
	for _, want := range []string{`<header class="run-header verdict-unknown">`, "no operations recorded", "not as expected"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	rec, err := runstore.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.AsExpected || rec.Files["history"] != "" {
		t.Errorf("record = %+v; an unknown is never as expected, and there is no history file", rec)
	}
}

func TestTimelineIsToScale(t *testing.T) {
	events := clockJump()
	res := checker.Check(events)
	sc := newScale(res, events)
	tl := buildTimeline(meta("clock-jump", ""), res, nil, resourceOps(history.Pair(events).Ops, res), sc)
	byClass := func(shapes []shape, class string) []shape {
		var out []shape
		for _, s := range shapes {
			if s.Class == class {
				out = append(out, s)
			}
		}
		return out
	}
	beliefs := byClass(tl.Under, "belief")
	if len(beliefs) != 2 {
		t.Fatalf("%d belief bars, want 2", len(beliefs))
	}
	// c1 believed 0.2–1.9 s, c2 1.1–2.5 s, on a 3.0 s axis (c2's lease deadline).
	perSec := plotWidth / 3.0
	near := func(got, want float64) bool { return math.Abs(got-want) < 0.01 }
	if !near(beliefs[0].X, plotLeft+0.2*perSec) || !near(beliefs[0].W, 1.7*perSec) ||
		!near(beliefs[1].X, plotLeft+1.1*perSec) || !near(beliefs[1].W, 1.4*perSec) {
		t.Errorf("belief bars not to scale: %+v", beliefs)
	}
	if beliefs[0].A != historytest.Sec(0.2) || beliefs[0].B != historytest.Sec(1.9) {
		t.Errorf("belief bar carries times %d–%d, want 0.2 s–1.9 s for the zoom", beliefs[0].A, beliefs[0].B)
	}
	if len(tl.Overlaps) != 2 {
		t.Fatalf("%d overlap rects, want one per client", len(tl.Overlaps))
	}
	for _, o := range tl.Overlaps {
		if !near(o.X, plotLeft+1.1*perSec) || !near(o.W, 0.8*perSec) {
			t.Errorf("overlap rect %+v, want 1.1–1.9 s", o)
		}
	}
	lanes := map[string]bool{}
	for _, l := range tl.Lanes {
		lanes[l.Label] = true
	}
	for _, want := range []string{"c1", "c2", "c3", "n1", "n5", "network"} {
		if !lanes[want] {
			t.Errorf("no lane %s", want)
		}
	}
	clock := byClass(tl.Over, "clock-jump")
	if len(clock) != 1 || clock[0].Label != "n3 +5s" || !near(clock[0].X, plotLeft+0.5*perSec) {
		t.Errorf("clock markers %+v, want one 'n3 +5s' at 0.5 s", clock)
	}
	// The clock offset is a step line: 0, then +5s from 0.5 s (never
	// healed in this history) to the end.
	if len(tl.Paths) != 1 || tl.Paths[0].Class != "clock-offset" || strings.Count(tl.Paths[0].D, "V") != 1 {
		t.Errorf("clock offset paths %+v, want one step", tl.Paths)
	}
	if len(tl.Bands) != 2 {
		t.Errorf("%d cut bands, want 2", len(tl.Bands))
	}
	// The page opens on the violation: c1's acquire to the overlap's end.
	if !tl.Zoomed || tl.ViewA > historytest.Sec(0.1) || tl.ViewB < historytest.Sec(1.9) || tl.ViewB >= sc.span {
		t.Errorf("initial view %d–%d (zoomed %v), want around 0.1–1.9 s", tl.ViewA, tl.ViewB, tl.Zoomed)
	}
	if tl.Note != "" {
		t.Errorf("a short run is thinned out: %s", tl.Note)
	}
}

// A run that was shrunk links the shrunk scenario and a run of it from its
// report, and keeps the link in result.json; one not shrunk has no link.
func TestReportLinksShrunkScenario(t *testing.T) {
	events := clockJump()
	res := checker.Check(events)
	for _, tc := range []struct {
		name   string
		shrunk *runstore.Shrunk
		want   []string
	}{
		{"shrunk", &runstore.Shrunk{Scenario: "shrink/clock-jump-shrunk.yaml", Report: "shrink/clock-jump-shrunk/x/report.html", Summary: "1 fault, 2 clients <b>"},
			[]string{`shrunk to <a href="shrink/clock-jump-shrunk.yaml">shrink/clock-jump-shrunk.yaml</a>`,
				`(<a href="shrink/clock-jump-shrunk/x/report.html">its report</a>)`, "1 fault, 2 clients &lt;b&gt;"}},
		{"no run of it violated", &runstore.Shrunk{Scenario: "shrink/s.yaml", Summary: "0 of 10"},
			[]string{`shrunk to <a href="shrink/s.yaml">shrink/s.yaml</a>: 0 of 10`}},
		{"not shrunk", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeHistory(t, dir, events)
			m := meta("clock-jump", "violation")
			m.Shrunk = tc.shrunk
			if err := Write(dir, m, events, res); err != nil {
				t.Fatal(err)
			}
			page := readFile(t, filepath.Join(dir, runstore.ReportFile))
			for _, want := range tc.want {
				if !strings.Contains(page, want) {
					t.Errorf("report lacks %s", want)
				}
			}
			if tc.shrunk == nil && strings.Contains(page, `class="shrunk"`) {
				t.Error("a run not shrunk links a shrunk scenario")
			}
			back, err := runstore.ReadMeta(dir)
			if err != nil {
				t.Fatal(err)
			}
			if (back.Shrunk == nil) != (tc.shrunk == nil) || (back.Shrunk != nil && *back.Shrunk != *tc.shrunk) {
				t.Errorf("result.json keeps %+v, want %+v", back.Shrunk, tc.shrunk)
			}
		})
	}
}
