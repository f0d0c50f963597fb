// Package suite plays a suite — every story against every lock kind it
// fits, each several times, side by side as the CPUs allow — and
// assembles the safety matrix from the run folders it leaves: the plan of
// plays (Cells, PlaySeed, PlayOrder), the playing (Play, Run) and the
// matrix (ReadRuns, Assemble, Rebuild). The matrix's tally is runstore's
// and its page pages'; the command line is cmd/splitbrain's.
package suite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"splitbrain/locks"
	"splitbrain/runner"
	"splitbrain/scenarios/fit"
	"splitbrain/scenarios/spec"
)

// A suite plays cells: a story against one lock kind, each played Runs
// times on seeds derived from the suite's seed, several plays side by side.
// Each play is self-contained — scenario, lock, seed and backend make one
// run folder — so that a matrix can be assembled from run folders alone.

// Cell is a story against one lock kind: a play, or n/a and why.
type Cell struct {
	// spec.Scenario is the story played against spec.Lock alone (PlayAgainst), with
	// that lock's expectation.
	Scenario *spec.Scenario
	Lock     string
	// NA says why the story does not fit the lock; empty when it does.
	NA string
}

// Cells lays out scenarios × lock kinds, in that order; a pair that does
// not fit is a cell that says why.
func Cells(scs []*spec.Scenario, locks []string) []Cell {
	var out []Cell
	for _, sc := range scs {
		for _, k := range locks {
			c := Cell{Scenario: sc.PlayAgainst(k), Lock: k}
			if ok, why := fit.Lock(sc, k); !ok {
				c.NA = why
			}
			out = append(out, c)
		}
	}
	return out
}

// PlaySeed is the seed of the run-th play (from 0) of every cell of a
// suite seeded with seed: the first play uses the suite's seed itself, so
// that a suite of one run replays as `run NAME --seed SEED`; the others
// derive theirs by SplitMix64, so that neighbouring suite seeds do not
// share plays. It does not depend on the lock, so run i of every lock
// of a random schedule meets the same faults.
func PlaySeed(seed int64, run int) int64 {
	if run == 0 {
		return seed
	}
	z := uint64(seed) + uint64(run)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	// Non-negative, as the seeds a user types are.
	return int64(z >> 1)
}

// PlayOptions configures Play.
type PlayOptions struct {
	// Seed is the suite's seed; each play's is PlaySeed(Seed, run).
	Seed int64
	// Runs is how many times each cell is played (at least 1).
	Runs int
	// Parallel is how many plays run side by side (at least 1).
	Parallel int
	// Run is the template of each play's options; Seed, Command and
	// Progress are set per play.
	Run runner.RunOptions
	// Command returns the command that re-runs one play alone.
	Command func(sc *spec.Scenario, seed int64) string
	// Progress returns where one play's step lines go; nil discards them
	// (they stay in the play's harness log).
	Progress func(sc *spec.Scenario, seed int64) io.Writer
	// Done is called as each play ends, one call at a time.
	Done func(PlayResult)
	// Gate, when set, is asked before each play starts: it returns when
	// the machine can carry one more beside the running() in flight.
	Gate Gate
	// Shard, when set, plays only its share of the plays (Shard.Share).
	Shard Shard
	// Replay, when set, is asked of each play as it ends: a play for
	// which it says true is played again, with the same seed, once,
	// after every other play has ended and one at a time (StoodStill is
	// the suite's rule). The replay's run folder names the first's
	// (runstore.Meta.ReplayOf), and the matrix decides by the replay.
	Replay func(PlayResult) bool
}

// StoodStill is the rule by which a suite replays a play: it missed its
// expectation while the harness or one of its lock drivers stood still
// (checker.Result.Stalls) — a pause no story scripts, which on a loaded
// machine moves a story's timing as a fault would (a holder's renewal
// late past its TTL, a point's "go" late past the node's timeout), so
// the miss may be the machine's and not the lock's. The replay, alone,
// says which; the first play stays beside it, in the matrix and on disk.
// A play that met its expectation, or missed it with nothing standing
// still, is never replayed, and a replay is not replayed: no play is
// played again for its verdict alone.
func StoodStill(pr PlayResult) bool {
	return pr.Outcome != nil && !pr.Outcome.AsExpected && len(pr.Outcome.Result.Stalls) > 0
}

// Gate holds back a suite's next play (loadgate.Gate does, while the
// CPUs are busy).
type Gate interface {
	Wait(ctx context.Context, running func() int) error
}

// PlayResult is one play of a cell.
type PlayResult struct {
	Cell    int // index into the cells given to Play
	Run     int // 0 .. Runs-1
	Seed    int64
	Outcome *runner.Outcome // nil when no run folder was made
	Err     error
	// ReplayOf is, for a replay (PlayOptions.Replay), the name of the
	// first play's run folder; empty for a first play.
	ReplayOf string
}

// ErrNoRunFolder means a play could not even make its run folder (no
// redis-server, no engine): every other play would fail the same way, so
// the suite stops.
var ErrNoRunFolder = errors.New("a play made no run folder")

// Play plays every cell that fits, opts.Runs times each (or opts.Shard's
// share of those plays), opts.Parallel at a time, in the plan's order
// (Jobs): first every cell's first run, then every cell's second, so
// that a suite cut short has a matrix as wide as possible; within a round
// the longest plays first (Estimate), so that the suite does not wait on
// a long play started last while the others are done. When ctx ends
// (Ctrl-C) no new play starts; the plays in flight stop, heal, clean up
// and write their reports (runner.Run does), and Play returns what was
// played. Then the plays opts.Replay picked are played again, one at a
// time, each result after the play it replays. The error is
// ErrNoRunFolder (wrapped) when a play made nothing.
func Play(ctx context.Context, cells []Cell, opts PlayOptions) ([]PlayResult, error) {
	par := max(opts.Parallel, 1)
	jobs := opts.Shard.Share(Jobs(cells, opts.Runs))
	// A fatal error stops the feeding, not the plays in flight: they
	// must still clean up.
	feedCtx, stopFeeding := context.WithCancel(ctx)
	defer stopFeeding()
	var (
		mu      sync.Mutex
		out     []PlayResult
		replays []PlayResult // the plays to play again
		fatal   error
		wg      sync.WaitGroup
		next    = make(chan Job)
		// in flight, for the gate
		running atomic.Int64
	)
	inFlight := func() int { return int(running.Load()) }
	// play plays one job (a replay of the play in the folder named
	// replayOf, when that is not empty) and records its result; false
	// when the suite stopped before it could start.
	play := func(j Job, replayOf string) bool {
		if opts.Gate != nil && opts.Gate.Wait(feedCtx, inFlight) != nil {
			return false // stopped: no new play
		}
		c := cells[j.Cell]
		seed := PlaySeed(opts.Seed, j.Run)
		ro := opts.Run
		ro.Seed, ro.ReplayOf = seed, replayOf
		if opts.Command != nil {
			ro.Command = opts.Command(c.Scenario, seed)
		}
		ro.Progress = nil
		if opts.Progress != nil {
			ro.Progress = opts.Progress(c.Scenario, seed)
		}
		running.Add(1)
		o, err := runner.Run(ctx, c.Scenario, ro)
		running.Add(-1)
		pr := PlayResult{Cell: j.Cell, Run: j.Run, Seed: seed, Outcome: o, Err: err, ReplayOf: replayOf}
		mu.Lock()
		defer mu.Unlock()
		out = append(out, pr)
		if o == nil && fatal == nil {
			fatal = fmt.Errorf("%w: %s against %s: %v", ErrNoRunFolder, c.Scenario.Name, c.Lock, err)
			stopFeeding()
		}
		if replayOf == "" && opts.Replay != nil && o != nil && opts.Replay(pr) {
			replays = append(replays, pr)
		}
		if opts.Done != nil {
			opts.Done(pr)
		}
		return true
	}
	for range par {
		wg.Go(func() {
			for j := range next {
				play(j, "")
			}
		})
	}
feed:
	for _, j := range jobs {
		select {
		case next <- j:
		case <-feedCtx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	// The replays, once every other play has ended, one at a time: the
	// machine as quiet as this suite can make it, so that what stood
	// still in the first play stands still in the replay only if the
	// machine is busy with others' work.
	byJob := func(a, b PlayResult) int {
		if a.Run != b.Run {
			return a.Run - b.Run
		}
		if a.Cell != b.Cell {
			return a.Cell - b.Cell
		}
		// A replay after the play it replays.
		return strings.Compare(a.ReplayOf, b.ReplayOf)
	}
	slices.SortFunc(replays, byJob)
	for _, pr := range replays {
		if feedCtx.Err() != nil || !play(Job{Cell: pr.Cell, Run: pr.Run}, filepath.Base(pr.Outcome.Dir)) {
			break
		}
	}
	// In the order of the jobs, whatever order they finished in.
	slices.SortFunc(out, byJob)
	return out, fatal
}

// PlayOrder is the order in which a suite starts the cells that fit
// (indices into cells): the longest plays first by Estimate, ties in the
// cells' order — but the plays that start an ensemble (three JVMs or etcd
// members: a second of CPU or more) spread evenly among the others, the
// longest of each kind first. Put together at the front of a round they
// would saturate the CPUs while their servers come up, and leave the rest
// of the round to the cheap plays, so many that the cap on plays side by
// side binds with the CPUs a third idle: with --runs 10 the load swung
// between the two every round (62-90 % busy, BENCHMARKS.md).
func PlayOrder(cells []Cell) []int {
	var heavy, light []int
	est := make([]time.Duration, len(cells))
	for i, c := range cells {
		switch {
		case c.NA != "":
			continue
		case ensemble(c):
			heavy = append(heavy, i)
		default:
			light = append(light, i)
		}
		est[i] = Estimate(c.Scenario)
	}
	longest := func(a, b int) int { return cmp.Compare(est[b], est[a]) }
	slices.SortStableFunc(heavy, longest)
	slices.SortStableFunc(light, longest)
	n, h := len(heavy)+len(light), len(heavy)
	order := make([]int, 0, n)
	// The k-th ensemble play (from 0) goes at the first position p with
	// k/h <= p/n: the first one first, the others n/h apart.
	placed := 0
	for p := range n {
		if placed < h && placed*n <= p*h {
			order = append(order, heavy[placed])
			placed++
			continue
		}
		order, light = append(order, light[0]), light[1:]
	}
	return order
}

// ensemble reports whether cell c's play starts an ensemble.
func ensemble(c Cell) bool {
	k := c.Scenario.LockKind()
	return k != nil && k.Shape == locks.Ensemble
}

// Estimate is roughly how long a play of sc takes, for ordering a suite's
// plays longest first: a generated workload's duration or the scripted
// waits, whichever is longer, plus what an ensemble or Sentinel costs to
// start and settle. Only the order matters; conditions and fault times
// are guesses.
func Estimate(sc *spec.Scenario) time.Duration {
	var waits time.Duration
	for _, st := range sc.Steps {
		switch {
		case st.Kind == spec.StepWait && st.Until == "":
			waits += st.Span.Max
		case st.Kind == spec.StepWait:
			waits += time.Second
		case st.Kind == spec.StepRandom:
			waits += st.Schedule.Total
		}
	}
	d := waits
	if sc.Workload.Generated() {
		d = max(d, sc.Workload.Duration)
	}
	switch {
	case sc.LockKind() != nil && sc.LockKind().Shape == locks.Ensemble:
		d += 2 * time.Second
	case sc.Sentinel != nil:
		d += 3 * time.Second
	}
	return d
}

// Family is the fault family a story belongs to, the matrix's row groups.
type Family string

// Fault families, in the matrix's order.
const (
	FamilyClock     Family = "clock"
	FamilyPause     Family = "process pause"
	FamilyRestart   Family = "restart and persistence"
	FamilyFailover  Family = "failover"
	FamilyDelay     Family = "network delay"
	FamilyPartition Family = "network partition"
	FamilyRandom    Family = "random schedules"
)

// Families lists the fault families in the matrix's order.
var Families = []Family{FamilyClock, FamilyPause, FamilyRestart, FamilyFailover, FamilyDelay, FamilyPartition, FamilyRandom}

// FamilyOf reads a story's fault family off its steps: the fault that
// makes the story, when it has several (clock-jump cuts links to shape
// the quorums, but the jump is what breaks the lock; delayed-write pauses
// its client a moment only to start the delay at the right instant).
func FamilyOf(sc *spec.Scenario) Family {
	has := map[Family]bool{}
	for _, st := range sc.Steps {
		switch st.Kind {
		case spec.StepRandom:
			has[FamilyRandom] = true
		case spec.StepPromote, spec.StepReplication:
			has[FamilyFailover] = true
		case spec.StepClock, spec.StepStrobe, spec.StepClockReset:
			has[FamilyClock] = true
		case spec.StepKill, spec.StepStop, spec.StepRestart, spec.StepFsync:
			has[FamilyRestart] = true
		case spec.StepPause, spec.StepResume, spec.StepStarve:
			has[FamilyPause] = true
		case spec.StepNet:
			if st.Fault == "delay" {
				has[FamilyDelay] = true
			}
			has[FamilyPartition] = true
		case spec.StepCut, spec.StepPartition:
			has[FamilyPartition] = true
		}
	}
	for _, f := range []Family{FamilyRandom, FamilyFailover, FamilyClock, FamilyRestart, FamilyDelay, FamilyPause, FamilyPartition} {
		if has[f] {
			return f
		}
	}
	return FamilyPartition
}

// Families assigns each scenario its family; a scenario named after
// another of the set (clock-jump-control after clock-jump) joins that
// one's family, so a control sits beside its story.
func FamiliesOf(scs []*spec.Scenario) map[string]Family {
	out := map[string]Family{}
	for _, sc := range scs {
		out[sc.Name] = FamilyOf(sc)
	}
	for _, sc := range scs {
		best := ""
		for _, o := range scs {
			if o.Name != sc.Name && strings.HasPrefix(sc.Name, o.Name+"-") && len(o.Name) > len(best) {
				best = o.Name
			}
		}
		if best != "" {
			out[sc.Name] = FamilyOf(scenarioNamed(scs, best))
		}
	}
	return out
}

func scenarioNamed(scs []*spec.Scenario, name string) *spec.Scenario {
	for _, sc := range scs {
		if sc.Name == name {
			return sc
		}
	}
	return nil
}
