package runstore

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
)

const (
	V = checker.Valid
	I = checker.Invalid
	U = checker.Unknown
)

// answers builds a play's answers: lock, resource, deadlock freedom,
// fault tolerance ("" for none).
func answers(lock, res, df, ft checker.Verdict) MatrixPlay {
	return MatrixPlay{Verdict: lock, Answers: checker.Answers{Lock: lock, Resource: res, DeadlockFreedom: df, FaultTolerance: ft}}
}

// A cell's liveness and availability tally on both sides of each edge:
// an unanswered promise is not counted, unknown is counted apart from
// broken, a play broke liveness when it broke either promise, shares
// come from plays with attempts only.
func TestMatrixCellLivenessTally(t *testing.T) {
	sec := int64(time.Second)
	for _, tc := range []struct {
		name  string
		plays []MatrixPlay
		// deadlock runs/broken/unknown, fault tolerance, liveness,
		// lock unknown, resource unknown
		want [11]int
	}{
		{"no liveness answers (an old result)", []MatrixPlay{answers(V, "", "", "")}, [11]int{}},
		{"both kept", []MatrixPlay{answers(V, V, V, V)}, [11]int{1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0}},
		{"deadlock freedom broken once of two", []MatrixPlay{answers(V, "", I, V), answers(V, "", V, V)}, [11]int{2, 1, 0, 2, 0, 0, 2, 1, 0, 0, 0}},
		{"fault tolerance unknown, not broken", []MatrixPlay{answers(V, "", V, U)}, [11]int{1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0}},
		{"one broken, the other unknown: liveness broken", []MatrixPlay{answers(V, "", I, U)}, [11]int{1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 0}},
		{"lock and resource unknown", []MatrixPlay{answers(U, U, V, V)}, [11]int{1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1}},
		{"a play without answers (an old matrix.json): its verdict is the lock's", []MatrixPlay{{Verdict: U}}, [11]int{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}},
		{"only fault tolerance answered", []MatrixPlay{answers(V, "", "", I)}, [11]int{0, 0, 0, 1, 1, 0, 1, 1, 0, 0, 0}},
	} {
		c := MatrixCell{Plays: tc.plays}
		c.Tally()
		got := [11]int{c.DeadlockRuns, c.DeadlockBroken, c.DeadlockUnknown, c.FaultRuns, c.FaultBroken, c.FaultUnknown,
			c.LivenessRuns, c.LivenessBroken, c.LivenessUnknown, c.LockUnknown, c.ResourceUnknown}
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name                      string
		figs                      []*PlayAvailability
		runs, shareRuns           int
		median, worst             float64
		longest, heal, expiryWant int64
	}{
		{"no figures", []*PlayAvailability{nil}, 0, 0, 0, 0, 0, 0, 0},
		{"a play without attempts has no share", []*PlayAvailability{{}}, 1, 0, 0, 0, 0, 0, 0},
		{"one play", []*PlayAvailability{{Attempts: 4, Granted: 1, Longest: 2 * sec, MaxHealDelay: sec, Expiry: 5 * sec}}, 1, 1, 0.25, 0.25, 2 * sec, sec, 5 * sec},
		{"odd count: the middle share", []*PlayAvailability{{Attempts: 10, Granted: 9}, {Attempts: 10, Granted: 1}, {Attempts: 10, Granted: 5}}, 3, 3, 0.5, 0.1, 0, 0, 0},
		{"even count: the mean of the middle two, the longest of any", []*PlayAvailability{{Attempts: 10, Granted: 2, Longest: sec},
			{Attempts: 10, Granted: 4, Longest: 3 * sec, MaxHealDelay: 2 * sec}, nil, {Attempts: 0}}, 3, 2, 0.3, 0.2, 3 * sec, 2 * sec, 0},
		{"nothing granted is a share of 0", []*PlayAvailability{{Attempts: 3}}, 1, 1, 0, 0, 0, 0, 0},
	} {
		c := MatrixCell{}
		for _, f := range tc.figs {
			c.Plays = append(c.Plays, MatrixPlay{Verdict: V, Answers: checker.Answers{Lock: V}, Availability: f})
		}
		c.Tally()
		if c.AvailRuns != tc.runs || c.ShareRuns != tc.shareRuns || math.Abs(c.MedianShare-tc.median) > 1e-9 || c.WorstShare != tc.worst ||
			c.LongestUnavailable != tc.longest || c.MaxHealDelay != tc.heal || c.Expiry != tc.expiryWant {
			t.Errorf("%s: runs %d/%d median %v worst %v longest %d heal %d expiry %d", tc.name, c.AvailRuns, c.ShareRuns,
				c.MedianShare, c.WorstShare, c.LongestUnavailable, c.MaxHealDelay, c.Expiry)
		}
	}
}

// PlayOf reads the availability figures from the record.
func TestPlayOfAvailability(t *testing.T) {
	var rec Record
	rec.Result.Verdict = V
	if p := PlayOf("d", rec); p.Availability != nil {
		t.Errorf("a result without figures gave %+v", p.Availability)
	}
	rec.Result.Availability = &checker.Availability{Attempts: 8, Granted: 6, MaxHealDelay: 7, Expiry: 9,
		Longest: &checker.Stretch{From: 10, To: 40}}
	rec.Result.Liveness = &checker.LivenessResult{DeadlockFreedom: checker.LivenessPromise{Verdict: I}, FaultTolerance: checker.LivenessPromise{Verdict: V}}
	p := PlayOf("d", rec)
	if a := p.Availability; a == nil || *a != (PlayAvailability{Attempts: 8, Granted: 6, Longest: 30, MaxHealDelay: 7, Expiry: 9}) {
		t.Errorf("figures %+v", p.Availability)
	}
	if p.Answers.DeadlockFreedom != I || p.Answers.FaultTolerance != V {
		t.Errorf("answers %+v", p.Answers)
	}
	if p.Stalled != 0 {
		t.Errorf("stalled %d without a stall", p.Stalled)
	}
	rec.Result.Stalls = []checker.Stall{{End: 5e9, For: 120e6}, {End: 9e9, For: 450e6}}
	if p := PlayOf("d", rec); p.Stalled != 450e6 {
		t.Errorf("stalled %d, want the longest, 450 ms", p.Stalled)
	}
}

// The misses are counted, and of them those with the harness stalled;
// plays that met their expectation are not, stalled or not.
func TestStalledMisses(t *testing.T) {
	m := Matrix{Cells: []MatrixCell{
		{Plays: []MatrixPlay{{AsExpected: true, Stalled: 900e6}, {AsExpected: false}}},
		{Plays: []MatrixPlay{{AsExpected: false, Stalled: 300e6}, {AsExpected: false, Stalled: 200e6}}},
		{NA: "n/a"},
	}}
	if missed, stalled, longest := m.StalledMisses(); missed != 3 || stalled != 2 || longest != 300*time.Millisecond {
		t.Errorf("missed %d, stalled %d, longest %v; want 3, 2, 300ms", missed, stalled, longest)
	}
	if missed, stalled, longest := (Matrix{}).StalledMisses(); missed != 0 || stalled != 0 || longest != 0 {
		t.Errorf("an empty matrix: %d %d %v", missed, stalled, longest)
	}
}

// Replays counts the plays that replay a first one, those that met their
// expectation, and the longest stall of a first play; a cell tallies its
// replays, each one play.
func TestReplays(t *testing.T) {
	c := MatrixCell{Expect: "safe", Plays: []MatrixPlay{
		{Verdict: checker.Valid, AsExpected: true, First: &MatrixPlay{Verdict: checker.Invalid, Stalled: 700e6}},
		{Verdict: checker.Invalid, AsExpected: false, First: &MatrixPlay{Verdict: checker.Invalid, Stalled: 1200e6}},
		{Verdict: checker.Valid, AsExpected: true, Stalled: 2000e6},
	}}
	c.Tally()
	if c.Runs != 3 || c.Met != 2 || c.Replayed != 2 || c.Invalid != 1 {
		t.Errorf("cell: %d runs, %d met, %d replayed, %d invalid; want 3, 2, 2, 1", c.Runs, c.Met, c.Replayed, c.Invalid)
	}
	m := Matrix{Cells: []MatrixCell{c, {NA: "n/a"}}}
	if replayed, met, longest := m.Replays(); replayed != 2 || met != 1 || longest != 1200*time.Millisecond {
		t.Errorf("replayed %d, met %d, longest %v; want 2, 1, 1.2s (a first play's, not a replay's)", replayed, met, longest)
	}
	if replayed, met, longest := (Matrix{}).Replays(); replayed != 0 || met != 0 || longest != 0 {
		t.Errorf("an empty matrix: %d %d %v", replayed, met, longest)
	}
}

// A matrix.json written before the liveness tally reads, with the new
// counts zero (no row answers liveness), and its summary counts safety.
func TestOldMatrixJSONReads(t *testing.T) {
	dir := t.TempDir()
	const old = `{"seed": 1, "scenarios": ["clock-jump"], "locks": ["redlock"], "cells": [
	  {"scenario": "clock-jump", "lock": "redlock", "family": "clock", "expect": "violation",
	   "plays": [{"seed": 1, "verdict": "invalid", "answers": {"lock": "invalid"}, "as_expected": true, "dir": "r1"}],
	   "runs": 1, "invalid": 1, "unknown": 0, "lock_broken": 1, "resource_harmed": 0, "resource_runs": 0, "met": 1,
	   "rate": 1, "interval_95": [0.2, 1]}]}`
	if err := os.WriteFile(filepath.Join(dir, MatrixJSON), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMatrix(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Cells[0]
	if c.LockBroken != 1 || c.DeadlockRuns != 0 || c.LivenessRuns != 0 || c.AvailRuns != 0 || c.Plays[0].Availability != nil {
		t.Errorf("old cell read as %+v", c)
	}
	s := m.Summary()
	if len(s) != 1 || s[0].Safety.Rows != 1 || !slices.Equal(s[0].Safety.Broken, []string{"clock-jump"}) || s[0].DeadlockFreedom.Rows != 0 || s[0].Price() != "" {
		t.Errorf("summary %+v", s)
	}
	if got, want := s[0].String(), "redlock: safety kept in 0 of 1 (broken by clock-jump)"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	// And the new fields survive a round trip.
	m.Cells[0].Plays[0].Availability = &PlayAvailability{Attempts: 2, Granted: 1, Longest: 5}
	m.Cells[0].Plays[0].Answers.DeadlockFreedom = I
	m.Cells[0].Tally()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Matrix
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if bc := back.Cells[0]; bc.DeadlockBroken != 1 || bc.LongestUnavailable != 5 || bc.MedianShare != 0.5 || bc.Plays[0].Availability.Granted != 1 {
		t.Errorf("round trip: %+v", bc)
	}
}

// cell is a tallied cell of row and lock from its plays.
func cell(row, lock string, plays ...MatrixPlay) MatrixCell {
	c := MatrixCell{Scenario: row, Lock: lock, Plays: plays}
	c.Tally()
	return c
}

// The per-lock summary from hand-made cells, each rule at both sides of
// its edge: n/a and unplayed cells are not counted, a row is broken when
// one play broke the promise and unknown (apart, never kept) when none
// did and one could not tell, a promise no play answered counts no row,
// the price is the worst row's.
func TestSummary(t *testing.T) {
	sec := int64(time.Second)
	withFigs := func(p MatrixPlay, a PlayAvailability) MatrixPlay { p.Availability = &a; return p }
	m := Matrix{
		Scenarios: []string{"a", "b", "c", "d", "e"},
		Locks:     []string{"redlock", "zookeeper", "single"},
		Cells: []MatrixCell{
			// Out of row order: the summary lists rows in the matrix's.
			cell("c", "redlock", answers(V, V, V, U)),
			cell("a", "redlock", answers(I, "", V, V), answers(V, "", V, V)),
			cell("b", "redlock", withFigs(answers(V, I, I, V), PlayAvailability{Attempts: 10, Granted: 4, Longest: 2 * sec, MaxHealDelay: sec, Expiry: 5 * sec})),
			{Scenario: "d", Lock: "redlock", NA: "the fault cannot exist here"},
			cell("e", "redlock"), // not played (a cut-short suite)
			cell("a", "zookeeper", withFigs(answers(V, "", V, V), PlayAvailability{Attempts: 10, Granted: 10})),
			cell("b", "zookeeper", answers(U, "", "", "")),
			{Scenario: "a", Lock: "single", NA: "why"},
		},
	}
	s := m.Summary()
	if len(s) != 3 || s[0].Lock != "redlock" || s[1].Lock != "zookeeper" || s[2].Lock != "single" {
		t.Fatalf("summary %+v", s)
	}
	r := s[0]
	for _, tc := range []struct {
		got             PromiseTally
		rows, kept      int
		broken, unknown []string
	}{
		{r.Safety, 3, 2, []string{"a"}, nil},
		{r.Resource, 2, 1, []string{"b"}, nil}, // a has no resource: not counted
		{r.DeadlockFreedom, 3, 2, []string{"b"}, nil},
		{r.FaultTolerance, 3, 2, nil, []string{"c"}},
		{s[1].Safety, 2, 1, nil, []string{"b"}},
		{s[1].DeadlockFreedom, 1, 1, nil, nil}, // b answered no liveness
		{s[2].Safety, 0, 0, nil, nil},
	} {
		if tc.got.Rows != tc.rows || tc.got.Kept != tc.kept || !slices.Equal(tc.got.Broken, tc.broken) || !slices.Equal(tc.got.Unknown, tc.unknown) {
			t.Errorf("%s: %+v, want %d rows, %d kept, broken %v, unknown %v", tc.got.Promise, tc.got, tc.rows, tc.kept, tc.broken, tc.unknown)
		}
	}
	if r.Played != 3 || r.NA != 1 || s[2].Played != 0 || s[2].NA != 1 {
		t.Errorf("played/n/a: redlock %d/%d, single %d/%d", r.Played, r.NA, s[2].Played, s[2].NA)
	}
	// Every promise kept: only zookeeper under a; c's unknown is not kept.
	if len(r.KeptAll) != 0 || !slices.Equal(s[1].KeptAll, []string{"a"}) {
		t.Errorf("kept all: redlock %v, zookeeper %v", r.KeptAll, s[1].KeptAll)
	}
	if r.AvailRows != 1 || r.WorstShare != 0.4 || r.WorstShareRow != "b" || r.LongestUnavailable != 2*sec || r.MaxHealDelay != sec || r.Expiry != 5*sec {
		t.Errorf("redlock's price %+v", r)
	}
	for _, tc := range []struct{ got, want string }{
		{r.String(), "redlock: safety kept in 2 of 3 (broken by a); resource 1/2 (broken by b); deadlock freedom 2/3 (broken by b); " +
			"fault tolerance 2/3 (unknown in c); granted 40% of attempts in its worst row (b), unavailable up to 2.00s (b), " +
			"next grant ≤ 1.00s after a heal (b), expiry 5.00s; n/a in 1 row"},
		{s[1].String(), "zookeeper: safety kept in 1 of 2 (unknown in b); deadlock freedom 1/1; fault tolerance 1/1; " +
			"granted 100% of attempts in its worst row (a), never unavailable while clients tried"},
		{s[2].String(), "single: nothing played (n/a in 1 row)"},
		{Matrix{Locks: []string{"x"}}.Summary()[0].String(), "x: nothing played"},
	} {
		if tc.got != tc.want {
			t.Errorf("line\n%q, want\n%q", tc.got, tc.want)
		}
	}
}

// ListNames cuts long lists at the limit and not before.
func TestListNames(t *testing.T) {
	names := []string{"a", "b", "c"}
	for _, tc := range []struct {
		limit int
		want  string
	}{{0, "a, b, c"}, {3, "a, b, c"}, {2, "a, b and 1 more"}, {1, "a and 2 more"}} {
		if got := ListNames(names, tc.limit); got != tc.want {
			t.Errorf("limit %d: %q, want %q", tc.limit, got, tc.want)
		}
	}
	if got := (PromiseTally{}).Text(0); !strings.Contains(got, "not answered") {
		t.Errorf("empty tally: %q", got)
	}
}
