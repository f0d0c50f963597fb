package checker

import (
	"testing"
	"time"
)

func benchCheck(b *testing.B, s synthLock) {
	events := s.events()
	b.ResetTimer()
	for b.Loop() {
		res := Check(events, WithTimeout(time.Minute))
		b.ReportMetric(float64(res.Ops), "porcupine-ops")
		_ = res
	}
}

func BenchmarkLeaseLock100k(b *testing.B) {
	benchCheck(b, synthLock{clients: 8, keys: 4, ops: 100_000, seed: 1})
}
func BenchmarkLeaseLock1M(b *testing.B) {
	benchCheck(b, synthLock{clients: 8, keys: 1, ops: 1_000_000, seed: 1})
}
