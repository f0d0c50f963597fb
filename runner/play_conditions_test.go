package runner_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/runner"
	"splitbrain/runstore"
)

func readHistory(t *testing.T, out *runner.Outcome) []history.Event {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(out.Dir, runstore.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// A node timeout of a second and a TTL of two: under CI's load a 250 ms
// timeout once refused a setup acquire (step 1 of "extend without a
// lease"), which made the test judge a step it does not test.
const threeNodes = `name: t
expect: safe
cluster: {nodes: 3}
lock: {ttl: 2s, node_timeout: 1s}
workload: {clients: 2}
steps:
`

// A scripted acquire or extend that goes otherwise than its step expects
// stops the script and makes the verdict unknown, naming the step; it is
// not a failure of the harness.
func TestStepNotAsScriptedMakesTheVerdictUnknown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, steps string
		want        string
	}{
		{"acquire refused", `  - acquire: {client: c1, expect: acquired}
  - acquire: {client: c2, expect: acquired}
  - acquire: {client: c1}
`, "step 2 (acquire c2): expected acquired, was refused: "},
		{"acquire granted", `  - acquire: {client: c1, expect: refused}
  - acquire: {client: c1}
`, "step 1 (acquire c1): expected refused, was acquired"},
		{"extend refused", `  - acquire: {client: c1, expect: acquired}
  - wait: {until: expired, client: c1}
  - extend: {client: c1, expect: extended}
  - acquire: {client: c1}
`, "step 3 (extend c1): expected extended, was refused: "},
		{"extend without a lease", `  - acquire: {client: c2, expect: acquired}
  - extend: {client: c1, expect: refused}
  - acquire: {client: c1}
`, "step 2 (extend c1): expected refused, was no lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := runScenario(t, context.Background(), parse(t, threeNodes+tc.steps), 1)
			res := out.Result
			if res.Verdict != checker.Unknown || !strings.Contains(res.Reason, tc.want) {
				t.Errorf("verdict %s (%s), want unknown because %q", res.Verdict, res.Reason, tc.want)
			}
			if out.AsExpected {
				t.Error("an unknown verdict met expect: safe")
			}
			// The script stopped at the step: the last acquire never ran.
			invokes := 0
			for _, e := range readHistory(t, out) {
				if e.F == history.Acquire && e.Type == history.Invoke {
					invokes++
				}
			}
			if want := strings.Count(tc.steps, "acquire:") - 1; invokes != want {
				t.Errorf("%d acquires ran, want %d (none after the step that went otherwise)", invokes, want)
			}
		})
	}
}

// A wait for a condition that does not come fails the run with
// ErrWaitTimeout, and the verdict is unknown.
func TestWaitUntilTimesOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, steps, want string
	}{
		{"node stays down", `  - kill: {node: n2}
  - wait: {until: down, node: n2}
  - wait: {until: up, node: n2, timeout: 300ms}
`, "step 3 (wait): wait until up n2: not up after 300ms"},
		{"node stays up", `  - wait: {until: down, node: n2, timeout: 300ms}
`, "step 1 (wait): wait until down n2: not down after 300ms"},
		{"lease outlives the timeout", `  - acquire: {client: c1, expect: acquired}
  - wait: {until: expired, client: c1, timeout: 100ms}
`, "step 2 (wait): wait until expired: c1's lease on \"lock\" is valid for"},
		// Armed at a point the scripted client never reaches.
		{"client never paused", `  - pause: {client: c1, at: before-release, for: 1s}
  - wait: {until: paused, client: c1, timeout: 200ms}
`, "step 2 (wait): wait until c1 paused: not paused after 200ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := parse(t, strings.Replace(threeNodes, "ttl: 2s", "ttl: 5s", 1)+tc.steps)
			out, err := runner.Run(context.Background(), sc, runner.RunOptions{Seed: 1, Store: t.TempDir(), CacheDir: playCache(t)})
			if !errors.Is(err, runner.ErrWaitTimeout) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrWaitTimeout saying %q", err, tc.want)
			}
			if out == nil || out.Result.Verdict != checker.Unknown {
				t.Fatalf("outcome %+v, want an unknown verdict", out)
			}
		})
	}
}

// With at_most instead of timeout, a condition that does not come lets the
// steps go on: the same wait as above, the run played to its end.
func TestWaitAtMostGoesOn(t *testing.T) {
	t.Parallel()
	sc := parse(t, strings.Replace(threeNodes, "ttl: 2s", "ttl: 5s", 1)+`  - pause: {client: c1, at: before-release, for: 1s}
  - wait: {until: paused, client: c1, at_most: 200ms}
  - acquire: {client: c1, expect: acquired}
`)
	out, err := runner.Run(context.Background(), sc, runner.RunOptions{Seed: 1, Store: t.TempDir(), CacheDir: playCache(t)})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if out.Result.Verdict == checker.Unknown {
		t.Fatalf("verdict unknown (%s), want the steps played on", out.Result.Reason)
	}
	acquired := false
	for _, e := range readHistory(t, out) {
		acquired = acquired || e.F == history.Acquire && e.Type == history.OK
	}
	if !acquired {
		t.Error("the acquire after the wait never ran")
	}
}

// lock.retries makes one acquire keep trying: c2 waits out c1's lease
// instead of being refused at once, with our Redlock and with redsync.
func TestLockRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, retries, want string
	}{
		{"redlock", "", "refused"},
		{"redlock", ", retries: 60", "acquired"},
		{"redsync", "", "refused"},
		{"redsync", ", retries: 60", "acquired"},
	} {
		t.Run(tc.kind+tc.retries, func(t *testing.T) {
			t.Parallel()
			lock := "lock: {kind: " + tc.kind + ", ttl: 2s, node_timeout: 1s" + tc.retries + "}"
			sc := parse(t, strings.Replace(threeNodes, "lock: {ttl: 2s, node_timeout: 1s}", lock, 1)+
				"  - acquire: {client: c1, expect: acquired}\n  - acquire: {client: c2, expect: "+tc.want+"}\n")
			out := runScenario(t, context.Background(), sc, 1)
			if out.Result.Verdict != checker.Valid {
				t.Errorf("verdict %s (%s), want valid with c2 %s", out.Result.Verdict, out.Result.Reason, tc.want)
			}
		})
	}
}

// lock.extend: in a generated workload every client extends its lease in
// each critical section; the history records the extensions with later
// deadlines, and the checker, judging by them, finds the run valid.
func TestGeneratedWorkloadExtends(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"redlock", "redsync"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			sc := parse(t, `name: extend
expect: safe
cluster: {nodes: 3}
lock: {kind: `+kind+`, ttl: 1s, node_timeout: 250ms, extend: on}
workload: {kind: counter, clients: 2, duration: 2s, think: 20ms}
`)
			out := runScenario(t, context.Background(), sc, 1)
			if out.Result.Verdict != checker.Valid {
				t.Fatalf("verdict %s (%s), want valid", out.Result.Verdict, out.Result.Reason)
			}
			deadline := map[string]int64{} // process → its lease's deadline
			extended := 0
			for _, e := range readHistory(t, out) {
				if e.Type != history.OK || e.Deadline == nil {
					continue
				}
				switch e.F {
				case history.Acquire:
					deadline[e.Process] = *e.Deadline
				case history.Extend:
					prev, ok := deadline[e.Process]
					if !ok || *e.Deadline <= prev {
						t.Errorf("extend %+v: deadline %d, not after its lease's %d", e, *e.Deadline, prev)
					}
					deadline[e.Process] = *e.Deadline
					extended++
				}
			}
			if extended == 0 {
				t.Error("no extension recorded")
			}
		})
	}
}
