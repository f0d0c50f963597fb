package scenarios_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"splitbrain/history"
	"splitbrain/results"
	"splitbrain/scenarios"
)

// buildRedlockDriver builds cmd/redlock-driver, the protocol's reference
// driver, into a temporary folder.
func buildRedlockDriver(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "redlock-driver")
	cmd := exec.Command("go", "build", "-o", bin, "splitbrain/cmd/redlock-driver")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/redlock-driver: %v\n%s", err, out)
	}
	return bin
}

// Our Redlock in-process and as a driver process give the same verdicts
// on the same seeds: a violation (the clock jump), a safe control, and a
// story that pauses the client at a point the driver announces
// (pause-during-acquire: the lock's elapsed-time check saves it, in the
// driver too).
func TestDriverMatchesInProcess(t *testing.T) {
	t.Parallel()
	bin := buildRedlockDriver(t)
	for _, name := range []string{"clock-jump", "clock-jump-control", "pause-during-acquire"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := scenarios.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			const seed = 3
			type play struct {
				lock    string
				answers results.Answers
				held    bool
			}
			plays := []play{{lock: scenarios.LockRedlock}, {lock: scenarios.LockDriver}}
			for i := range plays {
				p := sc.PlayAgainst(plays[i].lock)
				if plays[i].lock == scenarios.LockDriver {
					p.Lock.Command = []string{bin}
				}
				out := runScenario(t, context.Background(), p, seed)
				plays[i].answers = results.AnswersOf(out.Result)
				plays[i].held = heldAClient(t, out.Dir)
				t.Logf("%s: %s (%s)", plays[i].lock, out.Result.Verdict, out.Result.Reason)
				if !out.AsExpected {
					t.Errorf("%s: verdict %s (%s), want %s", plays[i].lock, out.Result.Verdict, out.Result.Reason, p.Expect)
				}
			}
			if plays[0].answers != plays[1].answers {
				t.Errorf("in-process %+v, as a driver %+v: want the same answers", plays[0].answers, plays[1].answers)
			}
			if plays[0].held != plays[1].held {
				t.Errorf("a client held at its point: in-process %v, as a driver %v", plays[0].held, plays[1].held)
			}
		})
	}
}

// heldAClient reports whether the run's history records a client stopped
// at a point.
func heldAClient(t *testing.T, dir string) bool {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if f, err := e.Fault(); err == nil && e.F == history.Nemesis && f.Kind == "client-pause-held" {
			return true
		}
	}
	return false
}

// redis-py's Lock, the built-in driver, breaks its promise when paused
// between its SET's reply and acquire()'s return, with the pause on the
// history (and so on the report's timeline); its transcript is in the run
// folder, the password masked.
func TestRedisPyPauseDuringAcquire(t *testing.T) {
	t.Parallel()
	sc, err := scenarios.Load("pause-during-acquire")
	if err != nil {
		t.Fatal(err)
	}
	out := runScenario(t, context.Background(), sc.PlayAgainst(scenarios.LockRedisPy), 1)
	a := results.AnswersOf(out.Result)
	if !out.AsExpected {
		t.Errorf("verdict %s (lock %s, resource %s: %s), want %s", out.Result.Verdict, a.Lock, a.Resource, out.Result.Reason, sc.PlayAgainst(scenarios.LockRedisPy).Expect)
	}
	if !heldAClient(t, out.Dir) {
		t.Errorf("no client-pause-held in the history: the driver's point never held c1")
	}
	log, err := os.ReadFile(filepath.Join(out.Dir, "logs", "driver-c1.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"op":"point","id":1,"point":"after-replies"`, `"password":"***"`, "late by at most"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("logs/driver-c1.log lacks %q", want)
		}
	}
	report, err := os.ReadFile(filepath.Join(out.Dir, results.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "c1 stopped at after-replies") {
		t.Errorf("the report does not show c1's pause")
	}
}

// In a random schedule, a client pause drawn at any point stops a
// driver's process by SIGSTOP wherever it is: recorded in its lane, with
// the stretch it was held, and in the driver's transcript. Seed 10 draws
// one for c1 at 0.66 s.
func TestRandomPauseStopsDriverProcess(t *testing.T) {
	t.Parallel()
	sc, err := scenarios.Load("random-pause-counter")
	if err != nil {
		t.Fatal(err)
	}
	out := runScenario(t, context.Background(), sc.PlayAgainst(scenarios.LockRedisPy), 10)
	if !out.AsExpected {
		t.Errorf("verdict %s (%s), want valid or invalid", out.Result.Verdict, out.Result.Reason)
	}
	events, err := history.ReadFile(filepath.Join(out.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	stops := map[string]bool{}
	for _, e := range events {
		if f, err := e.Fault(); err == nil && e.F == history.Nemesis && f.Phase == history.PhaseStart && strings.Contains(f.Detail, "SIGSTOP") {
			stops[f.Kind+" "+strings.Join(f.Nodes, ",")] = true
		}
	}
	for _, want := range []string{"client-pause c1", "client-pause-held c1"} {
		if !stops[want] {
			t.Errorf("no %s by SIGSTOP in the history; found %v", want, stops)
		}
	}
	log, err := os.ReadFile(filepath.Join(out.Dir, "logs", "driver-c1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "# SIGSTOP") || !strings.Contains(string(log), "# SIGCONT") {
		t.Errorf("c1's transcript does not show the SIGSTOP and SIGCONT")
	}
}
