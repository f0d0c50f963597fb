package pages_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/locks"
	"splitbrain/pages"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

// TestMatrixInBrowser plays a real suite — three stories against every
// lock kind, side by side — assembles its matrix from the run folders
// alone, and checks the rendered matrix.html in headless Chromium: rows
// grouped by fault family, a column per lock, cells coloured by their
// rate with the lock's promise and the resource apart, n/a cells that say
// why on hover, links to reports that exist, the seeds and the re-run
// command at the top. With -update-docs it plays every built-in story
// (the dense suite) for the README's screenshot.
func TestMatrixInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	names := []string{"clock-jump", "pause-critical-section", "pause-critical-section-fenced", "failover"}
	if *updateDocs {
		names = spec.Builtin()
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
	cells := suite.Cells(scs, locks.Matrix())
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
	if err := pages.WriteMatrix(store, m); err != nil {
		t.Fatal(err)
	}
	p := open(t, ctx, b, filepath.Join(store, runstore.MatrixFile), 1400, 900, false)
	var page struct {
		Families []string
		Locks    []string
		Seeds    string
		Rerun    string
		Cells    []struct {
			Row, Lock, Class, Title, Href, Rate, LockBg, ResBg string
		}
	}
	if err := p.Eval(ctx, `(() => {
	  const locks = [...document.querySelectorAll("thead th.lock-col")].map(th => th.textContent);
	  const cells = [];
	  for (const tr of document.querySelectorAll("tbody.family tr:not(.family-row)")) {
	    [...tr.querySelectorAll("td")].forEach((td, i) => {
	      const a = td.querySelector("a.cell-link"), l = td.querySelector(".half.lock"), r = td.querySelector(".half.res");
	      cells.push({Row: tr.querySelector("th").textContent, Lock: locks[i], Class: td.className, Title: td.title,
	        Href: a ? a.getAttribute("href") || "" : "", Rate: (td.querySelector(".rate") || {}).textContent || "",
	        LockBg: l ? getComputedStyle(l).backgroundColor : "", ResBg: r ? getComputedStyle(r).backgroundColor : ""});
	    });
	  }
	  return {Families: [...document.querySelectorAll("tr.family-row th")].map(th => th.textContent), Locks: locks,
	    Seeds: document.querySelector(".seeds").textContent, Rerun: document.querySelector("code.rerun").textContent, Cells: cells};
	})()`, &page); err != nil {
		t.Fatal(err)
	}
	if strings.Join(page.Locks, ",") != strings.Join(locks.Matrix(), ",") {
		t.Errorf("columns %v, want %v", page.Locks, locks.Matrix())
	}
	for _, f := range []string{"clock", "process pause", "failover"} {
		if !strings.Contains(strings.Join(page.Families, "|"), f) {
			t.Errorf("no row group %q in %v", f, page.Families)
		}
	}
	if !strings.Contains(page.Seeds, "seed 5") || !strings.Contains(page.Rerun, "--seed 5") {
		t.Errorf("top: seeds %q, re-run %q", page.Seeds, page.Rerun)
	}
	const green, red = "rgb(26, 127, 55)", "rgb(207, 34, 46)"
	got := map[string]bool{}
	for _, c := range page.Cells {
		key := c.Row + "/" + c.Lock
		got[key] = true
		switch {
		case strings.Contains(c.Class, "cell-na"):
			if !strings.HasPrefix(c.Title, "n/a: ") || len(c.Title) < 20 {
				t.Errorf("%s: n/a without a reason on hover: %q", key, c.Title)
			}
		case strings.Contains(c.Class, "cell-rated"):
			if c.Href == "" {
				t.Errorf("%s: no link to a report", key)
			} else if _, err := os.Stat(filepath.Join(store, filepath.FromSlash(c.Href))); err != nil {
				t.Errorf("%s: links to a missing report: %v", key, err)
			}
		default:
			t.Errorf("%s: neither played nor n/a (%q)", key, c.Class)
		}
	}
	cell := func(row, lock string) (c struct{ Row, Lock, Class, Title, Href, Rate, LockBg, ResBg string }) {
		for _, x := range page.Cells {
			if x.Row == row && x.Lock == lock {
				return x
			}
		}
		t.Errorf("no cell %s/%s", row, lock)
		return c
	}
	// The clock jump breaks the lock: 1/1. Its lock half is red when the
	// play broke the lock's promise (P1) and green when only the critical
	// sections overlapped — under CI's load a stalled harness once let
	// c1's belief end first (WriteMatrix's tally, shared with m.Cells).
	wantLock := green
	for _, mc := range m.Cells {
		if mc.Scenario == "clock-jump" && mc.Lock == "redlock" && mc.LockBroken > 0 {
			wantLock = red
		}
	}
	if c := cell("clock-jump", "redlock"); c.Rate != "1/1" || c.LockBg != wantLock {
		t.Errorf("clock-jump/redlock: %s, lock half %s, want 1/1 with the lock half %s", c.Rate, c.LockBg, wantLock)
	}
	// Kleppmann's figure 1: the lock keeps its promise, the resource does
	// not — a green half and a red one.
	if c := cell("pause-critical-section", "redsync"); c.LockBg != green || c.ResBg != red {
		t.Errorf("pause-critical-section/redsync: lock %s, resource %s; want green and red", c.LockBg, c.ResBg)
	}
	// With fencing both halves stay green.
	if c := cell("pause-critical-section-fenced", "fenced-two-round"); c.LockBg != green || c.ResBg != green {
		t.Errorf("pause-critical-section-fenced/fenced-two-round: lock %s, resource %s; want both green", c.LockBg, c.ResBg)
	}
	if c := cell("clock-jump", "single"); !strings.Contains(c.Title, "quorum story") {
		t.Errorf("clock-jump/single: hover %q, want why a one-node lock does not fit", c.Title)
	}
	if c := cell("pause-critical-section-fenced", "redlock"); !strings.Contains(c.Title, "fencing token") {
		t.Errorf("pause-critical-section-fenced/redlock: hover %q, want why a lock without tokens does not fit", c.Title)
	}
	if len(got) != len(names)*len(locks.Matrix()) {
		t.Errorf("%d cells on the page, want %d", len(got), len(names)*len(locks.Matrix()))
	}
	var alerted int
	_ = p.Eval(ctx, `window.alerted || 0`, &alerted)
	if alerted != 0 {
		t.Errorf("alert called %d times", alerted)
	}
	if err := p.SetViewport(ctx, 1800, 900); err != nil { // eight lock columns and the story names
		t.Fatal(err)
	}
	screenshot(t, ctx, p, "safety-matrix.png", ".plain-header", "table.matrix")
}
