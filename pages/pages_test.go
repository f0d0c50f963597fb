package pages

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"splitbrain/runstore"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/history/historytest"
)

// Hostile text in every place a history or a scenario file can put text.
const (
	evilScenario = `<script>alert("scenario")</script>'"`
	evilLockKey  = `"><script>alert('key')</script>`
	evilErr      = `<script>alert("err")</script> it's "quoted"`
	evilKind     = `<img src=x onerror=alert(1)>`
)

// evilHistory is the clock-jump counterexample with hostile keys, errors,
// fault kinds and resource values.
func evilHistory() []history.Event {
	b := &historytest.Builder{}
	b.Fault(0, historytest.Cut(1, history.PhaseStart, "c1", "n4", "n5"))
	b.Acquire("c1", evilLockKey, 0.1, 0.2, 2.1)
	b.Fault(0.5, historytest.ClockJump(2, history.PhaseStart, "n3", 5*time.Second))
	b.Fault(0.6, history.Fault{ID: 4, Kind: evilKind, Phase: history.PhaseStart, Nodes: []string{"n2"}, Detail: evilErr})
	b.Fault(0.7, historytest.Cut(1, history.PhaseStop, "c1", "n4", "n5"))
	b.Add("c3", history.Invoke, history.Acquire, evilLockKey, 0.85)
	b.Add("c3", history.Fail, history.Acquire, evilLockKey, 0.9, historytest.Err(evilErr))
	b.Acquire("c2", evilLockKey, 1.0, 1.1, 3.0)
	b.Add("c2", history.Invoke, history.Write, evilLockKey, 1.2, historytest.Value(`</script><script>alert("v")</script>`))
	b.Add("c2", history.Fail, history.Write, evilLockKey, 1.25, historytest.Err(evilErr))
	b.Fault(1.3, history.Fault{ID: 4, Kind: evilKind, Phase: history.PhaseStop, Nodes: []string{"n2"}, Detail: evilErr})
	b.Release("c1", evilLockKey, 1.9, 1.95)
	b.Release("c2", evilLockKey, 2.5, 2.6)
	return b.Events()
}

func evilMeta() runstore.Meta {
	m := meta(evilScenario, "violation")
	m.Description = evilErr
	m.Lock = evilKind
	m.Command = "splitbrain run '" + evilScenario + "' --seed 42"
	return m
}

// assertEscaped checks a page for hostile markup: its only script is its
// own, and the hostile strings appear only escaped.
func assertEscaped(t *testing.T, page string, ownScripts int) {
	t.Helper()
	if n := strings.Count(page, "<script"); n != ownScripts {
		t.Errorf("page has %d <script tags, want %d (its own)", n, ownScripts)
	}
	for _, bad := range []string{"<script>alert", "<img", `"><script`, "</script><script>alert"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains unescaped %q", bad)
		}
	}
}

func TestReportEscapesHistoryAndScenarioText(t *testing.T) {
	dir := t.TempDir()
	events := evilHistory()
	res := checker.Check(events)
	if res.Verdict != checker.Invalid {
		t.Fatalf("fixture: verdict %s (%s)", res.Verdict, res.Reason)
	}
	if err := Write(dir, evilMeta(), events, res); err != nil {
		t.Fatal(err)
	}
	page := readFile(t, filepath.Join(dir, runstore.ReportFile))
	assertEscaped(t, page, 1)
	for _, want := range []string{
		"&lt;script&gt;alert(&#34;scenario&#34;)&lt;/script&gt;&#39;&#34;", // the scenario name, as text
		"&lt;script&gt;alert(&#39;key&#39;)&lt;/script&gt;",                // the key
		"&lt;script&gt;alert(&#34;err&#34;)&lt;/script&gt; it&#39;s",       // the error
		"&lt;img src=x onerror=alert(1)&gt;",                               // the fault kind
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks the escaped text %s", want)
		}
	}
	// A fault kind becomes a class only through cssIdent.
	for _, m := range regexp.MustCompile(`class="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !regexp.MustCompile(`^[a-z0-9 -]*$`).MatchString(m[1]) {
			t.Errorf("class attribute %q holds more than [a-z0-9-]", m[1])
		}
	}
}

// A history with resource operations and node faults: c1 is paused in its
// critical section (Kleppmann's figure 1), its lease runs out, c2 takes
// the lock and writes, c1 resumes and writes with its old token, which the
// storage accepts; later a fenced write is rejected. n2 is killed and
// restarted, n3 paused.
func pauseHistory() []history.Event {
	tok := func(v int64) historytest.Mod { return func(e *history.Event) { e.Token = &v } }
	num := func(v int) historytest.Mod { return func(e *history.Event) { e.Value = history.MustValue(v) } }
	// The storage's order of applied writes, as it acknowledges them.
	ack := func(seq int64) historytest.Mod {
		return func(e *history.Event) { e.Value = history.MustValue(history.Ack{Seq: seq}) }
	}
	b := &historytest.Builder{}
	b.Add(history.ProcessInit, history.Invoke, history.Write, "lock", 0, num(0))
	b.Add(history.ProcessInit, history.OK, history.Write, "lock", 0.01, ack(1))
	b.Add("c1", history.Invoke, history.Acquire, "lock", 0.1)
	b.Add("c1", history.OK, history.Acquire, "lock", 0.15, historytest.Deadline(1.0), historytest.Nodes("n1", "n2", "n3"), tok(1))
	b.Add("c1", history.Invoke, history.Read, "lock", 0.2)
	b.Add("c1", history.OK, history.Read, "lock", 0.21, num(0))
	b.Fault(0.25, history.Fault{ID: 1, Kind: "pause", Phase: history.PhaseStart, Nodes: []string{"c1"}, Detail: "c1 paused (GC)"})
	b.Fault(0.3, history.Fault{ID: 2, Kind: "kill", Phase: history.PhaseStart, Nodes: []string{"n2"}})
	b.Fault(0.8, history.Fault{ID: 2, Kind: "kill", Phase: history.PhaseStop, Nodes: []string{"n2"}})
	b.Fault(0.9, history.Fault{ID: 3, Kind: "pause", Phase: history.PhaseStart, Nodes: []string{"n3"}})
	b.Add("c2", history.Invoke, history.Acquire, "lock", 1.1)
	b.Add("c2", history.OK, history.Acquire, "lock", 1.15, historytest.Deadline(2.0), historytest.Nodes("n1", "n4", "n5"), tok(2))
	b.Add("c2", history.Invoke, history.Read, "lock", 1.2)
	b.Add("c2", history.OK, history.Read, "lock", 1.21, num(0))
	b.Add("c2", history.Invoke, history.Write, "lock", 1.3, num(1), tok(2))
	b.Add("c2", history.OK, history.Write, "lock", 1.31, ack(2), tok(2))
	b.Fault(1.4, history.Fault{ID: 3, Kind: "pause", Phase: history.PhaseStop, Nodes: []string{"n3"}})
	b.Fault(1.5, history.Fault{ID: 1, Kind: "pause", Phase: history.PhaseStop, Nodes: []string{"c1"}})
	b.Add("c1", history.Invoke, history.Write, "lock", 1.55, num(1), tok(1))
	b.Add("c1", history.OK, history.Write, "lock", 1.56, ack(3), tok(1))
	b.Add("c1", history.Invoke, history.Write, "lock", 1.6, num(2), tok(1))
	b.Add("c1", history.Fail, history.Write, "lock", 1.61, tok(1), historytest.Err("stale token 1 < 2"))
	b.Release("c2", "lock", 1.7, 1.72)
	return b.Events()
}

func TestReportShowsResourceAndNodeFaults(t *testing.T) {
	dir := t.TempDir()
	events := pauseHistory()
	res := checker.Check(events)
	if err := Write(dir, meta("pause-critical-section", "violation"), events, res); err != nil {
		t.Fatal(err)
	}
	page := readFile(t, filepath.Join(dir, runstore.ReportFile))
	for _, want := range []string{
		// In words: the stale token accepted, the write outside the
		// lease, the fence that held.
		// The stale token in the checker's words: one judge.
		`the storage applied c1&#39;s write of 1 (token 1, read at 0.210s, written at 1.56s) after c2&#39;s write of 1 (token 2, read at 1.21s, written at 1.31s) (seq 2, then 3): a stale token was accepted`,
		`the storage rejected c1&#39;s write of 2 to &#34;lock&#34; with token 1: stale token 1 &lt; 2`,
		"4 write (3 ok, 1 rejected); 2 read (2 ok)",
		// On the timeline: ticks for writes, the rejected one marked,
		// the pause on c1's lane, the kill and pause on node lanes.
		`class="res-tick res-write res-ok z"`,
		`class="res-tick res-write res-ok res-bad z"`,
		`class="res-tick res-write res-rejected z"`,
		`class="res-tick res-read res-ok z"`,
		`class="fault-node fault-paused fault-pause fault-on-client z"`,
		`class="fault-node fault-down fault-kill z"`,
		`class="fault-node fault-paused fault-pause z"`,
		`class="finding-bad"`, `class="finding-good"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	// The stale write took effect 0.56 s after c1's lease ran out at 1.0 s:
	// the finding that marks it bad says so.
	ops := resourceOps(history.Pair(events).Ops, res)
	var bad []string
	for _, r := range ops {
		if r.bad {
			bad = append(bad, r.finding)
		}
	}
	if len(bad) != 1 || !strings.Contains(bad[0], "a stale token was accepted") {
		t.Errorf("bad findings %q, want the one stale token", bad)
	}
	var late string
	for _, w := range res.OutsideLease {
		if w.Index == ops[4].Invoke.Index {
			late = w.Text
		}
	}
	if !strings.Contains(late, "took effect at 1.56s although c1's belief in \"lock\" had ended at 1.00s (validity deadline)") {
		t.Errorf("the checker's finding on c1's late write = %q", late)
	}
}

func TestPairOps(t *testing.T) {
	events := pauseHistory()
	ops := history.Pair(events).Ops
	if len(ops) != 9 {
		t.Fatalf("%d ops, want 9 (nemesis events are not ops)", len(ops))
	}
	for _, o := range ops {
		if !o.Done() || o.Invoke.Process != o.Completion.Process || o.Invoke.F != o.Completion.F || o.Completion.Time < o.Invoke.Time {
			t.Errorf("op %+v paired wrongly", o)
		}
	}
	pending := history.Pair(events[:3]).Ops
	if len(pending) != 2 || pending[1].Done() {
		t.Errorf("a read without completion: %+v, want it pending", pending)
	}
}

// writeRun makes a run folder in store the way the runner does and writes
// its result.
func writeRun(t *testing.T, store, scenario string, at time.Time, events []history.Event, m runstore.Meta) string {
	t.Helper()
	dir, err := runstore.NewRunDir(store, scenario, at)
	if err != nil {
		t.Fatal(err)
	}
	writeHistory(t, dir, events)
	m.Started = at
	if err := Write(dir, m, events, checker.Check(events)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func validHistory() []history.Event {
	return (&historytest.Builder{}).Acquire("c1", "k", 0.1, 0.2, 1.0).Release("c1", "k", 0.5, 0.6).Events()
}

func TestIndex(t *testing.T) {
	store := t.TempDir()
	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)
	writeRun(t, store, "clock-jump-control", t0, validHistory(), meta("clock-jump-control", "safe"))
	bad := writeRun(t, store, "clock-jump", t0.Add(time.Minute), clockJump(), meta("clock-jump", "violation"))
	// A run still going: a history, no result yet.
	running, err := runstore.NewRunDir(store, "clock-jump", t0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	writeHistory(t, running, validHistory())
	// Not runs: an empty folder, a symlink out of the store.
	if err := os.MkdirAll(filepath.Join(store, "clock-jump", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Mkdir(filepath.Join(outside, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "x", runstore.ResultFile), []byte(`{"meta":{"scenario":"outside"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(store, "escape")); err != nil {
		t.Fatal(err)
	}
	// A run whose result names a hostile scenario.
	writeRun(t, store, "hostile", t0.Add(30*time.Second), validHistory(), evilMeta())
	if err := WriteIndex(store); err != nil {
		t.Fatal(err)
	}

	idx, err := runstore.ReadIndex(store)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range idx.Runs {
		got = append(got, e.Dir[strings.Index(e.Dir, "/")+1:]+" "+e.Verdict)
	}
	want := []string{
		"20261122T070200.000Z none",
		"20261122T070100.000Z invalid",
		"20261122T070030.000Z valid",
		"20261122T070000.000Z valid",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("index runs, newest first:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if e := idx.Runs[1]; e.Scenario != "clock-jump" || !e.AsExpected || e.Violations != 1 || e.Seed != 42 || !e.HasReport {
		t.Errorf("invalid run entry %+v", e)
	}

	page := readFile(t, filepath.Join(store, runstore.IndexFile))
	assertEscaped(t, page, 1)
	for _, want := range []string{
		`<tr class="run cell-invalid" data-verdict="invalid" data-scenario="clock-jump" data-expected="yes">`,
		`<tr class="run cell-none" data-verdict="none"`,
		`href="./clock-jump/20261122T070100.000Z/report.html"`,
		`<option value="clock-jump-control">`,
		`<select id="filter-verdict">`,
		"&lt;script&gt;alert(&#34;scenario&#34;)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %s", want)
		}
	}
	if strings.Contains(page, "outside") {
		t.Error("the index followed a symlink out of the store")
	}

	// Unchanged results are taken from index.json, not re-read: a result
	// rewritten behind the index's back with the same size and time
	// keeps its entry; a real change is picked up.
	path := filepath.Join(bad, runstore.ResultFile)
	fi, _ := os.Stat(path)
	orig := readFile(t, path)
	forged := strings.Replace(orig, `"verdict": "invalid"`, `"verdict": "valid!!"`, 1)
	if len(forged) != len(orig) {
		t.Fatal("fixture: forged result changes size")
	}
	if err := os.WriteFile(path, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	idx, err = runstore.BuildIndex(store)
	if err != nil {
		t.Fatal(err)
	}
	if idx.Runs[1].Verdict != "invalid" {
		t.Errorf("cached entry not reused: %s", idx.Runs[1].Verdict)
	}
	if err := os.Chtimes(path, fi.ModTime().Add(time.Second), fi.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if idx, err = runstore.BuildIndex(store); err != nil || idx.Runs[1].Verdict != "unknown" {
		t.Errorf("changed result not re-read: %+v, %v (an unrecognised verdict shows as unknown)", idx.Runs[1], err)
	}
}

func TestWriteRegeneratesTheIndexOfItsStore(t *testing.T) {
	store := t.TempDir()
	writeRun(t, store, "clock-jump", time.Now(), clockJump(), meta("clock-jump", "violation"))
	if page := readFile(t, filepath.Join(store, runstore.IndexFile)); !strings.Contains(page, `data-verdict="invalid"`) {
		t.Error("index.html does not list the run Write just stored")
	}
	// A folder outside any store gets no index next to it.
	dir := t.TempDir()
	if err := Write(dir, meta("x", ""), validHistory(), checker.Check(validHistory())); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(dir)), runstore.IndexFile)); err == nil {
		t.Error("Write put an index.html two levels above a folder that is not in a store")
	}
}

func TestMatrix(t *testing.T) {
	store := t.TempDir()
	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)
	cj := writeRun(t, store, "clock-jump", t0, clockJump(), meta("clock-jump", "violation"))
	ctl := writeRun(t, store, "clock-jump-control", t0.Add(time.Second), validHistory(), meta("clock-jump-control", "safe"))
	lockBroken := checker.Answers{Lock: checker.Invalid}
	m := runstore.Matrix{
		Title: "Redlock safety", Seed: 42, Started: t0, Wall: runstore.Duration(272 * time.Second), Command: "splitbrain suite --seed 42", Runs: 2, Seeds: []int64{42, 4242},
		Locks:    []string{"redlock", "redlock-fenced"},
		Families: []string{"clock"},
		Cells: []runstore.MatrixCell{
			{Scenario: "clock-jump", Lock: "redlock", Family: "clock", Expect: "violation", Plays: []runstore.MatrixPlay{
				{Verdict: checker.Invalid, Answers: lockBroken, AsExpected: true, Seed: 42, Dir: cj},
				{Verdict: checker.Invalid, Answers: lockBroken, AsExpected: true, Seed: 4242, Dir: cj},
			}},
			{Scenario: "clock-jump-control", Lock: "redlock", Family: "clock", Expect: "safe", Plays: []runstore.MatrixPlay{
				{Verdict: checker.Valid, Answers: checker.Answers{Lock: checker.Valid, DeadlockFreedom: checker.Valid, FaultTolerance: checker.Invalid}, AsExpected: true, Seed: 42, Dir: ctl,
					Availability: &runstore.PlayAvailability{Attempts: 4, Granted: 2, Longest: int64(1200 * time.Millisecond)}},
				{Verdict: "bogus", Answers: checker.Answers{Lock: checker.Valid, DeadlockFreedom: checker.Valid, FaultTolerance: checker.Valid}, Seed: 43, Dir: ctl},
			}},
			{Scenario: "clock-jump-control", Lock: "redlock-fenced", Family: "clock", NA: "needs <b>tokens</b>"},
			{Scenario: "pause", Lock: "redlock", Family: "process pause", Expect: "safe", Plays: []runstore.MatrixPlay{
				{Verdict: checker.Valid, Answers: checker.Answers{Lock: checker.Valid, DeadlockFreedom: checker.Valid, FaultTolerance: checker.Valid}, AsExpected: true, Seed: 42, Dir: ctl,
					Slowed: "played 2× slower, at a TTL of 2s"}}},
			{Scenario: evilScenario, Lock: evilLockKey, Plays: []runstore.MatrixPlay{{Verdict: checker.Unknown, Reason: evilErr, Dir: ctl}}},
		},
	}
	if err := WriteMatrix(store, m); err != nil {
		t.Fatal(err)
	}
	back, err := runstore.ReadMatrix(store)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Scenarios) != 4 || len(back.Locks) != 3 || back.Locks[2] != evilLockKey {
		t.Errorf("rows %q, columns %q", back.Scenarios, back.Locks)
	}
	rel, _ := filepath.Rel(store, cj)
	if p := back.Cells[0].Plays[0]; p.Dir != filepath.ToSlash(rel) || p.Report != filepath.ToSlash(rel)+"/report.html" {
		t.Errorf("play dir %q report %q, want them relative to the matrix", p.Dir, p.Report)
	}
	if c := back.Cells[0]; c.Runs != 2 || c.Invalid != 2 || c.LockBroken != 2 || c.Flaky || c.FirstFailing != c.Plays[0].Report {
		t.Errorf("clock-jump cell %+v, want 2/2 invalid, the lock broken twice, its first play linked", c)
	}
	if c := back.Cells[1]; c.Plays[1].Verdict != checker.Unknown || c.Unknown != 1 || c.Met != 1 {
		t.Errorf("an unrecognised verdict is stored as %q (cell %+v), want unknown", c.Plays[1].Verdict, c)
	}
	page := readFile(t, filepath.Join(store, runstore.MatrixFile))
	assertEscaped(t, page, 1) // the fault picker's
	if n := strings.Count(page, `data-keeps="1"`); n != 1 {
		t.Errorf("%d cells keep every promise, want 1 (pause against redlock)", n)
	}

	for _, want := range []string{
		`<td class="cell cell-rated"`,
		`href="./` + filepath.ToSlash(rel) + `/report.html"`,
		`<td class="cell cell-none muted" title="not played">—</td>`, // clock-jump has no fenced run
		`title="n/a: needs &lt;b&gt;tokens&lt;/b&gt;"`,
		"4 cells played (6 plays, 4 met their expectation) · 1 n/a",
		" · 4m32s</p>",      // the wall time as a duration, not nanoseconds
		"<code>4242</code>", // the play seeds
		`data-group="0"> clock</label>`,
		"&lt;script&gt;alert(&#39;key&#39;)",
		// The per-lock summary: redlock broke its promise under
		// clock-jump and kept it under the others; it kept every promise
		// under the pause alone, so the picker may pick it there only.
		`<th scope="row" class="sum-lock">redlock</th>`,
		`<span class="kept r3">2/3</span><span class="rows" title="broken by clock-jump">broken by clock-jump</span>`,
		`title="redlock: safety kept in 2 of 3 (broken by clock-jump); deadlock freedom 2/2; fault tolerance 1/2 (broken by clock-jump-control); granted 50% of attempts in its worst row (clock-jump-control), unavailable up to 1.20s (clock-jump-control)`,
		`data-keeps="1"`,
		`<span class="bar live r5">1/2</span>`,
		"; expected safe; played 2× slower, at a TTL of 2s",             // a slowed play says so on hover
		`<span class="slowed" aria-label="played slowed down">⧗</span>`, // and is marked
		// The hostile cell's one play is unknown: its lock bar is
		// neither green nor red.
		`<span class="bar lock r-unknown">0/1<span class="unk"> ?</span></span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("matrix.html lacks %s", want)
		}
	}
	if err := WriteIndex(store); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(readFile(t, filepath.Join(store, runstore.IndexFile)), `href="matrix.html"`) {
		t.Error("the index does not link the matrix")
	}
	if err := WriteMatrix(store, runstore.Matrix{Cells: []runstore.MatrixCell{{Scenario: "a", Lock: "b", Plays: []runstore.MatrixPlay{{Dir: "relative/run"}}}}}); err == nil {
		t.Error("a relative run folder under an absolute matrix folder was accepted")
	}
}

func TestRelHref(t *testing.T) {
	for in, want := range map[string]string{
		"clock-jump/20261122T070000.000Z": "./clock-jump/20261122T070000.000Z",
		"a#b/c?d":                         "./a%23b/c%3Fd",
		"x:y/z":                           "./x:y/z",
		"../runs/a":                       "./../runs/a",
	} {
		if got := relHref(in); got != want {
			t.Errorf("relHref(%q) = %q, want %q", in, got, want)
		}
	}
}

// The harness's initial write and final read need no lock: the report must
// not flag them as writes outside a lease.
func TestHarnessOpsAreNotFindings(t *testing.T) {
	events := []history.Event{
		{Index: 0, Process: history.ProcessInit, Type: history.Invoke, F: history.Write, Key: "k", Value: history.MustValue(0), Time: 1},
		{Index: 1, Process: history.ProcessInit, Type: history.OK, F: history.Write, Key: "k", Time: 2},
		{Index: 2, Process: "c1", Type: history.Invoke, F: history.Write, Key: "k", Value: history.MustValue(1), Time: 3},
		{Index: 3, Process: "c1", Type: history.OK, F: history.Write, Key: "k", Time: 4},
		{Index: 4, Process: history.ProcessFinal, Type: history.Invoke, F: history.Read, Key: "k", Time: 5},
		{Index: 5, Process: history.ProcessFinal, Type: history.OK, F: history.Read, Key: "k", Value: history.MustValue(1), Time: 6},
	}
	for _, r := range resourceOps(history.Pair(events).Ops, checker.Check(events)) {
		switch r.Invoke.Process {
		case history.ProcessInit, history.ProcessFinal:
			if r.bad || r.finding != "" {
				t.Errorf("%s's %s flagged: %q", r.Invoke.Process, r.Invoke.F, r.finding)
			}
		case "c1":
			if !r.bad || !strings.Contains(r.finding, "although c1 held no lock") {
				t.Errorf("c1's unlocked write not flagged: %q", r.finding)
			}
		}
	}
}

// stalePause is Kleppmann's figure 1 on a resource, as the workload records
// it: c1 reads, pauses past its lease; c2 takes the lock and writes; c1
// writes from its stale read. Fenced, the tokens are 1 and 2 and the
// storage rejects c1's write.
func stalePause(kind string, fenced bool) []history.Event {
	b := &historytest.Builder{}
	val := func(v any) historytest.Mod { return func(e *history.Event) { e.Value = history.MustValue(v) } }
	tok := func(t int64) historytest.Mod {
		return func(e *history.Event) {
			if fenced {
				e.Token = &t
			}
		}
	}
	ack := func(seq int64) historytest.Mod { return val(history.Ack{Seq: seq}) }
	var init, read0, c2w, c1w, final any
	switch kind {
	case "counter":
		init, read0, c2w, c1w, final = 0, 0, 1, 1, 1
	case "bank":
		all := history.Balances{"a1": "100.00", "a2": "100.00"}
		init, read0 = all, all
		c2w = history.TransferValue{From: "a1", To: "a2", Amount: "30.00", Balances: history.Balances{"a1": "70.00", "a2": "130.00"}}
		c1w = history.TransferValue{From: "a2", To: "a1", Amount: "10.00", Balances: history.Balances{"a1": "110.00", "a2": "90.00"}}
		final = history.Balances{"a1": "110.00", "a2": "90.00"}
		if fenced {
			final = history.Balances{"a1": "70.00", "a2": "130.00"}
		}
	case "set":
		init, read0, c2w, c1w = []int64{}, history.SetRead{}, 21, 11
		final = history.SetRead{Size: 1, Elements: []int64{11}}
		if fenced {
			final = history.SetRead{Size: 1, Elements: []int64{21}}
		}
	}
	f := map[string]history.Func{"counter": history.Write, "bank": history.Transfer, "set": history.Add}[kind]
	b.Add(history.ProcessInit, history.Invoke, history.Write, "k", 0, val(init))
	b.Add(history.ProcessInit, history.OK, history.Write, "k", 0.001, ack(1))
	b.Add("c1", history.Invoke, history.Acquire, "k", 0.01)
	b.Add("c1", history.OK, history.Acquire, "k", 0.02, historytest.Deadline(1), historytest.Value("v1"), tok(1))
	b.Add("c1", history.Invoke, history.Read, "k", 0.03)
	b.Add("c1", history.OK, history.Read, "k", 0.04, val(read0))
	b.Add("c2", history.Invoke, history.Acquire, "k", 1.1)
	b.Add("c2", history.OK, history.Acquire, "k", 1.11, historytest.Deadline(2.1), historytest.Value("v2"), tok(2))
	b.Add("c2", history.Invoke, history.Read, "k", 1.12)
	b.Add("c2", history.OK, history.Read, "k", 1.13, val(read0))
	b.Add("c2", history.Invoke, f, "k", 1.14, val(c2w), tok(2))
	b.Add("c2", history.OK, f, "k", 1.15, ack(2), tok(2))
	b.Release("c2", "k", 1.16, 1.17)
	b.Add("c1", history.Invoke, f, "k", 1.5, val(c1w), tok(1))
	if fenced {
		hi := int64(2)
		b.Add("c1", history.Fail, f, "k", 1.51, val(history.Ack{Highest: &hi}), tok(1),
			historytest.Err("write rejected by fencing: token 1 is below 2, the highest the storage has accepted"))
	} else {
		b.Add("c1", history.OK, f, "k", 1.51, ack(3))
	}
	b.Add("c1", history.Invoke, history.Release, "k", 1.52, historytest.Value("v1"))
	b.Add("c1", history.Fail, history.Release, "k", 1.53, historytest.Value("v1"))
	b.Add(history.ProcessFinal, history.Invoke, history.Read, "k", 2.5)
	b.Add(history.ProcessFinal, history.OK, history.Read, "k", 2.51, val(final))
	return b.Events()
}

// propertyCells reads the Properties table back: property name → its
// verdict cell's class and text, its numbers and its reason.
func propertyCells(t *testing.T, page string) map[string][4]string {
	t.Helper()
	sec := regexp.MustCompile(`(?s)<section class="properties" id="properties">(.*?)</section>`).FindStringSubmatch(page)
	if sec == nil {
		t.Fatal("no Properties section")
	}
	row := regexp.MustCompile(`(?s)<td class="property-name">(.*?)</td>\s*<td class="property-verdict (v-[a-z]+)">(.*?)</td>\s*<td class="property-numbers">(.*?)</td>\s*<td class="property-reason">(.*?)</td>`)
	out := map[string][4]string{}
	for _, m := range row.FindAllStringSubmatch(sec[1], -1) {
		out[html.UnescapeString(m[1])] = [4]string{m[2], m[3], m[4], html.UnescapeString(m[5])}
	}
	return out
}

func TestReportListsEveryProperty(t *testing.T) {
	type want struct {
		class   string
		numbers []string
	}
	for _, tc := range []struct {
		name   string
		events []history.Event
		props  map[string]want
	}{
		{"counter", stalePause("counter", false), map[string]want{
			checker.PropLeaseLock:       {"v-valid", []string{"0 overlaps"}},
			checker.PropCriticalSection: {"v-invalid", []string{"1 overlapping critical section"}},
			checker.PropCounter:         {"v-invalid", []string{"1 lost update", "2 applied writes"}},
		}},
		{"counter fenced", stalePause("counter", true), map[string]want{
			checker.PropLeaseLock:       {"v-valid", nil},
			checker.PropCriticalSection: {"v-invalid", []string{"1 overlapping critical section"}},
			checker.PropCounter:         {"v-valid", []string{"0 lost updates", "1 rejected write"}},
			checker.PropFencing:         {"v-valid", []string{"0 token regressions", "1 rejected write", "1 accepted write"}},
		}},
		{"bank", stalePause("bank", false), map[string]want{
			checker.PropBank: {"v-invalid", []string{"1 lost transfer", "2 applied writes"}},
		}},
		{"bank fenced", stalePause("bank", true), map[string]want{
			checker.PropBank:    {"v-valid", []string{"0 lost transfers", "1 rejected write"}},
			checker.PropFencing: {"v-valid", []string{"1 rejected write"}},
		}},
		{"set", stalePause("set", false), map[string]want{
			checker.PropSet: {"v-invalid", []string{"1 lost add", "2 acknowledged adds"}},
		}},
		{"set fenced", stalePause("set", true), map[string]want{
			checker.PropSet:     {"v-valid", []string{"0 lost adds", "1 rejected add"}},
			checker.PropFencing: {"v-valid", []string{"1 rejected write"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res := checker.Check(tc.events)
			if err := Write(dir, meta("pause-critical-section", "any"), tc.events, res); err != nil {
				t.Fatal(err)
			}
			cells := propertyCells(t, readFile(t, filepath.Join(dir, runstore.ReportFile)))
			if len(cells) != len(res.Properties) {
				t.Errorf("%d property rows, want one per property of the result (%d)", len(cells), len(res.Properties))
			}
			for _, p := range res.Properties {
				c, ok := cells[p.Name]
				if !ok {
					t.Errorf("no row for %s", p.Name)
					continue
				}
				if c[0] != "v-"+string(p.Verdict) || !strings.HasPrefix(c[1], string(p.Verdict)) {
					t.Errorf("%s: verdict cell %q %q, want %s", p.Name, c[0], c[1], p.Verdict)
				}
				if c[3] != p.Reason {
					t.Errorf("%s: reason %q, want %q", p.Name, c[3], p.Reason)
				}
				if !p.Decides && !strings.Contains(c[1], "does not decide") {
					t.Errorf("%s does not decide, the row does not say so", p.Name)
				}
			}
			for name, w := range tc.props {
				c, ok := cells[name]
				if !ok {
					t.Errorf("no row for %s", name)
					continue
				}
				if c[0] != w.class {
					t.Errorf("%s: class %s, want %s (reason %s)", name, c[0], w.class, c[3])
				}
				for _, n := range w.numbers {
					if !strings.Contains(c[2], n) {
						t.Errorf("%s: numbers %q lack %q", name, c[2], n)
					}
				}
			}
		})
	}
}

// A result read back from result.json carries reasons built from history
// text: the Properties table shows them as text.
func TestPropertiesEscapeHostileText(t *testing.T) {
	dir := t.TempDir()
	events := evilHistory()
	res := checker.Check(events)
	res.Properties = append(res.Properties, checker.Property{Name: evilKind, Verdict: checker.Verdict(evilKind), Reason: evilErr, Decides: true})
	if err := Write(dir, evilMeta(), events, res); err != nil {
		t.Fatal(err)
	}
	page := readFile(t, filepath.Join(dir, runstore.ReportFile))
	assertEscaped(t, page, 1)
	cells := propertyCells(t, page)
	c, ok := cells[evilKind]
	if !ok {
		t.Fatalf("the hostile property's row is missing: %v", cells)
	}
	if c[0] != "v-unknown" || c[3] != evilErr {
		t.Errorf("hostile row %q: want an unknown verdict and the reason as text", c)
	}
	if p1 := cells[checker.PropLeaseLock]; p1[0] != "v-invalid" || !strings.Contains(p1[2], "1 overlap") {
		t.Errorf("P1 row %q: want invalid with its overlap counted", p1)
	}
}

// A write names the lease it ran under (history.Event.Lease): after an
// unknown outcome the client writes as c1.1, still inside c1's lease, and
// the report judges the write against that lease, not c1.1's beliefs
// (none). A write naming its lease after the lease ended is flagged.
func TestWriteJudgedAgainstTheLeaseItNames(t *testing.T) {
	b := &historytest.Builder{}
	b.Add("c1", history.Invoke, history.Acquire, "k", 0.1)
	b.Add("c1", history.OK, history.Acquire, "k", 0.2, historytest.Deadline(2), historytest.Value("v1"))
	b.Add("c1", history.Invoke, history.Extend, "k", 0.3, historytest.Value("v1"))
	b.Add("c1", history.Info, history.Extend, "k", 0.4, historytest.Value("v1"))
	b.Add("c1.1", history.Invoke, history.Write, "k", 0.5, historytest.Lease("v1"), func(e *history.Event) { e.Value = history.MustValue(1) })
	b.Add("c1.1", history.OK, history.Write, "k", 0.6)
	b.Add("c1.1", history.Invoke, history.Write, "k", 2.5, historytest.Lease("v1"), func(e *history.Event) { e.Value = history.MustValue(2) })
	b.Add("c1.1", history.OK, history.Write, "k", 2.6)
	events := b.Events()
	var findings []string
	for _, r := range resourceOps(history.Pair(events).Ops, checker.Check(events)) {
		findings = append(findings, fmt.Sprintf("%v %s", r.bad, r.finding))
	}
	if len(findings) != 2 || findings[0] != "false " || !strings.Contains(findings[1], `although c1's belief in "k" had ended at 2.00s (validity deadline)`) {
		t.Errorf("findings %q, want the first write inside c1's lease and the second after it", findings)
	}
}

// The harness's stalls, and a driver's, are drawn on a lane of their
// own, each with whose it was; a report without them has no such lane.
func TestReportShowsHarnessStalls(t *testing.T) {
	for _, tc := range []struct {
		name    string
		process string // who stood still; empty: no one
		want    string
	}{
		{"the harness", history.ProcessHarness, "the harness stood still for 0.400s until"},
		{"a driver", "c2", "c2&#39;s driver stood still for 0.400s until"},
		{"none", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			events := pauseHistory()
			if tc.process != "" {
				last := events[len(events)-1]
				events = append(events, history.Event{Index: last.Index + 1, Process: tc.process, Type: history.Info,
					F: history.Stall, Time: last.Time, Value: history.MustValue(history.StallValue{For: 400e6})})
			}
			res := checker.Check(events)
			if err := Write(dir, meta("pause-critical-section", "violation"), events, res); err != nil {
				t.Fatal(err)
			}
			page := readFile(t, filepath.Join(dir, runstore.ReportFile))
			for _, want := range []string{`class="fault-node fault-paused fault-stall z"`, ">stood still<", tc.want} {
				if want != "" && strings.Contains(page, want) != (tc.process != "") {
					t.Errorf("report has %q: %v, want %v", want, tc.process == "", tc.process != "")
				}
			}
			if tc.process == "c2" && strings.Contains(page, "the harness stood still") {
				t.Errorf("a driver's stall is told as the harness's")
			}
		})
	}
}
