package histgen_test

import (
	"bytes"
	"strings"
	"testing"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/history/histgen"
)

// The generator writes what the harness writes: a history the reader
// takes whole, with unknown outcomes, extends, continuation processes and
// faults; the same seed writes the same bytes; the valid variant is valid
// and the other has exactly one overlap. 25 000 operations: past the first
// fault (one every 20 000), half the CPU of the 50 000 it had (15
// CPU-seconds under -race for the four).
func TestMutex(t *testing.T) {
	gen := func(m histgen.Mutex) []byte {
		var buf bytes.Buffer
		if err := m.Write(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, tc := range []struct {
		name       string
		m          histgen.Mutex
		verdict    checker.Verdict
		violations int
	}{
		{"valid", histgen.Mutex{Clients: 8, Ops: 25_000, Seed: 7}, checker.Valid, 0},
		{"violation", histgen.Mutex{Clients: 8, Ops: 25_000, Seed: 7, ViolateAt: 23_750}, checker.Invalid, 1},
		{"4 keys, 32 clients", histgen.Mutex{Clients: 32, Keys: 4, Ops: 25_000, Seed: 7}, checker.Valid, 0},
		{"16 keys, violation", histgen.Mutex{Clients: 8, Keys: 16, Ops: 25_000, Seed: 7, ViolateAt: 23_750}, checker.Invalid, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := gen(tc.m)
			if !bytes.Equal(b, gen(tc.m)) {
				t.Error("the same seed wrote different histories")
			}
			events, err := history.Parse(bytes.NewReader(b), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if u := history.Unfinished(events); u != "" {
				t.Errorf("unfinished: %s", u)
			}
			seen := map[string]int{}
			keys := map[string]bool{}
			for _, e := range events {
				if e.Key != "" {
					keys[e.Key] = true
				}
				switch {
				case e.Type == history.Info && e.F == history.Acquire:
					seen["unknown acquire"]++
				case e.Type == history.Info && e.F == history.Extend:
					seen["unknown extend"]++
				case e.Type == history.OK && e.F == history.Extend:
					seen["extend"]++
				case e.F == history.Nemesis:
					seen["fault"]++
				case strings.Contains(e.Process, "."):
					seen["continuation"]++
				}
			}
			for _, k := range []string{"unknown acquire", "unknown extend", "extend", "fault", "continuation"} {
				if seen[k] == 0 {
					t.Errorf("no %s in %d events", k, len(events))
				}
			}
			want := tc.m.KeyNames()
			if len(keys) != len(want) {
				t.Errorf("%d keys in the history, want %d (%v)", len(keys), len(want), want)
			}
			for _, k := range want {
				if !keys[k] {
					t.Errorf("no operation on key %q", k)
				}
			}
			res := checker.Check(events)
			if res.Verdict != tc.verdict || res.ViolationCount != tc.violations {
				t.Errorf("verdict %s with %d violations, want %s with %d: %s", res.Verdict, res.ViolationCount, tc.verdict, tc.violations, res.Reason)
			}
			if tc.violations > 0 && res.Violations[0].From < events[len(events)*9/10].Time {
				t.Errorf("the violation at %d is not near the end (%d)", res.Violations[0].From, events[len(events)-1].Time)
			}
		})
	}
	if err := (histgen.Mutex{Clients: 0, Ops: 1}).Write(&bytes.Buffer{}); err == nil {
		t.Error("no clients: no error")
	}
}
