package main_test

import (
	"flag"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"splitbrain/results"
)

var benchParallel = flag.Int("suite.parallel", 0, "BenchmarkSuite*: --parallel for the suite (0: the command's default)")

// The suite's speed goals (issue 15) as benchmarks, not timed tests: the
// dense matrix — every built-in story against every lock it fits, once —
// within 90 s, and `suite --runs 10` within 10 minutes, on a 2-core
// machine. Each iteration plays the whole suite through the command, as
// make suite does, and reports its wall time, the plays it made and
// goal-ratio (wall time over the goal: 1 or less meets it). A play that
// misses its expectation fails the benchmark: a faster suite that changes
// verdicts is no faster suite. Minutes per iteration; run one alone:
//
//	go test ./cmd/splitbrain -run '^$' -bench 'SuiteDense$' -benchtime 1x
//	go test ./cmd/splitbrain -run '^$' -bench 'SuiteDense$' -benchtime 1x -suite.parallel 8
func BenchmarkSuiteDense(b *testing.B) { benchSuite(b, 90*time.Second) }

// BenchmarkSuiteRuns10 is `suite --runs 10` (the goal: 10 minutes); about
// ten times BenchmarkSuiteDense.
func BenchmarkSuiteRuns10(b *testing.B) { benchSuite(b, 10*time.Minute, "--runs", "10") }

func benchSuite(b *testing.B, goal time.Duration, extra ...string) {
	e := newEnv(b)
	var wall time.Duration
	plays := 0
	for i := 0; i < b.N; i++ {
		store := filepath.Join(b.TempDir(), "runs")
		args := append([]string{"suite", "--seed", "5", "--store", store}, extra...)
		if *benchParallel > 0 {
			args = append(args, "--parallel", strconv.Itoa(*benchParallel))
		}
		started := time.Now()
		res := e.runFor(2*time.Hour, args...)
		wall += time.Since(started)
		m, err := results.ReadMatrix(store)
		if err != nil {
			b.Fatalf("exit %d, no matrix: %v\n%s", res.code, err, res.stderr)
		}
		for _, c := range m.Cells {
			plays += c.Runs
			if c.Met != c.Runs {
				b.Errorf("%s against %s: %d of %d plays met %s", c.Scenario, c.Lock, c.Met, c.Runs, c.Expect)
			}
		}
		if res.code != 0 {
			b.Errorf("exit code %d, want 0", res.code)
		}
	}
	per := wall / time.Duration(b.N)
	b.ReportMetric(per.Seconds(), "s/suite")
	b.ReportMetric(float64(plays)/float64(b.N), "plays/suite")
	b.ReportMetric(per.Seconds()/goal.Seconds(), "goal-ratio")
}
