package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyRun copies a run folder's history (only) to a fresh folder under
// store/<scenario>/, cut to keep bytes of it: a run the harness did not
// finish writing.
func copyRun(t *testing.T, from, scenario string, keep func([]byte) []byte) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(from, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store", scenario, "20260101T000000.000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "history.jsonl"), string(keep(b)))
	return dir
}

// tear cuts the history in the middle of its last line, as a crash during
// a write leaves it.
func tear(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	last := bytes.LastIndexByte(b, '\n')
	return b[:last+1+(len(b)-last-1)/2]
}

func TestCheckRerunsAStoredRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := filepath.Join(t.TempDir(), "runs")
	run := e.run("run", "clock-jump", "--seed", "3", "--store", store)
	if run.code != 1 {
		t.Fatalf("run exit %d, want 1", run.code)
	}
	dir := filepath.Dir(reportPath(t, run.stdout))
	if err := os.Remove(filepath.Join(dir, "porcupine.html")); err != nil {
		t.Fatal(err)
	}

	res := e.run("check", dir)
	if res.code != 1 || !strings.Contains(res.stdout, "verdict: INVALID") ||
		!strings.Contains(res.stdout, "lease-lock (P1): invalid") || !strings.Contains(res.stdout, "both believed they held lock") {
		t.Errorf("check: exit %d\n%s", res.code, res.stdout)
	}
	if verdict, seed := readResult(t, dir); verdict != "invalid" || seed != 3 {
		t.Errorf("result.json says %s, seed %d: the run's own record should be kept", verdict, seed)
	}
	if _, err := os.Stat(filepath.Join(dir, "porcupine.html")); err != nil {
		t.Errorf("check did not redraw the failing window: %v", err)
	}

	// The same history cut short by a crash: the violation is before the
	// torn line, so it still counts.
	torn := copyRun(t, dir, "clock-jump", tear)
	res = e.run("check", torn)
	if res.code != 1 || !strings.Contains(res.stderr, "cut short") {
		t.Errorf("torn history: exit %d, stderr %q", res.code, res.stderr)
	}
	for _, f := range []string{"result.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(torn, f)); err != nil {
			t.Errorf("check of a crashed run wrote no %s: %v", f, err)
		}
	}

	// Cut before c2 acquires: nothing is wrong in the prefix, and that is
	// unknown, not valid.
	early := copyRun(t, dir, "clock-jump", func(b []byte) []byte {
		i := bytes.Index(b, []byte(`"p":"c2"`))
		return tear(b[:bytes.LastIndexByte(b[:i], '\n')+1])
	})
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
	corrupt := copyRun(t, dir, "clock-jump", func(b []byte) []byte {
		lines := bytes.SplitAfter(b, []byte("\n"))
		lines[2] = []byte("{\"i\":2,\"p\":\"c1\",\"type\":\"bogus\"}\n")
		return bytes.Join(lines, nil)
	})
	res = e.run("check", corrupt)
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
		{[]string{"check", "x", "--timeout", "soon"}, "timeout"},
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
