package scenarios_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"splitbrain/history"
	"splitbrain/nemesis"
	"splitbrain/results"
	"splitbrain/scenarios"
)

// Every built-in story, played once against the lock kinds its file names,
// meets that lock's expectation — both answers apart where it names them
// (results.Met): a lost update where it expects the resource harmed, a
// correct counter where it expects it safe. A story that fits no lock, or
// expects any of a lock it fits, says nothing and fails. The dense matrix,
// every story against every lock it fits, is played once, by the suite
// command (cmd/splitbrain TestSuiteAll): not twice in one CI run.
func TestBuiltinsMeetTheirExpectations(t *testing.T) {
	t.Parallel()
	for _, name := range scenarios.Builtin() {
		if strings.HasPrefix(name, "random-") {
			continue // TestBuiltinsRandomSchedules
		}
		sc, err := scenarios.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		fits := 0
		for _, lock := range scenarios.LockKinds {
			if ok, _ := sc.Fit(lock); !ok {
				continue
			}
			fits++
			if play := sc.PlayAgainst(lock); play.Expect == scenarios.ExpectAny || play.Expect == "" {
				t.Errorf("%s against %s: expect %q: a built-in counterexample or control must say what it shows", name, lock, play.Expect)
			}
			if !slices.Contains(sc.Locks, lock) {
				continue
			}
			t.Run(name+"/"+lock, func(t *testing.T) {
				t.Parallel()
				play := sc.PlayAgainst(lock)
				out := runScenario(t, context.Background(), play, 1)
				if !out.AsExpected {
					a := results.AnswersOf(out.Result)
					t.Errorf("verdict %s (lock %s, resource %q: %s), want %s", out.Result.Verdict, a.Lock, a.Resource, out.Result.Reason, play.Expect)
				}
			})
		}
		if fits == 0 {
			t.Errorf("%s fits no lock", name)
		}
	}
}

// The faults each random built-in may inject, by the part of its name
// after "random-".
var randomFaults = map[string][]string{
	"partition": {nemesis.KindPartition},
	"pause":     {nemesis.KindPause, nemesis.KindClientPause, nemesis.KindClientHeld},
	"clock":     {nemesis.KindClockJump, nemesis.KindClockStrobe, nemesis.KindClockReset},
	"kill":      {nemesis.KindKill, nemesis.KindStop},
	"all": {nemesis.KindPartition, nemesis.KindPause, nemesis.KindClientPause, nemesis.KindClientHeld, nemesis.KindClockJump,
		nemesis.KindClockStrobe, nemesis.KindClockReset, nemesis.KindKill, nemesis.KindStop},
}

// Every random-schedule built-in, played against each lock it lists,
// ends with a verdict (valid or invalid, never unknown: expect any) after
// its schedule injected faults of its kinds only, and the workload ran
// under them. The plays run side by side, each with its own nodes: they
// mostly wait on their schedules' faults.
func TestBuiltinsRandomSchedules(t *testing.T) {
	t.Parallel()
	for _, name := range scenarios.Builtin() {
		if !strings.HasPrefix(name, "random-") {
			continue
		}
		sc, err := scenarios.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		kind, _, _ := strings.Cut(strings.TrimPrefix(name, "random-"), "-")
		allowed, ok := randomFaults[kind]
		if !ok {
			t.Fatalf("%s: no fault kinds known for %q", name, kind)
		}
		if sc.Expect != scenarios.ExpectAny || len(sc.Locks) != 2 {
			t.Errorf("%s: expect %s, locks %v; want expect any against redlock and redsync", name, sc.Expect, sc.Locks)
		}
		for _, play := range sc.Plays() {
			t.Run(name+"/"+play.Lock.Kind, func(t *testing.T) {
				t.Parallel()
				out := runScenario(t, context.Background(), play, 5)
				if !out.AsExpected {
					t.Errorf("verdict %s (%s), want valid or invalid", out.Result.Verdict, out.Result.Reason)
				}
				events, err := history.ReadFile(filepath.Join(out.Dir, results.HistoryFile))
				if err != nil {
					t.Fatal(err)
				}
				faults, granted := 0, 0
				for _, e := range events {
					switch {
					case e.F == history.Acquire && e.Type == history.OK:
						granted++
					case e.F == history.Nemesis:
						f, err := e.Fault()
						if err != nil {
							t.Fatal(err)
						}
						if f.Phase != history.PhaseStart {
							continue
						}
						if !slices.Contains(allowed, f.Kind) {
							t.Errorf("fault %s (%s) is not one of %v", f.Kind, f.Detail, allowed)
						}
						faults++
					}
				}
				if faults == 0 || granted == 0 {
					t.Errorf("%d faults injected, %d acquires granted; want both", faults, granted)
				}
				t.Logf("%s against %s: %s, %d faults, %d grants", name, play.Lock.Kind, out.Result.Verdict, faults, granted)
			})
		}
	}
}
