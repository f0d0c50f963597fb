package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"splitbrain/history"
	"splitbrain/history/historytest"
)

// clockJumpHistory is the shape of a clock-jump run: c1 granted by n1..n3,
// n3's clock jumps, c2 granted by n3..n5 while c1 still believes.
func clockJumpHistory(t *testing.T) []byte {
	t.Helper()
	b := &historytest.Builder{}
	b.Fault(0, historytest.Cut(1, history.PhaseStart, "c1", "n4", "n5"))
	b.Acquire("c1", "lock", 0.1, 0.2, 2.1)
	b.Fault(0.3, historytest.Cut(1, history.PhaseStop, "c1", "n4", "n5"))
	b.Fault(0.4, historytest.ClockJump(2, history.PhaseStart, "n3", 5*time.Second))
	b.Fault(0.5, historytest.Cut(3, history.PhaseStart, "c2", "n1", "n2"))
	b.Acquire("c2", "lock", 0.6, 0.7, 2.6)
	b.Fault(0.8, historytest.Cut(3, history.PhaseStop, "c2", "n1", "n2"))
	b.Release("c1", "lock", 1.5, 1.6)
	b.Release("c2", "lock", 1.7, 1.8)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	for _, e := range b.Events() {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// storeRun writes history as the history.jsonl of a run folder that has
// nothing else: a run the harness did not finish.
func storeRun(t *testing.T, history []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store", "clock-jump", "20260101T000000.000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "history.jsonl"), string(history))
	return dir
}

// tear cuts the history in the middle of its last line, as a crash during
// a write leaves it.
func tear(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	last := bytes.LastIndexByte(b, '\n')
	return b[:last+1+(len(b)-last-1)/2]
}

// A finished run, checked again, keeps its verdict and its record.
func TestCheckRerunsAStoredRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := filepath.Join(t.TempDir(), "runs")
	run := e.run("run", "clock-jump-control", "--seed", "3", "--store", store)
	dir := filepath.Dir(reportPath(t, run.stdout))
	before, _ := readResult(t, dir)

	res := e.run("check", dir)
	if res.code != run.code || !strings.Contains(res.stdout, "verdict: "+strings.ToUpper(before)) ||
		!strings.Contains(res.stdout, "lease-lock (P1): ") {
		t.Errorf("check: exit %d (the run's was %d, verdict %s)\n%s", res.code, run.code, before, res.stdout)
	}
	if verdict, seed := readResult(t, dir); verdict != before || seed != 3 {
		t.Errorf("result.json says %s, seed %d: the run's own record should be kept", verdict, seed)
	}
}

// Histories cut short by a crash: what the prefix proves still counts; what
// it does not prove is unknown.
func TestCheckCrashedRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	full := clockJumpHistory(t)

	dir := storeRun(t, full)
	res := e.run("check", dir)
	if res.code != 1 || !strings.Contains(res.stdout, "verdict: INVALID") || !strings.Contains(res.stdout, "both believed they held lock") {
		t.Errorf("complete history: exit %d\n%s", res.code, res.stdout)
	}
	for _, f := range []string{"result.json", "report.html", "porcupine.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("check of an unfinished run wrote no %s: %v", f, err)
		}
	}

	// Torn after the overlap: the violation is in the prefix.
	torn := storeRun(t, tear(full))
	res = e.run("check", torn)
	if res.code != 1 || !strings.Contains(res.stderr, "cut short") {
		t.Errorf("torn history: exit %d, stderr %q", res.code, res.stderr)
	}

	// Torn before c2 acquires: nothing is wrong in the prefix, and that is
	// unknown, not valid.
	i := bytes.Index(full, []byte(`"p":"c2"`))
	early := storeRun(t, tear(full[:bytes.LastIndexByte(full[:i], '\n')+1]))
	res = e.run("check", early, "--json")
	var sum struct {
		Verdict, Reason, Incomplete string
		Events                      int
	}
	if err := json.Unmarshal([]byte(res.stdout), &sum); err != nil {
		t.Fatalf("--json output: %v\n%s", err, res.stdout)
	}
	if res.code != 2 || sum.Verdict != "unknown" || !strings.Contains(sum.Reason, "incomplete") || sum.Incomplete == "" || sum.Events == 0 {
		t.Errorf("early crash: exit %d, %+v", res.code, sum)
	}
	if verdict, _ := readResult(t, early); verdict != "unknown" {
		t.Errorf("result.json of the early crash says %s", verdict)
	}

	// A corrupt line in the middle: the prefix is judged, the line named.
	lines := bytes.SplitAfter(full, []byte("\n"))
	lines[2] = []byte("{\"i\":2,\"p\":\"c1\",\"type\":\"bogus\"}\n")
	res = e.run("check", storeRun(t, bytes.Join(lines, nil)))
	if res.code != 2 || !strings.Contains(res.stderr, "history.jsonl:3") {
		t.Errorf("corrupt line: exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestCheckBadArguments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check"}, "one run folder"},
		{[]string{"check", "a", "b"}, "one run folder"},
		{[]string{"check", t.TempDir()}, "is not a run folder"},
		{[]string{"check", "x", "--timeout", "soon"}, "--timeout wants a duration"},
		{[]string{"check", "x", "--json=maybe"}, "--json wants no value"},
		{[]string{"check", "x", "--timeout", "-1s"}, "--timeout -1s"},
	} {
		res := e.run(tc.args...)
		if res.code != 254 || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 254 and %q", tc.args, res.code, res.stderr, tc.want)
		}
	}
	if res := e.run("check", "--help"); res.code != 0 || !strings.Contains(res.stdout, "Usage: splitbrain check RUN_DIR") {
		t.Errorf("check --help: exit %d\n%s", res.code, res.stdout)
	}
}

// A history whose process name holds markup is refused at its line, with
// the field and what would be valid; nothing of it reaches the terminal
// raw, and what came before it is checked.
func TestCheckRefusesMarkupInAProcessName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lines := bytes.SplitAfter(clockJumpHistory(t), []byte("\n"))
	lines[2] = bytes.Replace(lines[2], []byte(`"p":"c1"`), []byte(`"p":"c1\u003cimg src=x onerror=alert(1)\u003e\u001b[2J"`), 1)
	dir := storeRun(t, bytes.Join(lines, nil))
	res := e.run("check", dir)
	for _, want := range []string{"history.jsonl:3", `field "p" is "c1<img src=x onerror=alert(1)>\x1b[2J"`, "lower-case letters, digits and dashes"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if res.code != 2 || strings.Contains(res.stdout+res.stderr, "\x1b") {
		t.Errorf("exit %d (want 2: the prefix is judged, and is incomplete); a raw escape reached the terminal:\n%q", res.code, res.stdout+res.stderr)
	}
}

// A history check cannot use is refused at once with 254: one that is not
// a regular file (a FIFO would wait for a writer, a device never ends) or
// one larger than any run writes (read whole, it would take the machine's
// memory). The large one is sparse: its size costs no disk. A command that
// waited instead is killed after a minute and fails on its exit code; the
// time it took is not asserted, as a loaded machine takes seconds to start
// any process (CI once: 8.6 s).
func TestCheckRefusesHistoriesItCannotUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fifo := storeRun(t, nil)
	os.Remove(filepath.Join(fifo, "history.jsonl"))
	if err := syscall.Mkfifo(filepath.Join(fifo, "history.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	device := storeRun(t, nil)
	os.Remove(filepath.Join(device, "history.jsonl"))
	if err := os.Symlink("/dev/zero", filepath.Join(device, "history.jsonl")); err != nil {
		t.Fatal(err)
	}
	huge := storeRun(t, []byte("{\"not\": \"an event\"}\n"))
	if err := os.Truncate(filepath.Join(huge, "history.jsonl"), history.MaxFileSize+1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		want      []string
	}{
		{"fifo", fifo, []string{"history.jsonl is a named pipe, not a file"}},
		{"device", device, []string{"history.jsonl is a device, not a file"}},
		{"oversized", huge, []string{"history.jsonl: 2147483649 bytes, more than the 2 GiB a history may have"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res := e.runFor(time.Minute, "check", tc.dir)
			if res.code != 254 {
				t.Errorf("exit %d after %v, want 254", res.code, time.Since(start).Round(time.Millisecond))
			}
			for _, w := range tc.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q", w)
				}
			}
		})
	}
}

// A result.json that is a FIFO (issue 33, hardening 7) hung check, matrix
// and shrink — shrink deaf to SIGTERM for ten minutes. Each refuses it at
// once, naming what it is. A command that waited is killed after a minute
// and fails on its exit code; the time it took is not asserted.
func TestResultFileThatIsNoFileIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := storeRun(t, clockJumpHistory(t))
	if res := e.run("check", dir); res.code != 1 {
		t.Fatalf("check of the run: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	result := filepath.Join(dir, "result.json")
	for _, args := range [][]string{
		{"check", dir},
		{"matrix", "--out", filepath.Join(t.TempDir(), "m"), dir},
		{"shrink", dir},
	} {
		t.Run(args[0], func(t *testing.T) {
			// Each its own FIFO: a check that went on would have
			// replaced it with a result.json.
			if err := os.Remove(result); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(result, 0o644); err != nil {
				t.Fatal(err)
			}
			res := e.runFor(time.Minute, args...)
			if res.code == 0 || res.code == -1 {
				t.Errorf("exit %d, want a refusal", res.code)
			}
			if !strings.Contains(res.stdout+res.stderr, "named pipe") {
				t.Errorf("the refusal does not say result.json is a named pipe:\n%s%s", res.stdout, res.stderr)
			}
		})
	}
}

// A history whose second line never ends (issue 33, hardening 8: a 2 GiB
// file without a newline took 5 GB to refuse) is read up to the bound of a
// line and no further: the event before it is checked, the verdict is
// unknown, the message names the line and the bound. The file is sparse:
// its size costs no disk.
func TestCheckStopsAtAnEndlessLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := storeRun(t, []byte(`{"i":0,"p":"c1","type":"invoke","f":"acquire","key":"lock","t":1}`+"\n"))
	if err := os.Truncate(filepath.Join(dir, "history.jsonl"), history.MaxFileSize); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := e.command(ctx, "check", dir)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && !errors.As(err, new(*exec.ExitError)) {
		t.Fatal(err)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("exit %d, peak RSS %d MiB\nstdout:\n%s\nstderr:\n%s", cmd.ProcessState.ExitCode(), rss>>20, stdout.String(), stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Errorf("exit %d, want 2 (unknown)", code)
	}
	for _, w := range []string{"history.jsonl:2 is not read to its end", fmt.Sprintf("more than %d bytes", history.MaxLine), "the 1 event(s) before it were checked"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
	// The bound and the reader's buffers, where reading the line whole
	// took 5 GB: a memory figure, not a time.
	if rss > 1<<30 {
		t.Errorf("peak RSS %d MiB refusing the line, want well under 1 GiB", rss>>20)
	}
}
