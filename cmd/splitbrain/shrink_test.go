package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"splitbrain/scenarios/spec"
)

// pauseSchedule is a small random schedule of node pauses and client
// pauses against a 300ms lease; a client paused between its read and its
// write (every drawn pause outlasts the lease) loses an update.
const pauseSchedule = `name: shrink-cli
description: Node and client pauses under a counter.
expect: any
cluster: {nodes: 3}
lock: {kind: redlock, ttl: 300ms, node_timeout: 100ms}
workload: {kind: counter, clients: 3, duration: 2s}
steps:
  - wait: 200ms
  - random: {faults: [pause, client-pause], targets: [one], interval: 400ms, duration: 350ms..390ms, for: 1600ms}
`

// beforeWriteSeeds are the first seeds whose schedule pauses a client
// before its write: a run of one is invalid, unless the machine is so
// loaded that the client does not get there in time.
func beforeWriteSeeds(t *testing.T, file string) []string {
	t.Helper()
	sc, err := spec.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var seeds []string
	for seed := int64(1); seed < 500 && len(seeds) < 4; seed++ {
		faults, _, err := sc.Unroll(seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range faults {
			if f.Step.Point == "before-write" {
				seeds = append(seeds, strconv.FormatInt(seed, 10))
				break
			}
		}
	}
	if len(seeds) == 0 {
		t.Fatal("no seed pauses a client before its write")
	}
	return seeds
}

func TestShrinkBadArguments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A valid run to refuse: TTL and workload long enough that a loaded
	// machine still grants something (CI: with 300 ms of each, no acquire
	// succeeded and the run was unknown).
	calm := filepath.Join(t.TempDir(), "calm.yaml")
	writeFile(t, calm, `name: calm
expect: any
cluster: {nodes: 3}
lock: {kind: redlock, ttl: 2s}
workload: {kind: counter, clients: 2, duration: 1s}
steps:
  - wait: 50ms
`)
	store := filepath.Join(t.TempDir(), "runs")
	valid := e.run("run", calm, "--seed", "1", "--store", store)
	if valid.code != 0 {
		t.Fatalf("the calm run exits %d, want 0 (valid)", valid.code)
	}
	validDir := filepath.Dir(reportPath(t, valid.stdout))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"shrink"}, "one run folder"},
		{[]string{"shrink", "a", "b"}, "one run folder"},
		{[]string{"shrink", t.TempDir()}, "not a finished run"},
		{[]string{"shrink", validDir}, "is valid, not invalid: there is no violation to shrink to"},
		{[]string{"shrink", "x", "--budget", "soon"}, "--budget wants a duration"},
		{[]string{"shrink", "x", "--budget", "-1s"}, "--budget -1s"},
		{[]string{"shrink", "x", "--replays", "0"}, "--replays 0: want a whole number from 1 to 100"},
		{[]string{"shrink", "x", "--confirm", "0"}, "--confirm 0"},
		{[]string{"shrink", "x", "--parallel", "0"}, "--parallel 0"},
		{[]string{"shrink", "x", "--min-rate", "1.5"}, "--min-rate 1.5: want a share"},
		{[]string{"shrink", "x", "--backend", "cloud"}, `--backend "cloud"`},
		{[]string{"run", calm, "--budget", "1m"}, "--budget is the budget of --shrink"},
	} {
		res := e.run(tc.args...)
		if res.code != 254 || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 254 and %q", tc.args, res.code, res.stderr, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(validDir, "shrink", "calm-shrunk.yaml")); !os.IsNotExist(err) {
		t.Errorf("a valid run got a shrunk file: %v", err)
	}

	// Without redis-server nothing could be replayed: said at once, as
	// run says it, rather than as a violation that did not come back.
	cmd := e.command(t.Context(), "shrink", validDir)
	cmd.Env = append(cmd.Env, "PATH="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 255 || !strings.Contains(stderr.String(), "redis-server not found in PATH") {
		t.Errorf("shrink without redis-server: exit %d, stderr %q; want 255 saying what to install", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(validDir, "shrink")); !os.IsNotExist(err) {
		t.Errorf("shrink without redis-server made its folder: %v", err)
	}
}

// run --shrink shrinks the play it found invalid and prints where the
// file is; the exit code stays the run's.
func TestRunShrink(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "shrink-cli.yaml")
	writeFile(t, file, pauseSchedule)
	store := filepath.Join(t.TempDir(), "runs")
	var res result
	for _, seed := range beforeWriteSeeds(t, file) {
		res = e.runFor(3*time.Minute, "run", file, "--seed", seed, "--store", store, "--shrink", "--budget", "20s")
		if res.code == 1 {
			break
		}
	}
	if res.code != 1 {
		t.Fatalf("exit %d, want 1 (the run is invalid)", res.code)
	}
	// Whether the search gets past its first candidate within the budget
	// depends on the machine's load (once in CI: "the budget is spent
	// after 0 candidates"); the search itself is shrink's tests' to judge,
	// this one judges the command's wiring and what it prints, so its
	// budget is short: CI's CPU goes to the plays that judge verdicts.
	for _, want := range []string{"verdict: INVALID", "splitbrain: shrinking", "shrunk: ", "further runs", "run it: splitbrain run "} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	var shrunk string
	for _, line := range strings.Split(res.stdout, "\n") {
		if p, ok := strings.CutPrefix(line, "shrunk: "); ok {
			shrunk = p
		}
	}
	src, err := os.ReadFile(shrunk)
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := spec.Parse(src, shrunk); err != nil || sc.Expect != spec.ExpectViolation {
		t.Errorf("the shrunk file: %v\n%s", err, src)
	}
	e.checkClean()
}

// Ctrl-C during a shrink leaves the best candidate so far, written and
// readable, says so, and exits 2.
func TestInterruptShrink(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "shrink-cli.yaml")
	writeFile(t, file, pauseSchedule)
	store := filepath.Join(t.TempDir(), "runs")
	var run result
	for _, seed := range beforeWriteSeeds(t, file) {
		if run = e.runFor(time.Minute, "run", file, "--seed", seed, "--store", store); run.code == 1 {
			break
		}
	}
	if run.code != 1 {
		t.Fatalf("the run exits %d, want 1 (invalid)", run.code)
	}
	dir := filepath.Dir(reportPath(t, run.stdout))
	r := e.start("shrink", dir, "--replays", "2")
	r.waitFor(t, "as explicit steps", 90*time.Second)
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t, 30*time.Second)
	out := r.stdout.String()
	if code != 2 || !strings.Contains(out, "interrupted after") {
		t.Errorf("exit %d after Ctrl-C, want 2 and the best so far:\n%s", code, out)
	}
	shrunk := filepath.Join(dir, "shrink", "shrink-cli-shrunk.yaml")
	src, err := os.ReadFile(shrunk)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := spec.Parse(src, shrunk)
	if err != nil || !strings.Contains(sc.Description, "Interrupted after") {
		t.Errorf("the file left by Ctrl-C: %v\n%s", err, src)
	}
	if _, err := os.Stat(shrunk + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("a half-written file is left: %v", err)
	}
	e.checkClean()
}
