package pages_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/history/histgen"
	"splitbrain/pages"
	"splitbrain/runstore"
)

// The user's path on a long history, as `splitbrain check RUN_DIR` takes
// it: read history.jsonl, check it, write result.json, report.html and
// (when invalid) porcupine.html. Histories come from histgen (8 clients on
// one lock, unknown acquires and extends, cuts); "violation" has one
// overlap after 95 % of the operations. Numbers go to BENCHMARKS.md, never
// into assertions; the end-to-end table there is measured on the binary
// with /usr/bin/time (scripts/bench-check.sh).
func BenchmarkCheckPath(b *testing.B) {
	for _, ops := range []int{100_000, 1_000_000} {
		for _, violation := range []bool{false, true} {
			name := fmt.Sprintf("ops=%dk/valid", ops/1000)
			m := histgen.Mutex{Clients: 8, Ops: ops, Seed: 1}
			want := checker.Valid
			if violation {
				name = fmt.Sprintf("ops=%dk/violation", ops/1000)
				m.ViolateAt = ops / 100 * 95
				want = checker.Invalid
			}
			b.Run(name, func(b *testing.B) { benchCheckPath(b, m, want) })
		}
	}
}

func benchCheckPath(b *testing.B, m histgen.Mutex, want checker.Verdict) {
	dir := b.TempDir()
	path := filepath.Join(dir, runstore.HistoryFile)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Write(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	meta := runstore.Meta{Scenario: "histgen-mutex", Clients: []string{"c1"}}

	var events []history.Event
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			events, err = history.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(events)), "events")
	})
	var res checker.Result
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res = checker.Check(events)
		}
		if res.Verdict != want {
			b.Fatalf("verdict %s, want %s: %s", res.Verdict, want, res.Reason)
		}
	})
	b.Run("write", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := pages.Write(dir, meta, events, res); err != nil {
				b.Fatal(err)
			}
		}
		fi, err := os.Stat(filepath.Join(dir, runstore.ResultFile))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(fi.Size()), "result-bytes")
	})
	events, res = nil, checker.Result{}
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			events, err := history.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			res := checker.Check(events)
			if err := pages.Write(dir, meta, events, res); err != nil {
				b.Fatal(err)
			}
		}
	})
}
