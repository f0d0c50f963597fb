package main_test

// These tests build the splitbrain binary once and run it as a child
// process, the way users do. Each test gives its children their own
// XDG_CACHE_HOME: the cluster keeps its clock shim and its live-run
// registry under os.UserCacheDir()/splitbrain, and every redis-server a run
// starts inherits the variable and maps the clock shim from under it, so a
// test can find its own leftovers in /proc without touching anything else
// on the machine.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/history"
	"splitbrain/internal/gobuild"
	"splitbrain/internal/testgate"
)

var binary string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if args, ok := netnsLauncher(); ok {
		// This process is the launcher of TestPortExhaustion, in a network
		// namespace of its own: set it up and become the binary.
		return launchInNetns(args)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Fprintln(os.Stderr, "cmd/splitbrain tests need redis-server in PATH (apt-get install -y redis-server)")
		return 1
	}
	dir, err := os.MkdirTemp("", "splitbrain-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "splitbrain")
	if err := gobuild.Build(binary, "."); err != nil {
		fmt.Fprintf(os.Stderr, "building splitbrain: %v\n", err)
		return 1
	}
	defer removeSeed()
	return m.Run()
}

// env is a test's private environment for the binary.
type env struct {
	t     testing.TB
	cache string // XDG_CACHE_HOME of every child
	// seeded is what seedEnvCache put into cache/splitbrain, by name.
	seeded map[string]os.FileInfo
	work   string   // the children's working directory
	vars   []string // more of the children's environment
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := newBareEnv(t)
	e.seeded = seedEnvCache(t, filepath.Join(e.cache, "splitbrain"))
	t.Cleanup(func() { adoptEnvCache(filepath.Join(e.cache, "splitbrain")) })
	return e
}

// newBareEnv is newEnv with an empty cache: for a test of what a cache
// without the shim makes the binary do or say.
func newBareEnv(t testing.TB) *env {
	t.Helper()
	testgate.Enter(t)
	e := &env{t: t, cache: t.TempDir(), work: t.TempDir()}
	// Whatever happens, leave nothing running that this test started.
	t.Cleanup(func() {
		for _, pid := range e.procs() {
			t.Logf("cleanup: killing leftover pid %d", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return e
}

func (e *env) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = e.work
	var vars []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			vars = append(vars, kv)
		}
	}
	cmd.Env = append(append(vars, "XDG_CACHE_HOME="+e.cache), e.vars...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own group, as a job under a shell: a signal to the group is
		// what a Ctrl-C in the terminal does.
		Setpgid: true,
		// If the test binary dies, the harness goes too.
		Pdeathsig: syscall.SIGKILL,
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the binary to completion.
func (e *env) run(args ...string) result {
	e.t.Helper()
	return e.runFor(45*time.Second, args...)
}

// runFor runs the binary to completion, killing it after timeout.
func (e *env) runFor(timeout time.Duration, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := e.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		e.t.Fatalf("splitbrain %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, res.stdout, res.stderr)
	}
	e.t.Logf("splitbrain %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
	return res
}

// procs lists the live processes of this test's runs: those whose
// environment carries its XDG_CACHE_HOME, and those that map a file from
// under it (the clock shim every redis-server loads). The second is needed
// because redis-server blanks its original environment block when it sets
// its process title, so its /proc/PID/environ is all NUL bytes. Zombies have
// neither and do not count.
func (e *env) procs() []int {
	wantEnv := []byte("XDG_CACHE_HOME=" + e.cache)
	wantMap := []byte(" " + e.cache + "/")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		found := false
		if b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "environ")); err == nil {
			for _, kv := range bytes.Split(b, []byte{0}) {
				if bytes.Equal(kv, wantEnv) {
					found = true
					break
				}
			}
		}
		if !found {
			if b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "maps")); err == nil {
				found = bytes.Contains(b, wantMap)
			}
		}
		if found {
			pids = append(pids, pid)
		}
	}
	return pids
}

func describe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		parts = append(parts, fmt.Sprintf("%d (%s)", pid, strings.TrimSpace(string(comm))))
	}
	return strings.Join(parts, ", ")
}

func (e *env) liveDir() string { return filepath.Join(e.cache, "splitbrain", "live") }

func (e *env) liveEntries() []string {
	entries, err := os.ReadDir(e.liveDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		e.t.Fatal(err)
	}
	var names []string
	for _, ent := range entries {
		names = append(names, ent.Name())
	}
	return names
}

// checkClean asserts that nothing of this test's runs is left: no process,
// no live registry entry.
func (e *env) checkClean() {
	e.t.Helper()
	if pids := e.procs(); len(pids) > 0 {
		e.t.Errorf("processes left running with XDG_CACHE_HOME=%s: %s", e.cache, describe(pids))
	}
	if names := e.liveEntries(); len(names) > 0 {
		e.t.Errorf("live registry %s not empty: %v", e.liveDir(), names)
	}
}

const reportLine = "report: "

// reportPath finds the "report: PATH" line of the text output.
func reportPath(t *testing.T, stdout string) string {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		if p, ok := strings.CutPrefix(line, reportLine); ok {
			return strings.TrimSpace(p)
		}
	}
	t.Fatalf("no %q line in the output:\n%s", reportLine, stdout)
	return ""
}

// checkRunDir asserts that a finished run left its files and no node data.
func checkRunDir(t *testing.T, report, store string) string {
	t.Helper()
	if _, err := os.Stat(report); err != nil {
		t.Fatalf("report: %v", err)
	}
	if filepath.Base(report) != "report.html" {
		t.Errorf("report %s is not report.html", report)
	}
	dir := filepath.Dir(report)
	if rel, err := filepath.Rel(store, dir); err != nil || strings.HasPrefix(rel, "..") {
		t.Errorf("run dir %s is not inside the store %s", dir, store)
	}
	for _, f := range []string{"history.jsonl", "result.json", "logs"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run dir: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nodes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("node data left in the run dir: stat nodes: %v", err)
	}
	if _, err := history.ReadFile(filepath.Join(dir, "history.jsonl")); err != nil {
		t.Errorf("history: %v", err)
	}
	return dir
}

func readResult(t *testing.T, dir string) (verdict string, seed int64) {
	t.Helper()
	rec := readRecord(t, dir)
	return rec.Result.Verdict, rec.Meta.Seed
}

// record is what the tests read of a run's result.json.
type record struct {
	Meta   struct{ Seed int64 }
	Result struct{ Verdict, Reason string }
}

func readRecord(t *testing.T, dir string) record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("result.json: %v", err)
	}
	return rec
}

func TestRunClockJumpIsInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := filepath.Join(t.TempDir(), "runs")
	res := e.run("run", "clock-jump", "--seed", "7", "--store", store)
	if res.code != 1 {
		t.Errorf("exit code %d, want 1 (invalid)", res.code)
	}
	for _, want := range []string{"seed 7", "verdict: INVALID", "as expected", "c1 and c2 both believed"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	dir := checkRunDir(t, reportPath(t, res.stdout), store)
	if _, err := os.Stat(filepath.Join(dir, "porcupine.html")); err != nil {
		t.Errorf("invalid run without porcupine view: %v", err)
	}
	if v, seed := readResult(t, dir); v != "invalid" || seed != 7 {
		t.Errorf("result.json: verdict %q seed %d, want invalid, 7", v, seed)
	}
	e.checkClean()
}

func TestRunControlIsValid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := filepath.Join(t.TempDir(), "runs")
	// Flags before the scenario work too.
	res := e.run("run", "--store", store, "clock-jump-control")
	if res.code != 0 {
		t.Errorf("exit code %d, want 0 (valid)", res.code)
	}
	if !strings.Contains(res.stdout, "verdict: VALID") || !strings.Contains(res.stdout, "as expected") {
		t.Errorf("output does not say VALID as expected")
	}
	// Without --seed a seed is drawn and printed.
	if !strings.Contains(res.stdout, "seed ") {
		t.Errorf("output does not print the seed")
	}
	dir := checkRunDir(t, reportPath(t, res.stdout), store)
	if v, _ := readResult(t, dir); v != "valid" {
		t.Errorf("result.json verdict %q, want valid", v)
	}
	e.checkClean()
}

func TestRunJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := filepath.Join(t.TempDir(), "runs")
	// One lock, one play: the family plays one lock of each deployment.
	res := e.run("run", "clock-jump", "--lock", "redlock", "--json", "--seed", "11", "--store", store)
	if res.code != 1 {
		t.Errorf("exit code %d, want 1", res.code)
	}
	var out struct {
		Scenario   string `json:"scenario"`
		Seed       int64  `json:"seed"`
		Dir        string `json:"dir"`
		Report     string `json:"report"`
		Verdict    string `json:"verdict"`
		Expect     string `json:"expect"`
		AsExpected *bool  `json:"as_expected"`
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &raw); err != nil {
		t.Fatalf("stdout is not one JSON value: %v\n%s", err, res.stdout)
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Scenario != "clock-jump" || out.Seed != 11 || out.Verdict != "invalid" || out.Expect != "violation" ||
		out.AsExpected == nil || !*out.AsExpected {
		t.Errorf("JSON outcome %+v", out)
	}
	if out.Dir != filepath.Dir(out.Report) {
		t.Errorf("dir %q is not the report's folder %q", out.Dir, out.Report)
	}
	checkRunDir(t, out.Report, store)
	// Progress goes to stderr so stdout stays machine-readable.
	if !strings.Contains(res.stderr, "acquire") {
		t.Errorf("no progress on stderr in JSON mode")
	}
	e.checkClean()
}

func TestList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.run("list")
	if res.code != 0 {
		t.Fatalf("exit code %d", res.code)
	}
	lines := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			lines[f[0]] = line
		}
	}
	for name, expect := range map[string]string{"clock-jump": "violation", "clock-jump-control": "safe"} {
		line, ok := lines[name]
		if !ok {
			t.Errorf("list does not show %s", name)
			continue
		}
		if !strings.Contains(line, "expect "+expect) {
			t.Errorf("line %q does not say expect %s", line, expect)
		}
	}
	if res := e.run("help"); res.code != 0 || !strings.Contains(res.stdout, "Usage:") {
		t.Errorf("help: exit %d", res.code)
	}
}

func TestBadArguments(t *testing.T) {
	t.Parallel()
	scenarioDir := t.TempDir()
	badValues := filepath.Join(scenarioDir, "bad-values.yaml")
	writeFile(t, badValues, `name: bad-values
expect: safe
cluster:
  nodes: 5
lock:
  ttl: fast
workload:
  clients: 2
steps:
  - acquire: {client: c9}
`)
	unknownField := filepath.Join(scenarioDir, "unknown-field.yaml")
	writeFile(t, unknownField, `name: unknown-field
expect: safe
cluster:
  nodes: 5
  colour: red
steps:
  - wait: 1s
`)
	missing := filepath.Join(scenarioDir, "missing.yaml")
	lockList := func(name, kinds, fencing string) string {
		path := filepath.Join(scenarioDir, name+".yaml")
		writeFile(t, path, `name: `+name+`
expect: any
cluster: {nodes: 3}
lock: {kind: `+kinds+`, ttl: 1s}
workload: {kind: counter, clients: 2, duration: 1s`+fencing+`}
`)
		return path
	}
	emptyList := lockList("empty-list", "[]", "")
	unknownInList := lockList("unknown-in-list", "[redlock, chubby]", "")
	twiceInList := lockList("twice-in-list", "[redsync, redlock, redsync]", "")
	unfencedInList := lockList("unfenced-in-list", "[fenced-simple, redsync]", ", fencing: on")

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no command", nil, []string{"Usage:", "splitbrain run SCENARIO"}},
		{"unknown command", []string{"frobnicate"}, []string{`unknown command "frobnicate"`, "list, run, suite, sweep, matrix, fanout, check, shrink, serve, doctor or driver", "splitbrain help"}},
		{"run without scenario", []string{"run"}, []string{"run takes one scenario", "built-ins:", "clock-jump", "clock-jump-control"}},
		{"run with two scenarios", []string{"run", "clock-jump", "clock-jump-control"}, []string{"run takes one scenario", "got 2"}},
		{"unknown scenario", []string{"run", "no-such-scenario"},
			[]string{`unknown scenario "no-such-scenario"`, "built-in scenarios:", "clock-jump, clock-jump-control", ".yaml file"}},
		{"seed not a number", []string{"run", "clock-jump", "--seed", "abc"}, []string{`--seed "abc"`, "whole number"}},
		{"seed without value", []string{"run", "clock-jump", "--seed"}, []string{"seed", "--seed wants a whole number"}},
		{"unknown backend", []string{"run", "clock-jump", "--backend", "kubernetes"}, []string{`--backend "kubernetes"`, "want one of local, docker"}},
		{"empty store", []string{"run", "clock-jump", "--store", ""}, []string{"--store is empty"}},
		{"unknown flag", []string{"run", "clock-jump", "--sede", "3"}, []string{"-sede", "flags of run: --backend, --budget, --clients, --json, --lock, --lock-driver, --seed, --shrink, --store, --time"}},
		{"scenario file with bad values", []string{"run", badValues},
			[]string{badValues + ":6: lock.ttl", `"fast" is not valid`, badValues + ":10: steps[0].acquire.client", `unknown client "c9"`}},
		{"scenario file with an unknown field", []string{"run", unknownField},
			[]string{unknownField + ":5: colour", "unknown field in cluster", "valid fields: nodes"}},
		{"nonexistent scenario file", []string{"run", missing}, []string{missing, "no such file"}},
		{"list with arguments", []string{"list", "extra"}, []string{"list takes no arguments"}},
		{"suite with files and --all", []string{"suite", "--all", "clock-jump"}, []string{"suite takes scenario files or --all, not both"}},
		{"suite with no runs", []string{"suite", "clock-jump", "--runs", "0"}, []string{"--runs 0: want a whole number from 1 to 1000"}},
		{"suite with a gate in no folder", []string{"suite", "clock-jump", "--gate", "/nonexistent-dir/gate"},
			[]string{`--gate "/nonexistent-dir/gate"`, "a regular file, made if missing in a folder that exists"}},
		{"suite with a bad parallel", []string{"suite", "clock-jump", "--parallel", "65"}, []string{"--parallel 65: want a whole number from 1 to 64"}},
		{"matrix without folders", []string{"matrix"}, []string{"matrix takes one or more folders"}},
		{"matrix of a file", []string{"matrix", "go.mod"}, []string{`"go.mod" is not a folder`}},
		{"suite with a bad file", []string{"suite", "clock-jump", unknownField}, []string{unknownField + ":5: colour"}},
		{"unknown lock", []string{"run", "clock-jump", "--lock", "chubby"}, []string{`--lock "chubby"`, "redlock, single, naive, fenced-simple, fenced-two-round, redsync"}},
		// (A suite plays it as an n/a cell: see TestSuiteWritesTheMatrix.)
		{"lock without tokens on a fenced scenario", []string{"run", unfencedInList, "--lock", "redlock"},
			[]string{"unfenced-in-list", "--lock redlock", "needs a lock with tokens"}},
		{"empty lock list", []string{"run", emptyList}, []string{emptyList + ":4: lock.kind: empty list", "redlock, single, naive"}},
		{"unknown lock in a list", []string{"suite", unknownInList}, []string{unknownInList + `:4: lock.kind[1]: "chubby" is not valid`, "fenced-two-round, redsync"}},
		{"lock listed twice", []string{"run", twiceInList}, []string{twiceInList + ":4: lock.kind[2]: redsync is listed twice"}},
		{"listed lock without tokens on a fenced scenario", []string{"run", unfencedInList},
			[]string{unfencedInList + ": lock.kind redsync", "needs a lock with tokens"}},
		{"listed lock without tokens in a suite", []string{"suite", "random-all-counter", unfencedInList},
			[]string{"lock.kind redsync", "needs a lock with tokens"}},
		{"help for an unknown command", []string{"help", "frobnicate"}, []string{`help "frobnicate": no such command`}},
		{"no clients", []string{"run", "clock-jump", "--clients", "0"}, []string{"--clients 0", "from 1 to 64"}},
		{"clients not a number", []string{"run", "clock-jump", "--clients", "two"}, []string{"-clients", "--clients wants a whole number from 1 to 64"}},
		{"fewer clients than the steps use", []string{"run", "clock-jump", "--clients", "1"},
			[]string{"--clients 1", "builtin/clock-jump.yaml:", "uses c2", "at least 2 clients"}},
		{"time not a duration", []string{"run", "pause-critical-section", "--time", "soon"}, []string{"-time", "--time wants a duration such as 10s"}},
		{"negative time", []string{"run", "pause-critical-section", "--time", "-1s"}, []string{"--time -1s", "at least 1ms"}},
		{"time on a scripted scenario", []string{"run", "clock-jump", "--time", "10s"}, []string{"--time 10s", "clock-jump is scripted"}},
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &env{t: t, cache: e.cache, work: t.TempDir()}
			res := e.run(tt.args...)
			if res.code != 254 {
				t.Errorf("exit code %d, want 254", res.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
				}
			}
			if res.stdout != "" {
				t.Errorf("bad arguments printed to stdout: %q", res.stdout)
			}
			// Nothing was run: no store folder, no cluster.
			if entries, _ := os.ReadDir(e.work); len(entries) > 0 {
				t.Errorf("bad arguments left files in the working dir: %v", entries)
			}
		})
	}
	if entries := e.cacheTouched(); len(entries) > 0 {
		t.Errorf("bad arguments touched the cache: %v", entries)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// longScenario holds its fault for a minute after the lock is taken, long
// enough to interrupt it.
const longScenario = `name: long-wait
description: A clock jump on n3 while c1 holds the lock, then a long wait.
expect: any
cluster:
  nodes: 5
lock:
  kind: redlock
  ttl: 2s
workload:
  clients: 2
steps:
  - cut: {client: c1, nodes: [n4, n5]}
  - acquire: {client: c1}
  - clock: {node: n3, jump: 5s}
  - wait: 60s
`

// running is a child started in the background with its stdout read line
// by line.
type running struct {
	cmd    *exec.Cmd
	lines  chan string
	stdout strings.Builder // the lines read so far
	stderr bytes.Buffer    // read only once exited
	done   chan error
	exited bool
}

func (e *env) start(args ...string) *running {
	e.t.Helper()
	cmd := e.command(context.Background(), args...)
	cmd.WaitDelay = 0
	r := &running{cmd: cmd, lines: make(chan string, 100), done: make(chan error, 1)}
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stderr = &r.stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if !r.exited {
			_ = cmd.Process.Kill()
			for range r.lines {
			}
			<-r.done
		}
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
		r.done <- cmd.Wait()
	}()
	return r
}

// waitFor reads lines until one contains s.
func (r *running) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				// stderr is written until the process is waited for.
				select {
				case <-r.done:
					r.exited = true
					t.Fatalf("splitbrain ended before printing %q:\n%s\nstderr:\n%s", s, r.stdout.String(), r.stderr.String())
				case <-deadline:
					t.Fatalf("splitbrain closed its stdout before printing %q, and did not exit within %v:\n%s", s, timeout, r.stdout.String())
				}
			}
			r.stdout.WriteString(line + "\n")
			if strings.Contains(line, s) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q within %v:\n%s", s, timeout, r.stdout.String())
		}
	}
}

// wait drains stdout and waits for the exit, at most timeout.
func (r *running) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-r.lines:
			if ok {
				r.stdout.WriteString(line + "\n")
				continue
			}
			select {
			case <-r.done:
				r.exited = true
			case <-deadline:
				t.Fatalf("splitbrain did not exit within %v", timeout)
			}
			t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout.String(), r.stderr.String())
			return r.cmd.ProcessState.ExitCode()
		case <-deadline:
			t.Fatalf("splitbrain did not exit within %v of the signal:\n%s", timeout, r.stdout.String())
		}
	}
}

func TestInterrupt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "long-wait.yaml")
	writeFile(t, file, longScenario)
	store := filepath.Join(t.TempDir(), "runs")
	r := e.start("run", file, "--seed", "1", "--store", store)
	r.waitFor(t, "wait 1m0s", 30*time.Second)
	if pids := e.procs(); len(pids) < 6 {
		t.Errorf("expected the harness and 5 redis-servers to run, found %s", describe(pids))
	}

	// Ctrl-C in a terminal signals the foreground process group.
	sent := time.Now()
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t, 15*time.Second)
	t.Logf("exited %v after SIGINT with code %d", time.Since(sent).Round(time.Millisecond), code)
	if code != 2 && code != 1 {
		t.Errorf("exit code %d after Ctrl-C, want 2 (unknown) or 1 (invalid)", code)
	}
	out := r.stdout.String()
	if !strings.Contains(out, "verdict: UNKNOWN") && !strings.Contains(out, "verdict: INVALID") {
		t.Errorf("no unknown or invalid verdict printed")
	}
	dir := checkRunDir(t, reportPath(t, out), store)
	if v, _ := readResult(t, dir); v != "unknown" && v != "invalid" {
		t.Errorf("result.json verdict %q after Ctrl-C", v)
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "logs", "n*.log")); len(logs) != 5 {
		t.Errorf("logs/ holds %d node logs, want 5", len(logs))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "logs", "harness.log")); err != nil || !strings.Contains(string(b), "wait 1m0s") {
		t.Errorf("logs/harness.log (%v) lacks the step the run was interrupted in:\n%s", err, b)
	}
	e.checkClean()
}

func TestKilledHarnessIsReaped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "long-wait.yaml")
	writeFile(t, file, longScenario)
	store := filepath.Join(t.TempDir(), "runs")
	r := e.start("run", file, "--seed", "1", "--store", store)
	r.waitFor(t, "wait 1m0s", 30*time.Second)
	before := e.procs()
	t.Logf("running before SIGKILL: %s", describe(before))

	// SIGKILL the harness alone, not its process group.
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	if left := e.procs(); len(left) > 0 {
		t.Logf("redis-servers survived the harness's SIGKILL: %s", describe(left))
	} else {
		t.Logf("no redis-server survived the harness's SIGKILL (Pdeathsig took them)")
	}
	entries := e.liveEntries()
	if len(entries) != 1 {
		t.Errorf("live registry after SIGKILL holds %v, want the killed run's entry", entries)
	}
	if runs, _ := filepath.Glob(filepath.Join(store, "long-wait", "2*", "nodes")); len(runs) > 0 {
		t.Logf("the killed run left its node data: %v", runs)
	}

	// The next run reaps what the killed one left; one lock is enough (every
	// lock clock-jump-control lists outlasted the test under CI's load).
	store2 := filepath.Join(t.TempDir(), "runs")
	res := e.run("run", "clock-jump-control", "--lock", "redlock", "--store", store2)
	if res.code != 0 {
		t.Errorf("exit code %d of the run after the crash, want 0", res.code)
	}
	checkRunDir(t, reportPath(t, res.stdout), store2)
	e.checkClean()
	if runs, _ := filepath.Glob(filepath.Join(store, "long-wait", "2*", "nodes")); len(runs) > 0 {
		t.Errorf("the killed run's node data is still there after the next start: %v", runs)
	}

	// The killed run's history, cut short mid-partition and mid-clock-jump,
	// is judged offline: never valid, and the verdict says why.
	dirs, _ := filepath.Glob(filepath.Join(store, "long-wait", "2*"))
	if len(dirs) != 1 {
		t.Fatalf("killed run dirs: %v, want one", dirs)
	}
	// The harness's own log was written as it went: it shows where the
	// run was when it was killed.
	if b, err := os.ReadFile(filepath.Join(dirs[0], "logs", "harness.log")); err != nil || !strings.Contains(string(b), "wait 1m0s") {
		t.Errorf("the killed run's logs/harness.log (%v) does not show where it stopped:\n%s", err, b)
	}
	chk := e.run("check", dirs[0], "--json")
	if chk.code != 2 && chk.code != 1 {
		t.Errorf("check of the killed run: exit %d, want 2 (unknown) or 1 (invalid)\n%s%s", chk.code, chk.stdout, chk.stderr)
	}
	var verdict struct {
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(chk.stdout), &verdict); err != nil {
		t.Fatalf("check --json output: %v\n%s", err, chk.stdout)
	}
	if verdict.Verdict == "valid" || verdict.Reason == "" {
		t.Errorf("check of the killed run: %+v, want unknown or invalid with a reason", verdict)
	}
	t.Logf("check of the killed run: %s: %s", verdict.Verdict, verdict.Reason)
}

// A harness can die without Pdeathsig taking its nodes along (Pdeathsig
// follows the thread that started a node, and is lost across a setuid exec
// or a PID namespace); then real redis-servers outlive it. This plants such a
// leftover, exactly as a crashed run leaves it in the live registry (an entry
// whose owner is dead, a pid file per node, the run's marker in the node's
// environment), and checks that the next run kills it.
func TestNextRunReapsSurvivingRedisServer(t *testing.T) {
	t.Parallel()
	{
		{
			e := newEnv(t)
			const runID = "deadrun0123456789"
			entry := filepath.Join(e.liveDir(), runID)
			if err := os.MkdirAll(entry, 0o700); err != nil {
				t.Fatal(err)
			}
			// An owner that cannot be alive: pid 1 did not start at that tick.
			writeFile(t, filepath.Join(entry, "owner"), "1 999999999999\n")

			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
			l.Close()
			// As cluster/local.go starts nodes: set-proc-title no keeps the
			// environment (and so the run marker) readable in /proc.
			args := []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--dir", t.TempDir(), "--set-proc-title", "no"}
			leftover := exec.Command("redis-server", args...)
			leftover.Env = append(os.Environ(), cluster.RunEnv+"="+runID, "XDG_CACHE_HOME="+e.cache)
			leftover.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			if err := leftover.Start(); err != nil {
				t.Fatal(err)
			}
			pid := leftover.Process.Pid
			exited := make(chan struct{})
			go func() { _ = leftover.Wait(); close(exited) }()
			t.Cleanup(func() {
				select {
				case <-exited:
				default:
					_ = leftover.Process.Kill()
					<-exited
				}
			})
			writeFile(t, filepath.Join(entry, "n1.pid"), fmt.Sprintf("%d %d\n", pid, procStartTime(t, pid)))
			waitListening(t, "127.0.0.1:"+port)
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			t.Logf("leftover redis-server pid %d; its /proc environ carries the marker: %v",
				pid, bytes.Contains(env, []byte(cluster.RunEnv+"="+runID)))

			store := filepath.Join(t.TempDir(), "runs")
			res := e.run("run", "clock-jump-control", "--store", store)
			if res.code != 0 {
				t.Errorf("exit code %d, want 0", res.code)
			}
			select {
			case <-exited:
			case <-time.After(2 * time.Second):
				t.Errorf("the next run did not kill the crashed run's redis-server (pid %d)", pid)
			}
			e.checkClean()
		}
	}
}

func procStartTime(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	v, err := strconv.ParseUint(fields[19], 10, 64) // field 22, starttime
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server not listening on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
