package checker

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time the process has used, every goroutine and the
// garbage collector included: on a machine shared with other work it is
// steadier than the wall time the benchmark reports.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Benchmarks of the checker on synthetic lease-lock histories (synthLock):
// 8 or 32 clients contending for 1, 4 or 16 keys; an op is an invoke and
// its completion, as in Jepsen. Numbers go to BENCHMARKS.md, never into
// test assertions.

func benchCheck(b *testing.B, s synthLock) {
	events := s.events()
	b.ReportAllocs()
	b.ResetTimer()
	var res Result
	cpu := cpuTime(b)
	for b.Loop() {
		res = Check(events, WithTimeout(time.Minute))
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "cpu-ms/op")
	if res.Verdict != Valid {
		b.Fatalf("verdict %s: %s", res.Verdict, res.Reason)
	}
	b.ReportMetric(float64(res.Ops), "porcupine-ops")
	b.ReportMetric(float64(len(events)), "events")
}

func BenchmarkLeaseLock(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		for _, keys := range []int{1, 4, 16} {
			for _, clients := range []int{8, 32} {
				if n < 1_000_000 && (keys > 4 || clients > 8) {
					continue // every shape is measured at 1 M
				}
				b.Run(fmt.Sprintf("ops=%dk/keys=%d/clients=%d", n/1000, keys, clients), func(b *testing.B) {
					benchCheck(b, synthLock{clients: clients, keys: keys, ops: n, seed: 1})
				})
			}
		}
	}
}

// One injected overlap in 100k ops: the verdict and porcupine's page of
// the failing window only.
func BenchmarkLeaseLockOverlap(b *testing.B) {
	for _, keys := range []int{1, 4} {
		b.Run(fmt.Sprintf("ops=100k/keys=%d", keys), func(b *testing.B) {
			events := synthLock{clients: 8, keys: keys, ops: 100_000, seed: 1, overlapAt: 50_000}.events()
			b.ReportAllocs()
			b.ResetTimer()
			var buf bytes.Buffer
			var res Result
			cpu := cpuTime(b)
			for b.Loop() {
				buf.Reset()
				res = Check(events, WithTimeout(time.Minute))
				if err := res.WriteVisualization(&buf); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "cpu-ms/op")
			if res.Verdict != Invalid || res.ViolationCount != 1 {
				b.Fatalf("verdict %s with %d violations: %s", res.Verdict, res.ViolationCount, res.Reason)
			}
			b.ReportMetric(float64(buf.Len()), "viz-bytes")
			b.ReportMetric(float64(len(res.viz.Ops)), "viz-ops")
		})
	}
}
