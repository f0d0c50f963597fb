package pages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/locks"
	"splitbrain/pages"
	"splitbrain/pages/internal/headless"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

// TestMatrixInBrowser plays a real suite — three stories against a few
// lock kinds, the other columns' cells n/a or left unplayed — assembles
// its matrix from the run folders alone, and checks the rendered
// matrix.html in headless Chromium: rows grouped by fault family, a
// column per lock, cells coloured by their rate with the lock's promise
// and the resource apart, n/a cells that say why on hover, unplayed cells
// shown as such, links to reports that exist, the seeds and the re-run
// command at the top; each lock's summary on top as runstore's Summary
// says; every lock column on a 1366-pixel screen; the fault picker
// lighting the locks the plays say kept every promise. With -update-docs
// it plays a story or two of each family for the README's screenshot.
func TestMatrixInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	// Few stories, all three bars, every kind of n/a: a clock family (n/a
	// for etcd's locks, whose clock cannot be moved), a family every lock
	// plays (its storage fencing where the lock hands out tokens), a
	// Sentinel story (n/a for the locks of no Sentinel deployment).
	names := []string{"clock-rate-drift", "pause-critical-section", "sentinel-partition"}
	if *updateDocs {
		// docs/matrix.png: a story or two of each fault family, every
		// lock (the dense suite is make suite's).
		names = []string{"clock-jump", "clock-rate-drift", "server-clock-ahead", "pause-critical-section", "pause-during-acquire",
			"restart-amnesia", "restart-delayed", "failover", "sentinel-failover",
			"sentinel-partition", "restart-amnesia-aof-always", "delayed-write", "partition-holder", "minority-partition",
			"liveness-nodes-down"}
	}
	var scs []*spec.Scenario
	for _, n := range names {
		sc, err := spec.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	store := t.TempDir()
	// The plays: every cell of the few locks the checks below name, and
	// etcd's for a lock on an ensemble (a ZooKeeper play starts three
	// JVMs); every other lock's column keeps its
	// n/a cells, and its other cells are left unplayed, as a suite cut
	// short leaves them. Playing every cell (43 plays, 71 CPU-seconds)
	// checked nothing more: the page draws a cell from its plays, not
	// from its lock kind, and runner's TestBuiltins play every cell.
	played := []string{locks.Redlock.Name, "redsync", "fenced-two-round", "etcd"}
	if *updateDocs {
		played = locks.Matrix()
	}
	var cells []suite.Cell
	for _, c := range suite.Cells(scs, locks.Matrix()) {
		if slices.Contains(played, c.Lock) {
			cells = append(cells, c)
		}
	}
	const seed = 5
	plays, err := suite.Play(ctx, cells, suite.PlayOptions{Seed: seed, Runs: 1, Parallel: 4,
		Run: runner.RunOptions{Store: store, CacheDir: t.TempDir(), ProgressEvery: -1}})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, p := range plays {
		dirs = append(dirs, p.Outcome.Dir)
	}
	runs, err := suite.ReadRuns(dirs)
	if err != nil {
		t.Fatal(err)
	}
	m := suite.Assemble(runs, scs, locks.Matrix())
	m.Title, m.Seed, m.Seeds, m.Runs = "splitbrain suite", seed, []int64{seed}, 1
	m.Command = "splitbrain suite " + strings.Join(names, " ") + " --seed 5"
	if len(played) < len(locks.Matrix()) {
		m.Partial = fmt.Sprintf("the test played the cells of %s only", strings.Join(played, ", "))
	}
	if err := pages.WriteMatrix(store, m); err != nil {
		t.Fatal(err)
	}
	back, err := runstore.ReadMatrix(store)
	if err != nil {
		t.Fatal(err)
	}
	// A laptop's screen: 1366 pixels wide, every lock column on it.
	p := open(t, ctx, b, filepath.Join(store, runstore.MatrixFile), 1366, 900, false)
	page := readMatrixPage(t, ctx, p)
	if strings.Join(page.Locks, ",") != strings.Join(locks.Matrix(), ",") {
		t.Errorf("columns %v, want %v", page.Locks, locks.Matrix())
	}
	checkFits(t, page)
	for _, f := range []string{"clock", "process pause", "network partition"} {
		if !strings.Contains(strings.Join(page.Families, "|"), f) {
			t.Errorf("no row group %q in %v", f, page.Families)
		}
	}
	if !strings.Contains(page.Seeds, "seed 5") || !strings.Contains(page.Rerun, "--seed 5") {
		t.Errorf("top: seeds %q, re-run %q", page.Seeds, page.Rerun)
	}
	const green, red = "rgb(26, 127, 55)", "rgb(207, 34, 46)"
	got := map[string]bool{}
	rated := map[string]int{} // row → its played cells
	for _, c := range page.Cells {
		key := c.Row + "/" + c.Lock
		got[key] = true
		switch {
		case strings.Contains(c.Class, "cell-na"):
			if !strings.HasPrefix(c.Title, "n/a: ") || len(c.Title) < 20 || c.Text != "n/a" {
				t.Errorf("%s: n/a without a reason on hover, or not compact: %q, %q", key, c.Title, c.Text)
			}
		case strings.Contains(c.Class, "cell-none"):
			if slices.Contains(played, c.Lock) || c.Title != "not played (the suite was cut short)" {
				t.Errorf("%s: shown as not played (%q); played: %v", key, c.Title, played)
			}
		case strings.Contains(c.Class, "cell-rated"):
			rated[c.Row]++
			if !slices.Contains(played, c.Lock) {
				t.Errorf("%s: rated, but the test did not play it", key)
			}
			if c.Href == "" {
				t.Errorf("%s: no link to a report", key)
			} else if _, err := os.Stat(filepath.Join(store, filepath.FromSlash(c.Href))); err != nil {
				t.Errorf("%s: links to a missing report: %v", key, err)
			}
			if c.LiveBg == "" {
				t.Errorf("%s: no liveness bar", key)
			}
		default:
			t.Errorf("%s: neither played, nor n/a, nor shown as not played (%q)", key, c.Class)
		}
	}
	for _, row := range names {
		if rated[row] == 0 {
			t.Errorf("row %s: no played cell; the locks played (%v) must fit every story", row, played)
		}
	}
	cell := func(row, lock string) (c matrixPageCell) {
		for _, x := range page.Cells {
			if x.Row == row && x.Lock == lock {
				return x
			}
		}
		t.Errorf("no cell %s/%s", row, lock)
		return c
	}
	// The clock jump breaks the lock: 1/1. Its lock bar is red when the
	// play broke the lock's promise (P1) and green when only the critical
	// sections overlapped — under CI's load a stalled harness once let
	// c1's belief end first.
	wantLock, wantRate := green, "0/1"
	for _, mc := range back.Cells {
		if mc.Scenario == "clock-rate-drift" && mc.Lock == "redlock" && mc.LockBroken > 0 {
			wantLock, wantRate = red, "1/1"
		}
	}
	if c := cell("clock-rate-drift", "redlock"); !strings.HasPrefix(c.LockTxt, wantRate) || c.LockBg != wantLock || !strings.Contains(c.Title, "1/1 invalid") {
		t.Errorf("clock-rate-drift/redlock: lock bar %q %s (%q), want %s %s", c.LockTxt, c.LockBg, c.Title, wantRate, wantLock)
	}
	// Kleppmann's figure 1: the lock keeps its promise, the resource does
	// not — a green bar and a red one.
	if c := cell("pause-critical-section", "redsync"); c.LockBg != green || c.ResBg != red {
		t.Errorf("pause-critical-section/redsync: lock %s, resource %s; want green and red", c.LockBg, c.ResBg)
	}
	// With fencing (the storage checks the tokens the lock hands out)
	// both stay green.
	if c := cell("pause-critical-section", "fenced-two-round"); c.LockBg != green || c.ResBg != green {
		t.Errorf("pause-critical-section/fenced-two-round: lock %s, resource %s; want both green", c.LockBg, c.ResBg)
	}
	if c := cell("clock-rate-drift", "etcd"); !strings.Contains(c.Title, "Go binary") {
		t.Errorf("clock-rate-drift/etcd: hover %q, want why etcd's clock cannot move", c.Title)
	}
	if c := cell("sentinel-partition", "kazoo"); !strings.Contains(c.Title, "a Redis replication story") {
		t.Errorf("sentinel-partition/kazoo: hover %q, want why a lock on an ensemble does not fit", c.Title)
	}
	if len(got) != len(names)*len(locks.Matrix()) {
		t.Errorf("%d cells on the page, want %d", len(got), len(names)*len(locks.Matrix()))
	}
	// The summary on top says what runstore's Summary says, lock by lock.
	sum := back.Summary()
	if len(page.Summary) != len(sum) {
		t.Fatalf("%d summary rows, want %d", len(page.Summary), len(sum))
	}
	for i, s := range sum {
		kept := "–"
		if s.Safety.Rows > 0 {
			kept = fmt.Sprintf("%d/%d", s.Safety.Kept, s.Safety.Rows)
		}
		if page.Summary[i].Lock != s.Lock || page.Summary[i].Title != s.Line(0) || page.Summary[i].Safety != kept {
			t.Errorf("summary row %d: %+v, want %s: %q", i, page.Summary[i], s.Lock, s.Line(0))
		}
	}
	// The picker on real plays: tick each row alone, then all.
	for _, row := range names {
		checkPick(t, ctx, p, back, []string{row})
	}
	checkPick(t, ctx, p, back, names)
	var alerted int
	_ = p.Eval(ctx, `window.alerted || 0`, &alerted)
	if alerted != 0 {
		t.Errorf("alert called %d times", alerted)
	}
	pickRows(t, ctx, p, nil)
	if *updateDocs {
		// The screenshot shows the picker at work: the faults a
		// production sees ticked, the locks that keep every promise
		// there lit.
		// The first row under which some lock kept everything.
		for _, row := range names {
			if slices.ContainsFunc(back.Locks, func(l string) bool { return keptEverything(back, row, l) }) {
				pickRows(t, ctx, p, []string{row})
				break
			}
		}
	}
	screenshot(t, ctx, p, "matrix.png", ".plain-header", "table.matrix")
}

type matrixPageCell struct {
	Row, Lock, Class, Title, Text, Href, LockTxt, LockBg, ResBg, LiveBg string
}

// matrixPage is what a matrix.html shows, read off the DOM.
type matrixPage struct {
	Families []string
	Locks    []string
	Seeds    string
	Rerun    string
	// Overflow is how far the page is wider than the window; LockRight
	// the rightmost lock header's right edge, Inner the window's width.
	Overflow, LockRight, Inner float64
	Cells                      []matrixPageCell
	Summary                    []struct{ Lock, Title, Safety string }
}

func readMatrixPage(t *testing.T, ctx context.Context, p *headless.Page) matrixPage {
	t.Helper()
	var page matrixPage
	if err := p.Eval(ctx, `(() => {
	  const heads = [...document.querySelectorAll("thead th.lock-col")];
	  const locks = heads.map(th => th.textContent);
	  const cells = [];
	  for (const tr of document.querySelectorAll("tbody.family tr.story-row")) {
	    [...tr.querySelectorAll("td")].forEach((td, i) => {
	      const a = td.querySelector("a.cell-link"), l = td.querySelector(".bar.lock"), r = td.querySelector(".bar.res"), v = td.querySelector(".bar.live");
	      cells.push({Row: tr.querySelector(".story-name").textContent, Lock: locks[i], Class: td.className, Title: td.title, Text: td.textContent.trim(),
	        Href: a ? a.getAttribute("href") || "" : "", LockTxt: l ? l.textContent : "",
	        LockBg: l ? getComputedStyle(l).backgroundColor : "", ResBg: r ? getComputedStyle(r).backgroundColor : "",
	        LiveBg: v ? getComputedStyle(v).backgroundColor : ""});
	    });
	  }
	  const summary = [...document.querySelectorAll("table.lock-summary tbody tr")].map(tr => ({Lock: tr.querySelector("th").textContent,
	    Title: tr.title, Safety: tr.querySelector("td.promise .kept").textContent}));
	  const seeds = document.querySelector(".seeds"), rerun = document.querySelector("code.rerun");
	  return {Families: [...document.querySelectorAll("tr.family-row th")].map(th => th.textContent.trim()), Locks: locks,
	    Seeds: seeds ? seeds.textContent : "", Rerun: rerun ? rerun.textContent : "", Cells: cells, Summary: summary,
	    Overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
	    LockRight: heads.length ? heads[heads.length - 1].getBoundingClientRect().right : 0, Inner: document.documentElement.clientWidth};
	})()`, &page); err != nil {
		t.Fatal(err)
	}
	return page
}

// checkFits: every lock column is on the screen, the page no wider than
// the window.
func checkFits(t *testing.T, page matrixPage) {
	t.Helper()
	if page.Overflow > 0 || page.LockRight > page.Inner || page.LockRight == 0 {
		t.Errorf("at %v px the page overflows by %v px; the last lock column ends at %v px", page.Inner, page.Overflow, page.LockRight)
	}
	t.Logf("at %v px: %d lock columns, the last ending at %.0f px, overflow %v px", page.Inner, len(page.Locks), page.LockRight, page.Overflow)
}

// pickRows ticks exactly the rows named (by clicking, as a user does) and
// returns the locks the page lights and the sentence it says.
func pickRows(t *testing.T, ctx context.Context, p *headless.Page, rows []string) (lit []string, answer, listed string) {
	t.Helper()
	js, _ := json.Marshal(rows)
	var out struct {
		Lit            []string
		Answer, Listed string
	}
	if err := p.Eval(ctx, `(() => {
	  const want = new Set(`+string(js)+`);
	  for (const tr of document.querySelectorAll("tr.story-row")) {
	    const box = tr.querySelector("input.pick-row");
	    if (box.checked !== want.has(tr.querySelector(".story-name").textContent)) box.click();
	  }
	  const a = document.getElementById("pick-answer");
	  return {Lit: [...document.querySelectorAll("thead th.lock-col.keeps")].map(th => th.textContent), Answer: a.textContent, Listed: a.dataset.locks || ""};
	})()`, &out); err != nil {
		t.Fatal(err)
	}
	return out.Lit, out.Answer, out.Listed
}

// keptEverything says from the plays themselves, not from the tally the
// page was drawn from, whether a lock kept every promise under a row:
// played there, and every play valid with every answer it gave valid.
func keptEverything(m runstore.Matrix, row, lock string) bool {
	for _, c := range m.Cells {
		if c.Scenario != row || c.Lock != lock {
			continue
		}
		if c.NA != "" || len(c.Plays) == 0 {
			return false
		}
		for _, p := range c.Plays {
			a := p.Answers
			if p.Verdict != checker.Valid || a.Lock != checker.Valid {
				return false
			}
			for _, v := range []checker.Verdict{a.Resource, a.DeadlockFreedom, a.FaultTolerance} {
				if v != "" && v != checker.Valid {
					return false
				}
			}
		}
		return true
	}
	return false
}

// checkPick ticks rows and compares the lit locks and the sentence with
// what the plays say.
func checkPick(t *testing.T, ctx context.Context, p *headless.Page, m runstore.Matrix, rows []string) {
	t.Helper()
	lit, answer, listed := pickRows(t, ctx, p, rows)
	var want []string
	for _, l := range m.Locks {
		ok := len(rows) > 0
		for _, r := range rows {
			ok = ok && keptEverything(m, r, l)
		}
		if ok {
			want = append(want, l)
		}
	}
	if !slices.Equal(lit, want) || listed != strings.Join(want, "\n") {
		t.Errorf("ticked %v: lit %q (listed %q), want %q", rows, lit, listed, want)
	}
	switch {
	case len(rows) == 0:
	case len(want) == 0 && !strings.Contains(answer, "none"):
		t.Errorf("ticked %v: no lock kept everything, but the page says %q", rows, answer)
	case len(want) > 0 && !strings.Contains(answer, strings.Join(want, ", ")):
		t.Errorf("ticked %v: the page says %q, want it to list %v", rows, answer, want)
	}
}

// TestMatrixPickerInBrowser checks the fault picker on a hand-made
// matrix whose every answer the test chose: eighteen lock columns (and a
// hostile one) on a 1366-pixel screen, rows ticked one by one, a whole
// group ticked by its box, a pick no lock survives ("none"), and the
// group box half-ticked when some of its rows are.
func TestMatrixPickerInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	cols := append(locks.Matrix(), pages.EvilLockKey)
	m := runstore.Matrix{Title: "picker", Locks: cols}
	rows := map[string][]string{
		"clock":             {"clock-jump", "clock-ahead"},
		"process pause":     {"pause-past-lease", "pause-in-flight"},
		"network partition": {"holder-cut-off", "minority-partition", "all-broken"},
	}
	for _, fam := range []string{"clock", "process pause", "network partition"} {
		m.Families = append(m.Families, fam)
		for ri, row := range rows[fam] {
			m.Scenarios = append(m.Scenarios, row)
			for li, l := range cols {
				c := runstore.MatrixCell{Scenario: row, Lock: l, Family: fam}
				// Each rule of the picker meets a cell: n/a, a broken
				// lock, a broken resource, broken or unknown liveness,
				// kept; all-broken keeps nothing anywhere.
				play := runstore.MatrixPlay{Verdict: checker.Valid, Answers: checker.Answers{Lock: checker.Valid, DeadlockFreedom: checker.Valid, FaultTolerance: checker.Valid}}
				switch (li*3 + ri*5 + len(fam)) % 7 {
				case 0:
					c.NA = "the fault cannot exist here"
				case 1:
					play.Verdict, play.Answers.Lock = checker.Invalid, checker.Invalid
				case 2:
					play.Verdict, play.Answers.Resource = checker.Invalid, checker.Invalid
				case 3:
					play.Answers.FaultTolerance = checker.Invalid
				case 4:
					play.Answers.DeadlockFreedom = checker.Unknown
				}
				if row == "all-broken" {
					c.NA, play.Verdict, play.Answers.Lock = "", checker.Invalid, checker.Invalid
				}
				if l == pages.EvilLockKey && row != "all-broken" {
					// The hostile name keeps everything: it must reach
					// the sentence, as text.
					c.NA, play = "", runstore.MatrixPlay{Verdict: checker.Valid, Answers: checker.Answers{Lock: checker.Valid}}
				}
				if c.NA == "" {
					c.Plays = []runstore.MatrixPlay{play}
				}
				m.Cells = append(m.Cells, c)
			}
		}
	}
	store := t.TempDir()
	if err := pages.WriteMatrix(store, m); err != nil {
		t.Fatal(err)
	}
	back, err := runstore.ReadMatrix(store)
	if err != nil {
		t.Fatal(err)
	}
	p := open(t, ctx, b, filepath.Join(store, runstore.MatrixFile), 1366, 800, false)
	page := readMatrixPage(t, ctx, p)
	if len(page.Locks) != len(cols) || page.Locks[len(cols)-1] != pages.EvilLockKey {
		t.Errorf("columns %q", page.Locks)
	}
	checkFits(t, page)
	if lit, answer, _ := pickRows(t, ctx, p, nil); len(lit) != 0 || !strings.Contains(answer, "Tick") {
		t.Errorf("nothing ticked: lit %v, %q", lit, answer)
	}
	for _, r := range m.Scenarios {
		checkPick(t, ctx, p, back, []string{r})
	}
	checkPick(t, ctx, p, back, []string{"clock-jump", "pause-past-lease"})
	checkPick(t, ctx, p, back, []string{"clock-jump", "all-broken"})
	if lit, answer, _ := pickRows(t, ctx, p, []string{"clock-jump"}); !slices.Contains(lit, pages.EvilLockKey) || !strings.Contains(answer, pages.EvilLockKey) {
		t.Errorf("the hostile lock keeps everything under clock-jump by construction, lit %q, said %q", lit, answer)
	}
	// The group's box ticks its rows; a row unticked leaves it half.
	pickRows(t, ctx, p, nil)
	var group struct {
		Checked, Indeterminate bool
		Lit                    []string
	}
	tickGroup := `(() => { document.querySelector("input.pick-group[data-group='1']").click();
	  const g = document.querySelector("input.pick-group[data-group='1']");
	  return {Checked: g.checked, Indeterminate: g.indeterminate, Lit: [...document.querySelectorAll("thead th.lock-col.keeps")].map(th => th.textContent)}; })()`
	if err := p.Eval(ctx, tickGroup, &group); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range cols {
		if keptEverything(back, "pause-past-lease", l) && keptEverything(back, "pause-in-flight", l) {
			want = append(want, l)
		}
	}
	if !group.Checked || !slices.Equal(group.Lit, want) {
		t.Errorf("process pause ticked as a group: box %v, lit %q, want %q", group.Checked, group.Lit, want)
	}
	if err := p.Eval(ctx, `(() => { document.querySelectorAll("tbody[data-group='1'] input.pick-row")[0].click();
	  const g = document.querySelector("input.pick-group[data-group='1']"); return {Checked: g.checked, Indeterminate: g.indeterminate}; })()`, &group); err != nil {
		t.Fatal(err)
	}
	if group.Checked || !group.Indeterminate {
		t.Errorf("one of two rows ticked: box checked %v, half %v", group.Checked, group.Indeterminate)
	}
	var alerted int
	_ = p.Eval(ctx, `window.alerted || 0`, &alerted)
	if alerted != 0 {
		t.Errorf("alert called %d times", alerted)
	}
}
