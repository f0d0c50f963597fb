package spec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"splitbrain/locks"
)

// Overrides changes a loaded scenario from the command line; zero fields
// keep the file's values.
type Overrides struct {
	Lock string // a lock kind (locks.Matrix()), in place of the file's list
	// Only is a lock kind the caller plays alone while the story keeps
	// its list (a suite's --lock: its row is still the whole story). As
	// with Lock, only that lock's deployment's variant takes --clients
	// and --time, so that a --time the other deployments cannot take
	// does not refuse a suite that never plays them.
	Only     string
	Clients  int           // number of clients, c1..cN
	Duration time.Duration // a generated workload's duration
	// Drivers are the names of the user's lock drivers (--lock-driver),
	// which Lock may name too: the name, or name-SUFFIX for one of a
	// driver's several columns (checked once the driver is described).
	Drivers []string
}

// MaxClients bounds --clients.
const MaxClients = 64

// Check says whether each override given is a valid value at all, whatever
// the scenario; given names the flags the user set (lock, clients, time), so
// that a zero given (--clients 0) is refused rather than taken for unset.
// It is the one place these values are judged: the command line calls it
// before any scenario is read, Override calls it again.
func (o Overrides) Check(given func(flag string) bool) error {
	switch {
	case given("lock") && !slices.Contains(locks.Matrix(), o.Lock) && !o.driverLock():
		return fmt.Errorf("--lock %q: want one of %s", o.Lock, strings.Join(append(locks.Matrix(), o.Drivers...), ", "))
	case given("clients") && (o.Clients < 1 || o.Clients > MaxClients):
		return fmt.Errorf("--clients %d: want a whole number from 1 to %d", o.Clients, MaxClients)
	case given("time") && o.Duration < time.Millisecond:
		return fmt.Errorf("--time %v: want a duration of at least 1ms such as 10s", o.Duration)
	case given("time"):
		if err := CheckDuration(o.Duration); err != nil {
			return fmt.Errorf("--time %v: %w", o.Duration, err)
		}
	}
	return nil
}

// driverLock says whether Lock names one of the user's drivers.
func (o Overrides) driverLock() bool {
	return slices.ContainsFunc(o.Drivers, func(d string) bool { return o.Lock == d || strings.HasPrefix(o.Lock, d+"-") })
}

// nonZero is Check's given for overrides set in code: a zero field is unset.
func (o Overrides) nonZero(flag string) bool {
	switch flag {
	case "lock":
		return o.Lock != ""
	case "clients":
		return o.Clients != 0
	case "time":
		return o.Duration != 0
	}
	return false
}

// Override applies o to sc, or says which override does not fit sc and
// what would.
func (sc *Scenario) Override(o Overrides) error {
	if err := o.Check(o.nonZero); err != nil {
		return err
	}
	if o.Lock != "" {
		if sc.Shapes != nil {
			if err := sc.checkShape(o.Lock); err != nil {
				return fmt.Errorf("--lock %s: %w", o.Lock, err)
			}
		}
		*sc = *sc.PlayAgainst(o.Lock)
	}
	// Every play must be able to fence: a lock without tokens cannot
	// write to a fenced storage at all.
	for _, k := range sc.Locks {
		if kind := sc.KindOf(k); sc.Workload.Fencing && (kind == nil || !kind.Fenced) {
			flag := "--lock " + k
			if o.Lock == "" {
				flag = fmt.Sprintf("%s: lock.kind %s", sc.File, k)
			}
			return fmt.Errorf("%s: %s fences its storage and needs a lock with tokens: %s",
				flag, sc.Name, locks.Or(locks.FencedNames()))
		}
	}
	// A fault family plays each deployment's own variant of the story
	// (PlayAgainst picks it): --clients and --time apply to each, or a
	// suite, and a run of every lock the story lists, would play the
	// variants as written (they did, until 2026-11-28: --time 2s left a
	// random schedule of 5.5 s as it was).
	//
	// With --lock only the lock's deployment plays: the others stay as
	// written, so that an override they could not take (--time too short
	// for the ensemble's longer faults) does not refuse a play that never
	// meets them.
	//
	// A lock that plays the story slowed down (Slowed) takes --time as the
	// length of its play, with --lock as with --only: its deployment's
	// variant is slowed first. Played for every lock, a story's --time is
	// the story's, and a slowed play stretches it with the rest.
	played := func(shape locks.Shape) bool { return true }
	var only *locks.Kind
	switch {
	case o.Lock != "":
		only = sc.KindOf(o.Lock)
		played = func(shape locks.Shape) bool { return shape == sc.Shape }
	case o.Only != "":
		// A lock the story does not fit plays none of it (its cells are
		// n/a), and so overrides none of it.
		only = sc.KindOf(o.Only)
		played = func(shape locks.Shape) bool { return only != nil && shape == only.Shape }
	}
	if sc.Shapes == nil || played(sc.Shape) {
		if only != nil {
			*sc = *sc.Slowed(only)
		}
		if err := sc.overrideWorkload(o, sc.File); err != nil {
			return err
		}
	}
	if sc.Shapes != nil {
		shapes := make(map[locks.Shape]*Scenario, len(sc.Shapes))
		for shape, v := range sc.Shapes {
			c := *v
			if played(shape) {
				if only != nil {
					c = *c.Slowed(only)
				}
				if err := c.overrideWorkload(o, sc.File); err != nil {
					return err
				}
			}
			shapes[shape] = &c
		}
		sc.Shapes = shapes
	}
	return nil
}

// overrideWorkload applies --clients and --time to one variant of a story.
//
// --time stretches or shrinks each random schedule with the workload, in
// proportion, so that the schedule keeps its place in the play: a random
// schedule of 5 s in a workload of 5.5 s is one of 27.3 s under --time
// 30s, drawing as many more faults, not 5 s of faults and 25 s of quiet.
// file is the story's file, for the errors: a deployment's variant has
// none of its own.
func (sc *Scenario) overrideWorkload(o Overrides, file string) error {
	if o.Clients != 0 {
		for _, st := range sc.Steps {
			for _, c := range append([]string{st.Client}, st.Clients...) {
				if n, err := strconv.Atoi(strings.TrimPrefix(c, "c")); err == nil && n > o.Clients {
					return fmt.Errorf("--clients %d: %s:%d: step %s uses %s; want at least %d clients",
						o.Clients, file, st.Line, st.Kind, c, n)
				}
			}
		}
		clients := make([]string, o.Clients)
		for i := range clients {
			clients[i] = fmt.Sprintf("c%d", i+1)
		}
		sc.Clients = clients
	}
	if o.Duration != 0 {
		if !sc.Workload.Generated() {
			return fmt.Errorf("--time %v: %s is scripted, its steps set its length; --time is for a generated workload (workload.kind %s)",
				o.Duration, sc.Name, generatorKinds)
		}
		was := sc.Workload.Duration
		sc.Workload.Duration = o.Duration
		steps := slices.Clone(sc.Steps)
		for i, st := range steps {
			if st.Kind != StepRandom || was <= 0 {
				continue
			}
			s := &steps[i].Schedule
			s.Total = time.Duration(float64(s.Total) * float64(o.Duration) / float64(was))
			if err := s.Validate(); err != nil {
				return fmt.Errorf("--time %v: %s:%d: its random schedule of %v in a workload of %v, made %v, would be invalid: %w",
					o.Duration, file, st.Line, st.Schedule.Total, was, s.Total, err)
			}
		}
		sc.Steps = steps
	}
	return nil
}
