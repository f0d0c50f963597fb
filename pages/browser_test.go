package pages_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/internal/testgate"
	"splitbrain/pages"
	"splitbrain/pages/internal/headless"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

var updateDocs = flag.Bool("update-docs", false, "write the report screenshots into docs/")

var (
	shared    *headless.Browser
	sharedErr error
	sharedMu  sync.Mutex
)

// browser returns the headless Chromium the tests share, started on first
// use and closed by TestMain. CI installs Debian's chromium
// (scripts/setup.sh): there a missing browser fails the test; elsewhere
// (CI unset) it skips it.
func browser(t testing.TB, ctx context.Context) *headless.Browser {
	t.Helper()
	path, err := headless.Find()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v; CI must have it: scripts/setup.sh installs Debian's chromium", err)
		}
		t.Skipf("%v; not in CI (CI unset), so skipping", err)
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = headless.Start(ctx, path)
	}
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing chromium:", err)
			code = 1
		}
	}
	if largeDir != "" {
		os.RemoveAll(largeDir)
	}
	os.Exit(code)
}

func fileURL(path string) string {
	abs, _ := filepath.Abs(path)
	return (&url.URL{Scheme: "file", Path: abs}).String()
}

// open loads a page and waits until report.js says the first frame is
// painted (index pages have no such mark and only wait for load).
func open(t *testing.T, ctx context.Context, b *headless.Browser, path string, width, height int, ready bool) *headless.Page {
	t.Helper()
	p, err := b.NewPage(ctx, width, height)
	if err != nil {
		t.Fatal(err)
	}
	// Hostile markup that got through would call alert: count the calls.
	if err := p.OnNewDocument(ctx, `window.alert = () => { window.alerted = (window.alerted || 0) + 1; };`); err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(ctx, fileURL(path)); err != nil {
		t.Fatal(err)
	}
	if ready {
		if err := p.WaitFor(ctx, `document.documentElement.hasAttribute("data-ready")`); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// screenshot saves a PNG of the page: the viewport, or the document from
// the top of the first selector's element to the bottom of the last one's.
// With -update-docs it goes into docs/, else into a temporary folder.
func screenshot(t *testing.T, ctx context.Context, p *headless.Page, name string, selectors ...string) {
	t.Helper()
	var shot []byte
	var err error
	if len(selectors) == 0 {
		shot, err = p.Screenshot(ctx, false)
	} else {
		var r struct{ Top, Bottom, Width float64 }
		err = p.Eval(ctx, fmt.Sprintf(`(() => {
		  const first = document.querySelector(%q).getBoundingClientRect(), last = document.querySelector(%q).getBoundingClientRect();
		  return {Top: first.top + scrollY - 8, Bottom: last.bottom + scrollY + 8, Width: document.documentElement.clientWidth};
		})()`, selectors[0], selectors[len(selectors)-1]), &r)
		if err == nil {
			shot, err = p.ScreenshotClip(ctx, 0, r.Top, r.Width, r.Bottom-r.Top)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 300 {
		t.Errorf("screenshot is %dx%d", b.Dx(), b.Dy())
	}
	out := filepath.Join(t.TempDir(), name)
	if *updateDocs {
		out = filepath.Join("..", "docs", name)
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)
}

type box struct {
	X, Y, W, H float64
	Fill       string
	Tip        string
}

// probe is what the test asks the rendered page.
const probe = `(() => {
  const box = el => { const r = el.getBoundingClientRect(); return {X: r.left, Y: r.top, W: r.width, H: r.height,
    Fill: getComputedStyle(el).fill, Tip: el.getAttribute("data-tip") || ""}; };
  const lane = name => [...document.querySelectorAll("#timeline-svg text.lane-label")].find(t => t.textContent === name);
  const clip = document.querySelector("#clip-tl rect");
  const svg = document.getElementById("timeline-svg");
  const s = svg.getBoundingClientRect(), k = s.width / svg.viewBox.baseVal.width;
  return {
    Verdict: document.getElementById("verdict").textContent,
    VerdictShown: getComputedStyle(document.getElementById("verdict")).textTransform,
    VerdictColor: getComputedStyle(document.getElementById("verdict")).color,
    Rerun: (document.getElementById("rerun") || {}).textContent || "",
    Overlaps: [...document.querySelectorAll("#timeline-svg rect.overlap")].map(box),
    Lanes: Object.fromEntries(["c1", "c2", "n3"].map(n => [n, lane(n) ? box(lane(n)) : null])),
    Clock: [...document.querySelectorAll("#timeline-svg g.clock-jump")].map(g => Object.assign(box(g.querySelector("line")), {Text: g.textContent})),
    PlotLeft: s.left + clip.x.baseVal.value * k, PlotRight: s.left + (clip.x.baseVal.value + clip.width.baseVal.value) * k,
    Status: document.getElementById("view-status").textContent,
    Fetched: performance.getEntriesByType("resource").map(e => e.name),
    Links: [...document.querySelectorAll(".files a")].map(a => a.getAttribute("href")),
  };
})()`

type probed struct {
	Verdict, VerdictShown, VerdictColor, Rerun string
	Overlaps                                   []box
	Lanes                                      map[string]*box
	Clock                                      []struct {
		box
		Text string
	}
	PlotLeft, PlotRight float64
	Status              string
	Fetched             []string
	Links               []string
}

const red = "rgb(207, 34, 46)"

// TestClockJumpReportInBrowser runs the clock-jump scenario on real Redis
// nodes, opens its report in headless Chromium, takes a screenshot and
// checks the rendered page: the verdict, two red overlapping bars on the
// lanes of c1 and c2, the clock-jump marker on n3 inside the plot, zoom
// and tooltips working, nothing fetched.
func TestClockJumpReportInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := browser(t, ctx)

	sc, err := spec.Load("clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	// This test is about the report, not about the scenario: on a machine
	// loaded enough for c2's acquire to time out the run comes out valid
	// (the scenario's own tests judge that), so it gets up to three seeds.
	store := t.TempDir()
	var out *runner.Outcome
	valid := 0
	seed := int64(5)
	testgate.Enter(t)
	for ; seed < 8; seed++ {
		var progress bytes.Buffer
		out, err = runner.Run(ctx, sc, runner.RunOptions{Seed: seed, Store: store, CacheDir: t.TempDir(), Progress: &progress})
		if err != nil {
			t.Fatal(err)
		}
		if out.Result.Verdict == checker.Invalid {
			break
		}
		if out.Result.Verdict == checker.Valid {
			valid++
		}
		t.Logf("seed %d: clock-jump verdict %s (%s), want invalid; the run:\n%s", seed, out.Result.Verdict, out.Result.Reason, progress.String())
	}
	if out.Result.Verdict != checker.Invalid {
		t.Fatal("clock-jump found no violation with three seeds")
	}
	report := filepath.Join(out.Dir, runstore.ReportFile)
	p := open(t, ctx, b, report, 1200, 1120, true)
	screenshot(t, ctx, p, "clock-jump-report.png")

	var got probed
	if err := p.Eval(ctx, probe, &got); err != nil {
		t.Fatal(err)
	}
	if got.Verdict != "invalid" || got.VerdictShown != "uppercase" || got.VerdictColor != red {
		t.Errorf("verdict %q (%s, %s), want invalid in red capitals", got.Verdict, got.VerdictShown, got.VerdictColor)
	}
	if !strings.HasPrefix(got.Rerun, fmt.Sprintf("splitbrain run clock-jump --seed %d", seed)) {
		t.Errorf("re-run command %q", got.Rerun)
	}
	if len(got.Overlaps) != 2 {
		t.Fatalf("%d overlap bars, want 2 (one on c1's lane, one on c2's)", len(got.Overlaps))
	}
	o1, o2 := got.Overlaps[0], got.Overlaps[1]
	for i, o := range got.Overlaps {
		if o.Fill != red {
			t.Errorf("overlap %d is %s, want red %s", i, o.Fill, red)
		}
		if o.W < 100 || o.X < got.PlotLeft-1 || o.X+o.W > got.PlotRight+1 {
			t.Errorf("overlap %d spans x %.0f–%.0f, want a wide bar inside the plot %.0f–%.0f", i, o.X, o.X+o.W, got.PlotLeft, got.PlotRight)
		}
		if !strings.Contains(o.Tip, "both believed they held lock") {
			t.Errorf("overlap %d tooltip %q", i, o.Tip)
		}
	}
	if from, to := max(o1.X, o2.X), min(o1.X+o1.W, o2.X+o2.W); to-from < 100 {
		t.Errorf("the two red bars overlap on screen for %.0f px, want the whole overlap", to-from)
	}
	for i, c := range []string{"c1", "c2"} {
		l, o := got.Lanes[c], got.Overlaps[i]
		if l == nil || l.Y+l.H/2 < o.Y || l.Y+l.H/2 > o.Y+o.H {
			t.Errorf("overlap %d (y %.0f–%.0f) is not on %s's lane (%+v)", i, o.Y, o.Y+o.H, c, l)
		}
	}
	if len(got.Clock) != 1 {
		t.Fatalf("%d clock-jump markers, want 1", len(got.Clock))
	}
	mk, n3 := got.Clock[0], got.Lanes["n3"]
	if !strings.HasPrefix(mk.Text, "n3 +") || mk.X < got.PlotLeft || mk.X > got.PlotRight || mk.H < 10 {
		t.Errorf("clock-jump marker %+v, want 'n3 +…' visible inside the plot %.0f–%.0f", mk, got.PlotLeft, got.PlotRight)
	}
	if n3 == nil || n3.Y+n3.H/2 < mk.Y || n3.Y+n3.H/2 > mk.Y+mk.H {
		t.Errorf("clock-jump marker (y %.0f–%.0f) is not on n3's lane (%+v)", mk.Y, mk.Y+mk.H, n3)
	}
	if len(got.Fetched) != 0 {
		t.Errorf("the report fetched %v; it must be self-contained", got.Fetched)
	}
	for _, want := range []string{runstore.HistoryFile, runstore.ResultFile, runstore.PorcupineFile, "logs/n1.log", "logs/n5.log"} {
		found := false
		for _, l := range got.Links {
			found = found || l == want
		}
		if !found {
			t.Errorf("no link to %s in %v", want, got.Links)
		}
		if _, err := os.Stat(filepath.Join(out.Dir, filepath.FromSlash(want))); err != nil {
			t.Errorf("linked file %s missing: %v", want, err)
		}
	}

	// The page opens zoomed to the violation; "whole run" zooms out, so
	// the same overlap gets narrower, and the tooltip shows the full op.
	if !strings.HasPrefix(got.Status, "showing ") {
		t.Errorf("view status %q", got.Status)
	}
	var after struct {
		Status string
		W      float64
		Tip    string
	}
	err = p.Eval(ctx, `new Promise(done => {
	  document.querySelector('[data-zoom="all"]').click();
	  requestAnimationFrame(() => requestAnimationFrame(() => {
	    const o = document.querySelector("#timeline-svg rect.overlap"), r = o.getBoundingClientRect();
	    const belief = document.querySelector("#timeline-svg rect.belief"), br = belief.getBoundingClientRect();
	    belief.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: br.left + br.width / 2, clientY: br.top + br.height / 2}));
	    done({Status: document.getElementById("view-status").textContent, W: r.width, Tip: document.querySelector(".tip").textContent});
	  }));
	})`, &after)
	if err != nil {
		t.Fatal(err)
	}
	// Ctrl+wheel over the timeline zooms in again; a plain wheel leaves
	// the view alone (it scrolls the page).
	var wheel struct{ Plain, Ctrl string }
	err = p.Eval(ctx, `new Promise(done => {
	  const svg = document.getElementById("timeline-svg"), r = svg.getBoundingClientRect();
	  const at = {bubbles: true, cancelable: true, clientX: r.left + r.width / 2, clientY: r.top + 40, deltaY: -200};
	  const status = () => document.getElementById("view-status").textContent;
	  svg.dispatchEvent(new WheelEvent("wheel", at));
	  requestAnimationFrame(() => requestAnimationFrame(() => {
	    const plain = status();
	    svg.dispatchEvent(new WheelEvent("wheel", Object.assign({ctrlKey: true}, at)));
	    requestAnimationFrame(() => requestAnimationFrame(() => done({Plain: plain, Ctrl: status()})));
	  }));
	})`, &wheel)
	if err != nil {
		t.Fatal(err)
	}
	if wheel.Plain != after.Status || wheel.Ctrl == after.Status {
		t.Errorf("wheel: plain %q, ctrl %q, from %q; want only Ctrl+wheel to zoom", wheel.Plain, wheel.Ctrl, after.Status)
	}
	if after.W >= o1.W*0.95 || !regexp.MustCompile(`^showing 0(\.0+)?s–`).MatchString(after.Status) {
		t.Errorf("after 'whole run': overlap %.0f px wide (was %.0f), status %q; want a narrower bar and the run from 0", after.W, o1.W, after.Status)
	}
	if !strings.Contains(after.Tip, `"f":"acquire"`) || !strings.Contains(after.Tip, "believed it held") {
		t.Errorf("belief tooltip %q, want the sentence and the raw acquire events", after.Tip)
	}
	if err := p.Eval(ctx, `document.querySelector(".tip").hidden = true`, nil); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, p, "clock-jump-charts.png", "#timeline", "#latency")

	// The store's index lists the run, in red, and filters.
	idx := open(t, ctx, b, filepath.Join(store, runstore.IndexFile), 1200, 700, false)
	var rows struct {
		All, Invalid, Valid int
		Color               string
	}
	err = idx.Eval(ctx, `(() => {
	  const visible = () => [...document.querySelectorAll("tr.run")].filter(r => !r.hidden).length;
	  const all = visible(), sel = document.getElementById("filter-verdict");
	  sel.value = "invalid"; sel.dispatchEvent(new Event("change"));
	  const invalid = visible();
	  sel.value = "valid"; sel.dispatchEvent(new Event("change"));
	  return {All: all, Invalid: invalid, Valid: visible(),
	    Color: getComputedStyle(document.querySelector("tr.run .verdict-cell")).color};
	})()`, &rows)
	if err != nil {
		t.Fatal(err)
	}
	if rows.All != int(seed-4) || rows.Invalid != 1 || rows.Valid != valid || rows.Color != red {
		t.Errorf("index rows: %+v; want %d runs, one invalid (newest, in red), %d valid", rows, seed-4, valid)
	}
}

// Hostile keys, errors, fault kinds and scenario names show as text in the
// rendered page, and nothing in them runs.
func TestHostileTextShownAsTextInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	dir := t.TempDir()
	events := pages.EvilHistory()
	if err := pages.Write(dir, pages.EvilMeta(), events, checker.Check(events)); err != nil {
		t.Fatal(err)
	}
	p := open(t, ctx, b, filepath.Join(dir, runstore.ReportFile), 1200, 900, true)
	var got struct {
		Alerted               int
		H1, Title, Headline   string
		Tips, Labels, Command string
	}
	if err := p.Eval(ctx, `({Alerted: window.alerted || 0,
	  H1: document.querySelector("h1").textContent, Title: document.title,
	  Headline: document.querySelector(".violation-headline").firstChild.textContent,
	  Tips: [...document.querySelectorAll("[data-tip]")].map(e => e.getAttribute("data-tip")).join("\n"),
	  Labels: [...document.querySelectorAll("svg text")].map(e => e.textContent).join("\n"),
	  Command: document.getElementById("rerun").textContent})`, &got); err != nil {
		t.Fatal(err)
	}
	if got.Alerted != 0 {
		t.Errorf("hostile text ran: alert called %d times", got.Alerted)
	}
	if got.H1 != pages.EvilScenario || !strings.HasPrefix(got.Title, pages.EvilScenario+": invalid") {
		t.Errorf("scenario name shown as %q (title %q), want %q as text", got.H1, got.Title, pages.EvilScenario)
	}
	if !strings.Contains(got.Headline, fmt.Sprintf("%q", pages.EvilLockKey)) {
		t.Errorf("headline %q lacks the key as text", got.Headline)
	}
	if !strings.Contains(got.Tips, pages.EvilErr) || !strings.Contains(got.Labels, pages.EvilKind) {
		t.Errorf("the error or fault kind is not shown as text in tooltips / labels")
	}
	if !strings.Contains(got.Command, pages.EvilScenario) {
		t.Errorf("re-run command %q", got.Command)
	}
}

// The report of Kleppmann's figure 1 on real Redis: its Properties table
// shows each property with its verdict in the page's verdict colours, and
// the counter's lost update among its numbers.
func TestPauseReportPropertiesInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	sc, err := spec.Load("pause-critical-section")
	if err != nil {
		t.Fatal(err)
	}
	testgate.Enter(t)
	out, err := runner.Run(ctx, sc, runner.RunOptions{Seed: 1, Store: t.TempDir(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Counter == nil || out.Result.Counter.Verdict != checker.Invalid {
		t.Fatalf("pause-critical-section: counter %+v, want a lost update (the scenario's own tests judge the run)", out.Result.Counter)
	}
	p := open(t, ctx, b, filepath.Join(out.Dir, runstore.ReportFile), 1200, 1120, true)
	var rows []struct{ Name, Verdict, Color, Numbers string }
	if err := p.Eval(ctx, `[...document.querySelectorAll("#properties tr.property")].map(r => ({
	  Name: r.querySelector(".property-name").textContent,
	  Verdict: r.querySelector(".property-verdict").firstChild.textContent,
	  Color: getComputedStyle(r.querySelector(".property-verdict")).color,
	  Numbers: r.querySelector(".property-numbers").innerText}))`, &rows); err != nil {
		t.Fatal(err)
	}
	// The liveness rows may say unknown: a paused client's tries decide
	// nothing about fault tolerance.
	colors := map[string]string{"valid": "rgb(26, 127, 55)", "invalid": red, "unknown": "rgb(183, 121, 31)"}
	got := map[string]string{}
	for _, r := range rows {
		got[r.Name] = r.Verdict
		if r.Color != colors[r.Verdict] {
			t.Errorf("%s: verdict %s in %s, want %s", r.Name, r.Verdict, r.Color, colors[r.Verdict])
		}
		if r.Name == checker.PropCounter && !strings.Contains(r.Numbers, "lost update") {
			t.Errorf("counter numbers %q lack the lost updates", r.Numbers)
		}
	}
	for _, want := range []string{checker.PropLeaseLock, checker.PropCriticalSection, checker.PropCounter} {
		if _, ok := got[want]; !ok {
			t.Errorf("no row for %s in %v", want, got)
		}
	}
	if got[checker.PropCounter] != "invalid" || got[checker.PropCriticalSection] != "invalid" {
		t.Errorf("rows %v: want the counter and P2 invalid", got)
	}
	screenshot(t, ctx, p, "pause-critical-section-properties.png", ".run-header", "#properties")
}
