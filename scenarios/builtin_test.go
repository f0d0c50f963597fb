package scenarios_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/nemesis"
	"splitbrain/results"
	"splitbrain/scenarios"
)

// How each built-in must show what it shows, beyond meeting its expect.
type builtinCheck struct {
	// lostUpdate: the counter lost an update (the violation is at the
	// resource, not only in the lock's promises).
	lostUpdate bool
	// resourceSafe: the counter stayed correct (fencing did its job).
	resourceSafe bool
}

var builtinChecks = map[string]builtinCheck{
	"pause-critical-section":        {lostUpdate: true},
	"pause-critical-section-fenced": {resourceSafe: true},
	"pause-during-acquire":          {resourceSafe: true},
	"pause-during-acquire-naive":    {lostUpdate: true},
	"delayed-write":                 {lostUpdate: true},
	"delayed-write-fenced":          {resourceSafe: true},
}

// Every built-in scenario, run once, meets its expectation; those about a
// resource show it at the resource.
func TestBuiltinsMeetTheirExpectations(t *testing.T) {
	for _, name := range scenarios.Builtin() {
		if strings.HasPrefix(name, "random-") {
			continue // TestBuiltinsRandomSchedules
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := builtinChecks[name]
			sc, err := scenarios.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Expect == scenarios.ExpectAny {
				t.Fatalf("expect any: a built-in counterexample or control must say what it shows")
			}
			out := runScenario(t, context.Background(), sc, 1)
			res := out.Result
			if want.lostUpdate && (res.Counter == nil || res.Counter.Verdict != checker.Invalid || res.Counter.LostUpdates == 0) {
				t.Errorf("counter check %+v, want lost updates", res.Counter)
			}
			if want.resourceSafe && (res.Counter == nil || res.Counter.Verdict != checker.Valid) {
				t.Errorf("counter check %+v, want valid", res.Counter)
			}
			if !out.AsExpected {
				t.Errorf("verdict %s (%s), want %s", res.Verdict, res.Reason, sc.Expect)
			}
		})
	}
}

// The faults each random built-in may inject, by the part of its name
// after "random-".
var randomFaults = map[string][]string{
	"partition": {nemesis.KindPartition},
	"pause":     {nemesis.KindPause, nemesis.KindClientPause},
	"clock":     {nemesis.KindClockJump, nemesis.KindClockStrobe, nemesis.KindClockReset},
	"kill":      {nemesis.KindKill, nemesis.KindStop},
	"all": {nemesis.KindPartition, nemesis.KindPause, nemesis.KindClientPause, nemesis.KindClockJump,
		nemesis.KindClockStrobe, nemesis.KindClockReset, nemesis.KindKill, nemesis.KindStop},
}

// Every random-schedule built-in, played against each lock it lists,
// ends with a verdict (valid or invalid, never unknown: expect any) after
// its schedule injected faults of its kinds only, and the workload ran
// under them. One play at a time: they are load on their own.
func TestBuiltinsRandomSchedules(t *testing.T) {
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
