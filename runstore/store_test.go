package runstore

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/history/historytest"
)

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

func TestNewRunDir(t *testing.T) {
	store := t.TempDir()
	now := time.Date(2026, 11, 22, 7, 30, 12, 123456789, time.FixedZone("CET", 3600))
	first, err := NewRunDir(store, "clock-jump", now)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(store, "clock-jump", "20261122T063012.123Z"); first != want {
		t.Errorf("dir = %s, want %s (UTC, millisecond stamp)", first, want)
	}
	second, err := NewRunDir(store, "clock-jump", now)
	if err != nil {
		t.Fatal(err)
	}
	if second != first+"-2" {
		t.Errorf("same-millisecond run = %s, want %s-2", second, first)
	}
	third, err := NewRunDir(store, "failover", now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{first, second, third} {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf("%s is not a directory: %v", dir, err)
		}
	}
	if !(filepath.Base(first) < filepath.Base(second)) {
		t.Error("run folders do not sort in creation order")
	}

	target, err := os.Readlink(filepath.Join(store, LatestLink))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.IsAbs(target) || target != filepath.Join("failover", filepath.Base(third)) {
		t.Errorf("store/latest -> %s, want the relative path of the newest run", target)
	}
	if got, err := Latest(store); err != nil || got != third {
		t.Errorf("Latest(store) = %s, %v; want %s", got, err, third)
	}
	if got, err := Latest(filepath.Join(store, "clock-jump")); err != nil || got != second {
		t.Errorf("Latest(scenario) = %s, %v; want %s", got, err, second)
	}
	// The link resolves from anywhere: it is relative to the store.
	if fi, err := os.Stat(filepath.Join(store, LatestLink)); err != nil || !fi.IsDir() {
		t.Errorf("store/latest does not resolve to a directory: %v", err)
	}
	assertNoTemp(t, store)

	for _, bad := range []string{"", ".", "..", "latest", "a/b", `a\b`, ".hidden"} {
		if _, err := NewRunDir(store, bad, now); err == nil {
			t.Errorf("scenario name %q accepted", bad)
		}
	}
}

func TestWriteAtomicLeavesNothingOnError(t *testing.T) {
	dir := t.TempDir()
	boom := errors.New("boom")
	err := writeAtomic(dir, ResultFile, func(w io.Writer) error {
		io.WriteString(w, `{"half":`)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want it to wrap the writer's error", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
	// An existing file is replaced whole, never truncated in place.
	if err := writeAtomic(dir, ResultFile, func(w io.Writer) error { _, err := io.WriteString(w, "one"); return err }); err != nil {
		t.Fatal(err)
	}
	_ = writeAtomic(dir, ResultFile, func(w io.Writer) error { io.WriteString(w, "tw"); return boom })
	if got := readFile(t, filepath.Join(dir, ResultFile)); got != "one" {
		t.Errorf("after a failed rewrite the file holds %q, want the old content", got)
	}
	assertNoTemp(t, dir)
}

func TestStampFormat(t *testing.T) {
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Format(stampLayout)
	if !regexp.MustCompile(`^\d{8}T\d{6}\.\d{3}Z$`).MatchString(stamp) || stamp != "20260102T030405.000Z" {
		t.Errorf("stamp = %s", stamp)
	}
}

// A cell's tally on both sides of each edge: flaky only when a cell that
// expects a verdict disagrees with itself; a finding only when a random
// schedule broke at least once.
func TestMatrixCellTally(t *testing.T) {
	for _, tc := range []struct {
		name           string
		expect         string
		verdicts       []checker.Verdict
		met            []bool // nil: met where invalid
		flaky, finding bool
	}{
		{"scripted N/N", "violation", []checker.Verdict{checker.Invalid, checker.Invalid}, nil, false, false},
		{"scripted 0/N", "safe", []checker.Verdict{checker.Valid, checker.Valid}, []bool{true, true}, false, false},
		{"scripted 1/2", "violation", []checker.Verdict{checker.Invalid, checker.Valid}, nil, true, false},
		{"safe 1/2", "safe", []checker.Verdict{checker.Invalid, checker.Valid}, []bool{false, true}, true, false},
		{"random 0/2", "any", []checker.Verdict{checker.Valid, checker.Valid}, nil, false, false},
		{"random 1/2", "any", []checker.Verdict{checker.Valid, checker.Invalid}, nil, false, true},
		// The lock's answer kept, the critical sections overlapping in one
		// play (P2): met both times, not flaky.
		{"lock safe, P2 1/2", "lock safe", []checker.Verdict{checker.Invalid, checker.Valid}, []bool{true, true}, false, false},
		// A race the story does not pin: either answer, a finding.
		{"lock any 1/2", "lock any", []checker.Verdict{checker.Valid, checker.Invalid}, []bool{true, true}, false, true},
		{"lock violation 1/2", "lock violation", []checker.Verdict{checker.Invalid, checker.Valid}, []bool{true, false}, true, false},
	} {
		c := MatrixCell{Expect: tc.expect}
		for i, v := range tc.verdicts {
			met := v == checker.Invalid
			if tc.met != nil {
				met = tc.met[i]
			}
			c.Plays = append(c.Plays, MatrixPlay{Verdict: v, AsExpected: met})
		}
		for i := range c.Plays {
			c.Plays[i].Report = fmt.Sprintf("run%d/report.html", i)
		}
		c.Tally()
		if c.Flaky != tc.flaky || c.Finding != tc.finding {
			t.Errorf("%s: flaky %v finding %v, want %v %v", tc.name, c.Flaky, c.Finding, tc.flaky, tc.finding)
		}
		// A flaky cell names the play that missed its expectation.
		if tc.name == "scripted 1/2" && (c.FirstUnmet != "run1/report.html" || c.FirstFailing != "run0/report.html") {
			t.Errorf("%s: first unmet %q, first failing %q", tc.name, c.FirstUnmet, c.FirstFailing)
		}
	}
}

// Wilson's interval at the edges and in the middle, against values
// computed by hand.
func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 20, 0, 0.1611},
		{20, 20, 0.8389, 1},
		{7, 20, 0.1812, 0.5671},
		{0, 0, 0, 1},
	} {
		lo, hi := Wilson(tc.k, tc.n)
		if math.Abs(lo-tc.lo) > 1e-3 || math.Abs(hi-tc.hi) > 1e-3 {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

// Only the first windows carry events, each at most MaxWindowEvents: many
// violations, each with a crowd around it, keep result.json small.
func TestWindowsBounded(t *testing.T) {
	b := &historytest.Builder{}
	const pairs = 8
	for i := range pairs {
		at := float64(i) * 10
		b.Acquire("c1", "k", at+0.1, at+0.2, at+5)
		for j := range MaxWindowEvents {
			// c3's refused acquires crowd the window.
			t := at + 0.3 + float64(j)*0.01
			b.Add("c3", history.Invoke, history.Acquire, "k", t)
			b.Add("c3", history.Fail, history.Acquire, "k", t+0.001)
		}
		b.Acquire("c2", "k", at+2, at+2.1, at+6)
		b.Release("c1", "k", at+3, at+3.1)
		b.Release("c2", "k", at+4, at+4.1)
	}
	events := b.Events()
	res := checker.Check(events)
	if res.Verdict != checker.Invalid || res.ViolationCount != pairs {
		t.Fatalf("fixture: %s, %d violations: %s", res.Verdict, res.ViolationCount, res.Reason)
	}
	ws := windows(res, events)
	if len(ws) != 2*pairs {
		t.Fatalf("%d windows, want %d", len(ws), 2*pairs)
	}
	for i, w := range ws {
		n := i % pairs
		switch {
		case len(w.Beliefs) != 2:
			t.Errorf("window %d: %d beliefs", i, len(w.Beliefs))
		case n < WindowsWithEvents && (len(w.Events) != MaxWindowEvents || w.MoreEvents == 0):
			t.Errorf("window %d: %d events, %d more; want %d listed and the rest counted", i, len(w.Events), w.MoreEvents, MaxWindowEvents)
		case n >= WindowsWithEvents && (len(w.Events) != 0 || w.MoreEvents != 0):
			t.Errorf("window %d: %d events listed, want none past the first %d", i, len(w.Events), WindowsWithEvents)
		}
	}
}
