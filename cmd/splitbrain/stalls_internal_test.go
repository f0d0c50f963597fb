package main

import (
	"strings"
	"testing"

	"splitbrain/runstore"
)

// The suite's end says how many missed plays had the harness stand
// still; without such a miss it says nothing of stalls.
func TestPrintStalledMisses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plays []runstore.MatrixPlay
		want  string
	}{
		{"a stalled miss", []runstore.MatrixPlay{{AsExpected: false, Stalled: 412e6}, {AsExpected: false}, {AsExpected: true, Stalled: 1e9}},
			"stalls: in 1 of the 2 plays that missed their expectation the harness stood still (up to 412ms)"},
		{"a stalled play that met its expectation", []runstore.MatrixPlay{{AsExpected: true, Stalled: 1e9}, {AsExpected: false}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printStalledMisses(&b, runstore.Matrix{Cells: []runstore.MatrixCell{{Plays: tc.plays}}})
			if got := b.String(); (tc.want == "" && got != "") || !strings.Contains(got, tc.want) {
				t.Errorf("printed %q, want %q", got, tc.want)
			}
		})
	}
}

// The suite's end says how many plays it replayed and how many replays
// met their expectation; without a replay it says nothing of them.
func TestPrintReplays(t *testing.T) {
	first := &runstore.MatrixPlay{AsExpected: false, Stalled: 1500e6}
	for _, tc := range []struct {
		name  string
		plays []runstore.MatrixPlay
		want  string
	}{
		{"two replays, one met", []runstore.MatrixPlay{{AsExpected: true, First: first}, {AsExpected: false, First: first}, {AsExpected: false}},
			"replays: 2 plays missed their expectation while the harness or a driver stood still (up to 1.5s) and were played again alone; 1 of the replays met it"},
		{"no replay", []runstore.MatrixPlay{{AsExpected: false, Stalled: 1e9}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printReplays(&b, runstore.Matrix{Cells: []runstore.MatrixCell{{Plays: tc.plays}}})
			if got := b.String(); (tc.want == "" && got != "") || !strings.Contains(got, tc.want) {
				t.Errorf("printed %q, want %q", got, tc.want)
			}
		})
	}
}
