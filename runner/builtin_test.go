package runner_test

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/locks"
	"splitbrain/runstore"
	"splitbrain/scenarios/fit"
	"splitbrain/scenarios/spec"
)

// Every scripted built-in story, played against each lock it lists,
// meets that lock's expectation, both answers apart where it names them
// (checker.Met): a lost update where it expects the resource harmed, a
// correct counter where it expects it safe; so does every lock kind that
// no story lists, against the first story (by name) that fits it, so that
// each lock meets a scripted fault in CI. A story that fits no lock, or
// expects any of a lock it fits, says nothing and fails. The dense matrix
// — every story against every lock it fits — is make suite's (and
// BenchmarkSuiteDense's, which fails on a missed expectation): in CI it
// would be 117 plays instead of 38, the largest part of the tests' CPU.
// The plays run side by side, each with its own nodes, the longest first
// (they mostly wait on TTLs and faults).
func TestBuiltinsMeetTheirExpectations(t *testing.T) {
	t.Parallel()
	var stories []*spec.Scenario
	for _, name := range spec.Builtin() {
		if strings.HasPrefix(name, "random-") {
			continue // TestBuiltinsRandomSchedules
		}
		sc, err := spec.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		stories = append(stories, sc)
	}
	var plays []*spec.Scenario
	add := func(play *spec.Scenario) {
		if play.Expect == spec.ExpectAny || play.Expect == "" {
			t.Errorf("%s against %s: expect %q: a built-in counterexample or control must say what it shows", play.Name, play.Lock.Kind, play.Expect)
			return
		}
		plays = append(plays, play)
	}
	listed := map[string]bool{}
	for _, sc := range stories {
		fits := 0
		for _, lock := range locks.Matrix() {
			if ok, _ := fit.Lock(sc, lock); !ok {
				continue
			}
			fits++
			// Every expectation a story states is a sentence of it, even
			// where CI does not play the cell.
			if play := sc.PlayAgainst(lock); play.Expect == spec.ExpectAny || play.Expect == "" {
				t.Errorf("%s against %s: expect %q: a built-in counterexample or control must say what it shows", sc.Name, lock, play.Expect)
			}
		}
		if fits == 0 {
			t.Errorf("%s fits no lock", sc.Name)
		}
		for _, play := range sc.Plays() {
			add(play)
			listed[play.Lock.Kind] = true
		}
	}
	for _, lock := range locks.Matrix() {
		if listed[lock] {
			continue
		}
		i := slices.IndexFunc(stories, func(sc *spec.Scenario) bool { ok, _ := fit.Lock(sc, lock); return ok })
		if i < 0 {
			t.Errorf("no scripted story fits %s", lock)
			continue
		}
		add(stories[i].PlayAgainst(lock))
	}
	slices.SortStableFunc(plays, func(a, b *spec.Scenario) int { return cmp.Compare(slowness(b), slowness(a)) })
	for _, play := range plays {
		t.Run(play.Name+"/"+play.Lock.Kind, func(t *testing.T) {
			t.Parallel()
			playMeetsExpectation(t, play)
		})
	}
}

// playMeetsExpectation plays play on seed 1 and fails t unless it meets
// its expectation — on seed 2 where seed 1 left a liveness promise
// undecided or missed while the harness stood still (the reasons below).
func playMeetsExpectation(t *testing.T, play *spec.Scenario) {
	t.Helper()
	out := runScenario(t, context.Background(), play, 1)
	switch {
	case out.AsExpected:
	case livenessUndecided(t, string(play.Expect), out.Result):
		// The safety answers held and no liveness promise broke: the
		// timing on a loaded machine left an attempt undecided (nothing
		// past the bound, or an outcome unknown). One more seed must
		// decide it.
		t.Logf("seed 1: %s (%s); a liveness promise undecided, playing seed 2", out.Result.Verdict, out.Result.Reason)
		out = runScenario(t, context.Background(), play, 2)
	case len(out.Result.Stalls) > 0:
		// The harness stood still during the play, its clients and
		// nemesis with it: a pause the story did not script, which can
		// move a lease's end past a step. One more seed must meet the
		// expectation all the same.
		t.Logf("seed 1: %s (%s)%s; playing seed 2", out.Result.Verdict, out.Result.Reason, stallsOf(out.Result))
		out = runScenario(t, context.Background(), play, 2)
	}
	if !out.AsExpected {
		a := checker.AnswersOf(out.Result)
		t.Errorf("verdict %s (lock %s, resource %q: %s), want %s%s", out.Result.Verdict, a.Lock, a.Resource, out.Result.Reason, play.Expect, stallsOf(out.Result))
	}
}

// livenessUndecided reports whether res missed expect only by liveness
// answers of unknown: every safety answer is as expected, and no
// liveness answer contradicts its expectation.
func livenessUndecided(t *testing.T, expect string, res checker.Result) bool {
	t.Helper()
	e, err := checker.ParseExpectation(expect)
	if err != nil {
		t.Fatalf("expect %q: %v", expect, err)
	}
	if !e.Liveness() {
		return false
	}
	a := checker.AnswersOf(res)
	undecided := false
	for _, part := range []struct {
		word string
		v    checker.Verdict
	}{{e.DeadlockFreedom, a.DeadlockFreedom}, {e.FaultTolerance, a.FaultTolerance}} {
		switch {
		case part.word == "" || checker.AsExpected(part.word, part.v):
		case part.v == checker.Unknown:
			undecided = true
		default:
			return false
		}
	}
	if !undecided {
		return false
	}
	for _, part := range []struct {
		word string
		v    checker.Verdict
	}{{e.Lock, a.Lock}, {e.Resource, a.Resource}} {
		if part.word != "" && !checker.AsExpected(part.word, part.v) {
			return false
		}
	}
	return true
}

// slowness ranks plays by how long they take, roughly: the consensus
// stories wait for sessions and leases to expire and start JVMs or etcd
// members (10–20 s a play), Sentinel's for a failover; the others for
// TTLs of a few seconds. Starting the longest first keeps the last play
// from starting alone near the end.
func slowness(sc *spec.Scenario) int {
	switch {
	case sc.Lock.Kind == locks.ZooKeeper.Name || sc.Lock.Kind == locks.Etcd.Name || sc.Lock.Kind == locks.EtcdV3Lock.Name:
		return 2
	case sc.Sentinel != nil:
		return 1
	}
	return 0
}

// The faults each random built-in may inject, by the part of its name
// after "random-".
var randomFaults = map[string][]string{
	"partition": {fault.KindPartition},
	"pause":     {fault.KindPause, fault.KindClientPause, fault.KindClientHeld},
	"clock":     {fault.KindClockJump, fault.KindClockStrobe, fault.KindClockReset},
	"kill":      {fault.KindKill, fault.KindStop},
	"all": {fault.KindPartition, fault.KindPause, fault.KindClientPause, fault.KindClientHeld, fault.KindClockJump,
		fault.KindClockStrobe, fault.KindClockReset, fault.KindKill, fault.KindStop},
}

// Every random-schedule built-in ends with a verdict (valid or invalid,
// never unknown: expect any) after its schedule injected faults of its
// kinds only, and the workload ran under them. In CI each schedule is
// played once, against a lock kind of its own taken in turn (our Redlock
// first), and a kind left over when the schedules run out gets the next
// schedule that fits it: every schedule and every lock meet once, without
// the dense random rows' minutes (make suite plays every schedule against
// every lock it fits). A random play runs its workload without a pause —
// about 5 CPU-seconds each under -race — so the count matters on CI's two
// cores. The plays run side by side, each with its own nodes.
func TestBuiltinsRandomSchedules(t *testing.T) {
	t.Parallel()
	var randoms []*spec.Scenario
	for _, name := range spec.Builtin() {
		if !strings.HasPrefix(name, "random-") {
			continue
		}
		sc, err := spec.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		// A family: five masters (redlock and redsync), one master and
		// an ensemble, each measured (expect any).
		if masters := sc.ForLock(locks.Redlock.Name); sc.Expect != spec.ExpectAny || masters == nil || len(masters.Locks) != 2 || len(sc.Shapes) != 3 {
			t.Errorf("%s: expect %s, locks %v, shapes %s; want expect any against redlock and redsync, on every deployment", name, sc.Expect, sc.Locks, sc.ShapesText())
		}
		randoms = append(randoms, sc)
	}
	plays := randomPlays(randoms)
	if len(plays) < len(randoms) {
		t.Errorf("%d plays of %d random schedules: want each played", len(plays), len(randoms))
	}
	for _, play := range plays {
		name := play.Name
		kind, _, _ := strings.Cut(strings.TrimPrefix(name, "random-"), "-")
		allowed, ok := randomFaults[kind]
		if !ok {
			t.Fatalf("%s: no fault kinds known for %q", name, kind)
		}
		t.Run(name+"/"+play.Lock.Kind, func(t *testing.T) {
			t.Parallel()
			out := runScenario(t, context.Background(), play, 5)
			faults, granted, refusals := randomTally(t, out.Dir, allowed)
			// An unknown verdict is a play that decided nothing: a
			// fresh-clone CI saw random-partition-counter grant kazoo
			// nothing in a whole play once, under the load of the plays
			// beside it; the same play alone granted 94 of 347 attempts.
			// Played again (the same seed, so the same schedule), as
			// TestExamples does; what the play before met is logged.
			for try := 2; try <= 3 && out.Result.Verdict == checker.Unknown; try++ {
				t.Logf("play %d: verdict unknown (%s), %d grants; the first acquires not granted:\n%s\nplaying again",
					try-1, out.Result.Reason, granted, strings.Join(refusals, "\n"))
				out = runScenario(t, context.Background(), play, 5)
				faults, granted, refusals = randomTally(t, out.Dir, allowed)
			}
			if !out.AsExpected {
				t.Errorf("verdict %s (%s), want valid or invalid", out.Result.Verdict, out.Result.Reason)
			}
			if faults == 0 || granted == 0 {
				t.Errorf("%d faults injected, %d acquires granted; want both; the first acquires not granted:\n%s", faults, granted, strings.Join(refusals, "\n"))
			}
			t.Logf("%s against %s: %s, %d faults, %d grants", name, play.Lock.Kind, out.Result.Verdict, faults, granted)
		})
	}
}

// randomTally counts a play's faults (each of a kind in allowed) and
// granted acquires, and gives why the first acquires not granted failed.
func randomTally(t *testing.T, dir string, allowed []string) (faults, granted int, refusals []string) {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(dir, runstore.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		switch {
		case e.F == history.Acquire && e.Type == history.OK:
			granted++
		case e.F == history.Acquire && (e.Type == history.Fail || e.Type == history.Info) && len(refusals) < 5:
			refusals = append(refusals, fmt.Sprintf("%s %s: %s", e.Process, e.Type, e.Err))
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
	return faults, granted, refusals
}

// randomPlays pairs each random schedule with a lock kind that fits it,
// each kind once while kinds last, then each kind no schedule got with the
// next schedule that fits it.
func randomPlays(randoms []*spec.Scenario) []*spec.Scenario {
	var plays []*spec.Scenario
	played := map[string]bool{}
	for _, sc := range randoms {
		for _, lock := range locks.Matrix() {
			if ok, _ := fit.Lock(sc, lock); ok && !played[lock] {
				plays = append(plays, sc.PlayAgainst(lock))
				played[lock] = true
				break
			}
		}
	}
	turn := 0
	for _, lock := range locks.Matrix() {
		for range randoms {
			if played[lock] {
				break
			}
			sc := randoms[turn%len(randoms)]
			turn++
			if ok, _ := fit.Lock(sc, lock); ok {
				plays = append(plays, sc.PlayAgainst(lock))
				played[lock] = true
			}
		}
	}
	return plays
}

// stallsOf says, for a failure message, how often and how long the
// harness stood still during the play (checker.Result.Stalls): a miss on
// a loaded machine next to one may be the machine's pause, not the lock.
func stallsOf(res checker.Result) string {
	if len(res.Stalls) == 0 {
		return ""
	}
	return fmt.Sprintf("; the harness stood still %d time(s), at most %v", len(res.Stalls), time.Duration(checker.LongestStall(res.Stalls)).Round(time.Millisecond))
}
