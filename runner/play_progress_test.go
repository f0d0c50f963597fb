package runner_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"splitbrain/runner"
	"splitbrain/scenarios/spec"
)

// A generated workload reports its progress while it runs — how far, what
// the clients did, which faults are active — and stops reporting when it
// ends. n5 is paused before the workload starts and stays paused until the
// final heal, so every progress line must name it.
func TestGeneratedWorkloadReportsProgress(t *testing.T) {
	t.Parallel()
	sc, err := spec.Parse([]byte(`name: progress
expect: any
cluster: {nodes: 5}
lock: {kind: redlock, ttl: 500ms, node_timeout: 100ms}
workload: {kind: counter, clients: 2, duration: 2s, think: 5ms}
steps:
  - pause: {node: n5}
`), "progress.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	out, err := runner.Run(context.Background(), sc, runner.RunOptions{
		Seed: 1, Store: t.TempDir(), CacheDir: playCache(t), Progress: &progress, ProgressEvery: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verdict %s; progress:\n%s", out.Result.Verdict, progress.String())
	var lines []string
	done := false
	for _, line := range strings.Split(progress.String(), "\n") {
		switch {
		case strings.Contains(line, "workload counter done"):
			done = true
		case strings.Contains(line, "progress "):
			if done {
				t.Errorf("a progress line after the workload ended: %q", line)
			}
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		t.Fatal("no progress line")
	}
	for _, line := range lines {
		for _, want := range []string{"/2s: acquires ", " granted, ", " refused, ", " unknown; writes ", " applied, ", " rejected, ", "faults: n5 paused"} {
			if !strings.Contains(line, want) {
				t.Errorf("progress line %q lacks %q", line, want)
			}
		}
	}
	// The counts are the history's: a later line never shows fewer
	// granted acquires than an earlier one, and the clients did acquire.
	last := -1
	for _, line := range lines {
		_, rest, _ := strings.Cut(line, ": acquires ")
		n, err := strconv.Atoi(strings.Fields(rest + " x")[0])
		if err != nil || n < last {
			t.Errorf("progress line %q: granted count unreadable or smaller than the %d before", line, last)
		}
		last = n
	}
	if last <= 0 {
		t.Errorf("the last progress line counts %d granted acquires", last)
	}
	if !done {
		t.Error("no line saying the workload ended")
	}
}

// Without an interval shorter than the workload, no progress line.
func TestShortWorkloadReportsNoProgress(t *testing.T) {
	t.Parallel()
	sc, err := spec.Parse([]byte(`name: short
expect: any
cluster: {nodes: 3}
lock: {kind: redlock, ttl: 500ms, node_timeout: 100ms}
workload: {kind: mutex, clients: 1, duration: 300ms}
`), "short.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	if _, err := runner.Run(context.Background(), sc, runner.RunOptions{
		Seed: 1, Store: t.TempDir(), CacheDir: playCache(t), Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(progress.String(), "progress ") {
		t.Errorf("a 300ms workload reported progress at the default interval:\n%s", progress.String())
	}
}
