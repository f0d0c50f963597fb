package spec

import (
	"slices"
	"strings"
	"testing"
	"time"

	"splitbrain/locks"
)

// Overrides.Check at both sides of each edge: the values the command line
// and Override both accept, and the first ones they refuse.
func TestOverridesCheck(t *testing.T) {
	all := func(string) bool { return true }
	for _, tc := range []struct {
		name string
		o    Overrides
		want string // "" when valid
	}{
		{"known lock", Overrides{Lock: locks.Redsync.Name, Clients: 1, Duration: time.Millisecond}, ""},
		{"unknown lock", Overrides{Lock: "chubby", Clients: 1, Duration: time.Second}, `--lock "chubby": want one of`},
		{"empty lock given", Overrides{Clients: 1, Duration: time.Second}, `--lock "": want one of`},
		{"no clients", Overrides{Lock: locks.Redsync.Name, Clients: 0, Duration: time.Second}, "--clients 0: want a whole number from 1 to 64"},
		{"most clients", Overrides{Lock: locks.Redsync.Name, Clients: MaxClients, Duration: time.Second}, ""},
		{"one client too many", Overrides{Lock: locks.Redsync.Name, Clients: MaxClients + 1, Duration: time.Second}, "--clients 65"},
		{"time under 1ms", Overrides{Lock: locks.Redsync.Name, Clients: 1, Duration: time.Millisecond - 1}, "want a duration of at least 1ms"},
		{"longest time", Overrides{Lock: locks.Redsync.Name, Clients: 1, Duration: MaxDuration}, ""},
		{"time too long", Overrides{Lock: locks.Redsync.Name, Clients: 1, Duration: MaxDuration + time.Millisecond}, "--time 24h0m0.001s: want at most 24h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Check(all)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	// Set in code, a zero field is unset, not a value to refuse.
	if err := (Overrides{}).Check(Overrides{}.nonZero); err != nil {
		t.Errorf("no overrides: %v", err)
	}
}

// --clients and --time reach every deployment's variant of a fault
// family, whichever way it is played: a suite overrides the story and then
// plays each lock's variant (PlayAgainst), a run with --lock picks the
// variant first. A random schedule is stretched or shrunk with the
// workload, in proportion; one that would be shorter than a fault is
// refused, naming the flag, the file and the line.
func TestOverrideReachesEveryShape(t *testing.T) {
	const name = "random-clock-counter"
	orig, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(orig.Shapes) < 2 {
		t.Fatalf("%s: %d shapes, want a family of several", name, len(orig.Shapes))
	}
	randomTotal := func(sc *Scenario) time.Duration {
		for _, st := range sc.Steps {
			if st.Kind == StepRandom {
				return st.Schedule.Total
			}
		}
		t.Fatalf("%s (%s): no random step", sc.Name, sc.Shape)
		return 0
	}
	o := Overrides{Clients: 5, Duration: 3 * time.Second}
	for _, lock := range []string{locks.Redlock.Name, locks.Single.Name, "zookeeper"} {
		want := orig.PlayAgainst(lock)
		wantTotal := time.Duration(float64(randomTotal(want)) * float64(o.Duration) / float64(want.Workload.Duration))
		suite, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := suite.Override(o); err != nil {
			t.Fatal(err)
		}
		run, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		withLock := o
		withLock.Lock = lock
		if err := run.Override(withLock); err != nil {
			t.Fatal(err)
		}
		for how, sc := range map[string]*Scenario{"suite": suite.PlayAgainst(lock), "run --lock": run} {
			if sc.Shape != want.Shape || sc.Workload.Duration != o.Duration || len(sc.Clients) != o.Clients || randomTotal(sc) != wantTotal {
				t.Errorf("%s against %s: shape %s, workload %v, %d clients, random schedule %v; want %s, %v, %d, %v",
					how, lock, sc.Shape, sc.Workload.Duration, len(sc.Clients), randomTotal(sc), want.Shape, o.Duration, o.Clients, wantTotal)
			}
		}
	}
	// Loading again gives the story as written: nothing was shared.
	again, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if sc := again.PlayAgainst("zookeeper"); sc.Workload.Duration != orig.PlayAgainst("zookeeper").Workload.Duration {
		t.Errorf("a second load plays %v, the first %v", sc.Workload.Duration, orig.PlayAgainst("zookeeper").Workload.Duration)
	}
	// One override of a loaded story leaves the story's other copies alone.
	before := randomTotal(orig.PlayAgainst("zookeeper"))
	cp := *orig
	if err := cp.Override(o); err != nil {
		t.Fatal(err)
	}
	if got := randomTotal(orig.PlayAgainst("zookeeper")); got != before {
		t.Errorf("overriding a copy changed the original's schedule from %v to %v", before, got)
	}
	// Too short for one fault of the schedule.
	short, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	err = short.Override(Overrides{Duration: 10 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "--time 10ms: ") || !strings.Contains(err.Error(), "random-clock-counter.yaml:") || !strings.Contains(err.Error(), "shorter than one fault") {
		t.Errorf("--time 10ms: %v; want it refused, naming the file, the line and why", err)
	}
	// 400 ms fits the masters' faults (200 ms at least) and not the
	// ensemble's (500 ms): a suite, which plays both, is refused, naming
	// the file though the ensemble's variant has none of its own; a play
	// against redlock alone is not.
	mid, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	err = mid.Override(Overrides{Duration: 400 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "random-clock-counter.yaml:") || !strings.Contains(err.Error(), "(500ms)") {
		t.Errorf("a suite at --time 400ms: %v; want it refused for the ensemble's faults, naming the file", err)
	}
	one, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Override(Overrides{Lock: locks.Redlock.Name, Duration: 400 * time.Millisecond}); err != nil {
		t.Errorf("--lock redlock --time 400ms: %v; want it played", err)
	} else if one.Workload.Duration != 400*time.Millisecond {
		t.Errorf("--lock redlock --time 400ms: workload %v", one.Workload.Duration)
	}
}

// TestOverrideOnlyOneLock is a suite's --lock: the story keeps its list
// and its other deployments stay as written, so that a --time only they
// could not take refuses nothing; against a lock whose deployment cannot
// take it, it is refused as before.
func TestOverrideOnlyOneLock(t *testing.T) {
	const name = "random-clock-counter"
	orig, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		only string
		ok   bool
	}{{locks.Redlock.Name, true}, {"zookeeper", false}} {
		sc, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		err = sc.Override(Overrides{Only: c.only, Duration: 400 * time.Millisecond})
		if !c.ok {
			if err == nil || !strings.Contains(err.Error(), "(500ms)") {
				t.Errorf("only %s at --time 400ms: %v; want it refused for the ensemble's faults", c.only, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("only %s at --time 400ms: %v; want it played", c.only, err)
		}
		if got := sc.PlayAgainst(c.only).Workload.Duration; got != 400*time.Millisecond {
			t.Errorf("only %s: its play's workload %v, want 400ms", c.only, got)
		}
		if got, want := sc.PlayAgainst("zookeeper").Workload.Duration, orig.PlayAgainst("zookeeper").Workload.Duration; got != want {
			t.Errorf("only %s: the ensemble's variant, never played, changed from %v to %v", c.only, want, got)
		}
		if !slices.Equal(sc.Locks, orig.Locks) {
			t.Errorf("only %s: the story's locks became %v, want its list %v", c.only, sc.Locks, orig.Locks)
		}
	}
}

// --time is the length of a slowed play, whether --lock or a suite's one
// lock chose it: the story is slowed to the lock's TTL first.
func TestOverrideTimeOfASlowedPlay(t *testing.T) {
	t.Parallel()
	for _, o := range []Overrides{
		{Lock: locks.MalkuschRedlock.Name, Duration: 4 * time.Second},
		{Only: locks.MalkuschRedlock.Name, Duration: 4 * time.Second},
	} {
		sc, err := Load("random-pause-set")
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Override(o); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		play := sc.PlayAgainst(locks.MalkuschRedlock.Name)
		if play.Workload.Duration != 4*time.Second || play.Lock.TTL != 2*time.Second || play.ScaleWhy == "" {
			t.Errorf("%+v: plays %v at a TTL of %v (%q); want 4s at 2s, slowed", o, play.Workload.Duration, play.Lock.TTL, play.ScaleWhy)
		}
	}
}
