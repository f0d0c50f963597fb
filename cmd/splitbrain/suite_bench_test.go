package main_test

import (
	"context"
	"flag"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/runstore"
)

var benchParallel = flag.Int("suite.parallel", 0, "BenchmarkSuite*: --parallel for the suite (0: the command's default)")

// The suite's speed goals (issue 15) as benchmarks, not timed tests: the
// dense matrix — every built-in story against every lock it fits, once —
// within 90 s, and `suite --runs 10` within 10 minutes, on a 2-core
// machine. Each iteration plays the whole suite through the command, as
// make suite does, and reports its wall time, the plays it made and
// goal-ratio (wall time over the goal: 1 or less meets it), with the CPU
// it took (cpu-s/suite: the command and every server it started) and what
// a redis-server costs to start and stop on this machine (start-cpu-ms,
// measured first). Machines of the same kind differ: on 2026-11-26 one
// took 106-116 CPU-seconds for the dense suite and another, as fast at
// pure computing, 235-244 for the same commit, its process starts (page
// faults) twice as dear; start-cpu-ms tells such machines apart. A play that
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
	start := redisStartCPU(b)
	var wall, cpu time.Duration
	plays := 0
	for i := 0; i < b.N; i++ {
		store := filepath.Join(b.TempDir(), "runs")
		args := append([]string{"suite", "--seed", "5", "--store", store}, extra...)
		if *benchParallel > 0 {
			args = append(args, "--parallel", strconv.Itoa(*benchParallel))
		}
		started, used := time.Now(), childrenCPU(b)
		res := e.runFor(2*time.Hour, args...)
		wall += time.Since(started)
		cpu += childrenCPU(b) - used
		m, err := runstore.ReadMatrix(store)
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
	b.ReportMetric((cpu / time.Duration(b.N)).Seconds(), "cpu-s/suite")
	b.ReportMetric(float64(start)/float64(time.Millisecond), "start-cpu-ms")
}

// childrenCPU is the user and system time of this process's reaped
// children and, through them, of theirs: the suite command and the
// servers it started.
func childrenCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisStartCPU is the CPU time of one redis-server started until it
// serves and stopped again, the unit most of a suite is made of (some
// 1 500 starts in a dense one): the mean of 20, after one that builds the
// clock shim.
func redisStartCPU(b *testing.B) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cache := b.TempDir()
	cycle := func() {
		cl, err := local.Start(ctx, cluster.Config{Nodes: 1, Dir: b.TempDir(), CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		if err := cl.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cycle()
	const n = 20
	before := childrenCPU(b)
	for range n {
		cycle()
	}
	return (childrenCPU(b) - before) / n
}
