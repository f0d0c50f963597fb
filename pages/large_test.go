package pages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/history/historytest"
	"splitbrain/pages"
	"splitbrain/runstore"
)

// longRun builds a history of ops client operations, the shape of a long
// counter workload: eight clients take turns holding the lock, read and
// write a counter under it and release it, while another client's acquire
// fails; every few seconds the nemesis cuts links, jumps a clock, pauses or
// kills a node. Halfway through, one holder keeps believing past the next
// grant and writes a stale value with an old token: one overlap, one stale
// write. Draws come from a fixed seed.
func longRun(ops int) []history.Event {
	rng := rand.New(rand.NewPCG(7, 1))
	b := &historytest.Builder{}
	type stop struct {
		at float64
		f  history.Fault
	}
	var stops []stop
	at := func(t float64) float64 {
		// Fault stops due by t go first: times never decrease.
		sort.SliceStable(stops, func(i, j int) bool { return stops[i].at < stops[j].at })
		for len(stops) > 0 && stops[0].at <= t {
			b.Fault(stops[0].at, stops[0].f)
			stops = stops[1:]
		}
		return t
	}
	tok := func(v int64) historytest.Mod { return func(e *history.Event) { e.Token = &v } }
	num := func(v int) historytest.Mod { return func(e *history.Event) { e.Value = history.MustValue(v) } }
	// The storage acknowledges each applied write with its place in the
	// storage's order, as the workload's storage does.
	var seq int64
	ack := func() historytest.Mod {
		seq++
		s := seq
		return func(e *history.Event) { e.Value = history.MustValue(history.Ack{Seq: s}) }
	}
	b.Add(history.ProcessInit, history.Invoke, history.Write, "counter", 0, num(0))
	b.Add(history.ProcessInit, history.OK, history.Write, "counter", 0.005, ack())
	const clients = 8
	t, counter, n := 0.01, 0, 0
	var token int64
	nextFault, faultID := 2.0, 0
	stale := -1 // cycle whose holder keeps believing
	var staleHolder string
	var staleToken int64
	for cycle := 0; n < ops; cycle++ {
		if t >= nextFault {
			faultID++
			node := fmt.Sprintf("n%d", faultID%5+1)
			var f history.Fault
			var d float64
			switch faultID % 4 {
			case 0:
				f, d = historytest.Cut(faultID, history.PhaseStart, fmt.Sprintf("c%d", faultID%clients+1), "n4", "n5"), 1.0
			case 1:
				f, d = historytest.ClockJump(faultID, history.PhaseStart, node, 3*time.Second), 1.5
			case 2:
				f, d = history.Fault{ID: faultID, Kind: "pause", Phase: history.PhaseStart, Nodes: []string{node}}, 0.8
			default:
				f, d = history.Fault{ID: faultID, Kind: "kill", Phase: history.PhaseStart, Nodes: []string{node}}, 1.0
			}
			b.Fault(at(t), f)
			f.Phase = history.PhaseStop
			stops = append(stops, stop{t + d, f})
			nextFault = t + 3 + rng.Float64()*2
		}
		h := fmt.Sprintf("c%d", cycle%clients+1)
		w := fmt.Sprintf("c%d", (cycle+3)%clients+1)
		if w == staleHolder {
			w = fmt.Sprintf("c%d", (cycle+4)%clients+1)
		}
		grant := 0.0005 + rng.Float64()*0.003
		token++
		b.Add(h, history.Invoke, history.Acquire, "lock", at(t))
		b.Add(w, history.Invoke, history.Acquire, "lock", at(t+0.0001))
		b.Add(h, history.OK, history.Acquire, "lock", at(t+grant), historytest.Deadline(t+2), historytest.Nodes("n1", "n2", "n3"), tok(token))
		b.Add(w, history.Fail, history.Acquire, "lock", at(t+grant+0.0001), historytest.Err("quorum not reached: 2 of 5"))
		t += grant + 0.0003
		b.Add(h, history.Invoke, history.Read, "counter", at(t))
		b.Add(h, history.OK, history.Read, "counter", at(t+0.0004), num(counter))
		t += 0.0006
		b.Add(h, history.Invoke, history.Write, "counter", at(t), num(counter+1), tok(token))
		counter++
		b.Add(h, history.OK, history.Write, "counter", at(t+0.0004), ack(), tok(token))
		t += 0.0006
		n += 4
		if stale < 0 && n >= ops/2 {
			// This holder does not release: its lease runs on while the
			// next client acquires.
			stale, staleHolder, staleToken = cycle, h, token
			t += 0.0005
			continue
		}
		if cycle == stale+1 && staleHolder != "" {
			// The stale holder writes after the new holder did, with
			// its older token, then releases.
			b.Add(staleHolder, history.Invoke, history.Write, "counter", at(t), num(counter), tok(staleToken))
			b.Add(staleHolder, history.OK, history.Write, "counter", at(t+0.0004), ack(), tok(staleToken))
			b.Add(staleHolder, history.Invoke, history.Release, "lock", at(t+0.0006))
			b.Add(staleHolder, history.OK, history.Release, "lock", at(t+0.0009))
			t += 0.001
			n += 2
			staleHolder = ""
		}
		b.Add(h, history.Invoke, history.Release, "lock", at(t))
		b.Add(h, history.OK, history.Release, "lock", at(t+0.0003))
		t += 0.0005
		n++
	}
	at(t + 10) // heal what is still open
	return b.Events()
}

var (
	largeOnce sync.Once
	largeDir  string
	largeErr  error
)

// largeReport writes the report of a 100 k-op run once per test binary.
func largeReport(t testing.TB) string {
	t.Helper()
	largeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "splitbrain-large-")
		if err != nil {
			largeErr = err
			return
		}
		largeDir = dir
		events := longRun(100_000)
		var jsonl []byte
		for _, e := range events {
			line, err := json.Marshal(e)
			if err != nil {
				largeErr = err
				return
			}
			jsonl = append(append(jsonl, line...), '\n')
		}
		if largeErr = os.WriteFile(filepath.Join(dir, runstore.HistoryFile), jsonl, 0o644); largeErr != nil {
			return
		}
		res := checker.Check(events)
		meta := runstore.Meta{Scenario: "long-counter", Lock: "redlock", Seed: 7, Nodes: []string{"n1", "n2", "n3", "n4", "n5"},
			TTL: 2 * time.Second, Duration: time.Duration(events[len(events)-1].Time), Expect: "any",
			Command: "splitbrain run long-counter --seed 7"}
		largeErr = pages.Write(dir, meta, events, res)
	})
	if largeErr != nil {
		t.Fatal(largeErr)
	}
	return largeDir
}

// A 100 k-op run's report stays small: what cannot be drawn one by one is
// merged, and the page says so.
func TestLargeReportIsSmall(t *testing.T) {
	dir := largeReport(t)
	rec, err := runstore.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Result.Verdict != checker.Invalid || rec.Result.ViolationCount != 1 {
		t.Fatalf("fixture: verdict %s with %d overlaps (%s), want the one injected", rec.Result.Verdict, rec.Result.ViolationCount, rec.Result.Reason)
	}
	fi, err := os.Stat(filepath.Join(dir, runstore.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	const limit = 5 << 20
	t.Logf("report.html of a 100k-op run: %d bytes (limit %d)", fi.Size(), limit)
	if fi.Size() >= limit {
		t.Errorf("report.html is %d bytes, want under %d", fi.Size(), limit)
	}
	b, err := os.ReadFile(filepath.Join(dir, runstore.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"too many to draw one by one",           // the timeline says it merged
		"acquires are drawn as",                 // the scatter says it binned
		`class="overlap z"`,                     // the violation is drawn in full
		"a stale token was accepted",            // the resource finding
		"c1 and c2 both believed", "Throughput", // words and rate plot
	} {
		if !strings.Contains(page, want) {
			t.Errorf("large report lacks %q", want)
		}
	}
}

// The large report renders in headless Chromium; the time to its first
// painted frame is logged (speed belongs in a measurement, not in an
// assertion). BenchmarkLargeReportInBrowser measures it repeatedly.
func TestLargeReportInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	dir := largeReport(t)
	started := time.Now()
	p := open(t, ctx, b, filepath.Join(dir, runstore.ReportFile), 1200, 1000, true)
	wall := time.Since(started)
	var got struct {
		Ready    float64
		Shapes   int
		Overlaps int
		Status   string
	}
	if err := p.Eval(ctx, `({Ready: +document.documentElement.getAttribute("data-ready"),
	  Shapes: document.querySelectorAll("svg .z").length,
	  Overlaps: document.querySelectorAll("#timeline-svg rect.overlap").length,
	  Status: document.getElementById("view-status").textContent})`, &got); err != nil {
		t.Fatal(err)
	}
	t.Logf("100k-op report: first frame painted %.0f ms after navigation started (wall %v incl. protocol round trips); %d zoomable shapes; %s",
		got.Ready, wall.Round(time.Millisecond), got.Shapes, got.Status)
	if got.Overlaps != 2 || !strings.HasPrefix(got.Status, "showing ") {
		t.Errorf("large report in the browser: %+v; want the overlap drawn and the view zoomed to it", got)
	}
	screenshot(t, ctx, p, "long-run-report.png", "#timeline", "#throughput")
}

// BenchmarkLargeReportInBrowser reports the milliseconds from navigation to
// the first painted frame of a 100 k-op run's report in headless Chromium.
func BenchmarkLargeReportInBrowser(bm *testing.B) {
	ctx := context.Background()
	path := largeReport(bm)
	br := browser(bm, ctx)
	var total float64
	for i := 0; i < bm.N; i++ {
		p, err := br.NewPage(ctx, 1200, 1000)
		if err != nil {
			bm.Fatal(err)
		}
		if err := p.Navigate(ctx, fileURL(filepath.Join(path, runstore.ReportFile))); err != nil {
			bm.Fatal(err)
		}
		if err := p.WaitFor(ctx, `document.documentElement.hasAttribute("data-ready")`); err != nil {
			bm.Fatal(err)
		}
		var ready float64
		if err := p.Eval(ctx, `+document.documentElement.getAttribute("data-ready")`, &ready); err != nil {
			bm.Fatal(err)
		}
		total += ready
	}
	bm.ReportMetric(total/float64(bm.N), "ms-to-first-frame")
}

// BenchmarkWriteLargeReport measures writing the report of a 100 k-op run.
func BenchmarkWriteLargeReport(bm *testing.B) {
	events := longRun(100_000)
	res := checker.Check(events)
	meta := runstore.Meta{Scenario: "long-counter", Lock: "redlock", Seed: 7}
	dir := bm.TempDir()
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		if err := pages.Write(dir, meta, events, res); err != nil {
			bm.Fatal(err)
		}
	}
}
