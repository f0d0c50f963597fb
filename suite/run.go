package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"splitbrain/internal/loadgate"
	"splitbrain/pages"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

// DefaultParallel is how many plays a suite runs side by side at most
// unless told otherwise. Plays mostly wait — on TTLs, on faults, on think
// times — so many share a core; what a machine carries without stretching
// the stories' timing depends on which plays run and on what else the
// machine does, so the suite's gate (newGate) starts each play only while
// the CPUs have room. The bound only caps the nodes, proxies and ports in
// use at once.
func DefaultParallel() int {
	return min(max(16*runtime.NumCPU(), 1), 48)
}

// indexEvery is how often a suite refreshes the store's index while it
// plays.
const indexEvery = 10 * time.Second

// refreshIndex rebuilds store's index every period until the returned
// stop is called, which waits for a rebuild under way. A failed rebuild
// is reported on w; the next may succeed.
func refreshIndex(store string, period time.Duration, w io.Writer) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := pages.WriteIndex(store); err != nil {
					fmt.Fprintf(w, "splitbrain: the store's index: %v\n", err)
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// gateBusy is the share of the machine's CPU time in use at or above which
// a suite starts no new play. On the project's 2-core machine (2026-11-27,
// BENCHMARKS.md, "The suite") `suite --runs 10` kept all 2 170
// verdicts in each of four runs at 94 %, the CPUs 90-91 % busy on average
// against 87-89 % at 88 %, and took no more CPU per play (895-1 022 CPU-s
// against 975-1 043 at 88 %, on a host whose speed drifted by a quarter):
// the plays' timing held, and the suite took 507-571 s against 572-606.
// Below 88 % a tenth of the time or more went unused.
const gateBusy = 0.94

// newGate holds each play of a suite back until the CPUs have room:
// below gateBusy, and 100 ms after the previous start, so that what a
// start costs shows before the next is decided. One play per core runs
// whatever the load, so that a suite on a machine busy with other work
// still ends. A gate shared with other suites through the file shared
// lets one play of each run whatever the load: each suite still ends,
// and N suites on one machine do not start N plays per core past the
// bound (4 tasks of a fanned-out suite on 2 cores would be 8).
func newGate(shared string) (*loadgate.Gate, error) {
	floor := runtime.NumCPU()
	if shared != "" {
		floor = 1
	}
	return loadgate.New(loadgate.Options{Busy: gateBusy, Floor: floor, Spacing: 100 * time.Millisecond, Shared: shared})
}

// Plan is what a suite will play: its stories, its lock kinds and the
// cells they make, each a play or n/a and why.
type Plan struct {
	Scenarios []*spec.Scenario
	Locks     []string
	Cells     []Cell
	// backend is --backend's: empty, each story's own (runner.Backend).
	backend string
}

// NewPlan lays out scs × locks (Cells); a cell whose backend does not
// exist is n/a too. backend is the suite's --backend, empty for each
// scenario file's own.
func NewPlan(scs []*spec.Scenario, locks []string, backend string) Plan {
	p := Plan{Scenarios: scs, Locks: locks, Cells: Cells(scs, locks), backend: backend}
	for i, c := range p.Cells {
		if c.NA != "" {
			continue
		}
		if ok, why := runner.FitBackend(c.Scenario, p.Backend(c)); !ok {
			p.Cells[i].NA = why
		}
	}
	return p
}

// Backend is where the cell's nodes run.
func (p Plan) Backend(c Cell) string { return runner.Backend(p.backend, c.Scenario.Backend) }

// Backends lists the backends the plays need, in the cells' order, once
// each: what must be ready before the suite starts.
func (p Plan) Backends() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range p.Cells {
		if b := p.Backend(c); c.NA == "" && !seen[b] {
			out = append(out, b)
			seen[b] = true
		}
	}
	return out
}

// Played counts the cells that are played, and NA those that are not.
func (p Plan) Played() (played, na int) {
	for _, c := range p.Cells {
		if c.NA == "" {
			played++
		} else {
			na++
		}
	}
	return played, na
}

// Matrix assembles the plan's matrix, seeded with seed and runs plays per
// cell, from run folders: its stories and locks, each cell the plays of
// its folders. The matrix reads fit off the stories; what the backend
// cannot run is this suite's, so its n/a comes from the cells.
func (p Plan) Matrix(runs []PlayedRun, seed int64, nruns int) runstore.Matrix {
	m := Assemble(runs, p.Scenarios, p.Locks)
	whyNA := map[[2]string]string{}
	for _, c := range p.Cells {
		whyNA[[2]string{c.Scenario.Name, c.Lock}] = c.NA
	}
	for i, c := range m.Cells {
		if why := whyNA[[2]string{c.Scenario, c.Lock}]; c.NA == "" && len(c.Plays) == 0 && why != "" {
			m.Cells[i].NA = why
		}
	}
	m.Seed, m.Seeds, m.Runs = seed, Seeds(seed, nruns), nruns
	return m
}

// Seeds are the plays' seeds run by run: Seeds(seed, runs)[i] is run i's.
func Seeds(seed int64, runs int) []int64 {
	seeds := make([]int64, runs)
	for i := range seeds {
		seeds[i] = PlaySeed(seed, i)
	}
	return seeds
}

// Options configures Run.
type Options struct {
	// Seed is the suite's seed; Runs how many times each cell is played;
	// Parallel how many plays run side by side at most.
	Seed     int64
	Runs     int
	Parallel int
	// Store is the store the plays and the matrix are written into.
	Store string
	// Command is the command line that started the suite, for the matrix.
	Command string
	// Rerun returns the command that re-runs one play alone.
	Rerun func(sc *spec.Scenario, seed int64) string
	// Progress, when set, returns where one play's step lines go, as run
	// prints them; nil keeps them in each play's harness log only.
	Progress func(sc *spec.Scenario, seed int64) io.Writer
	// Done is called as each play ends, one call at a time.
	Done func(PlayResult)
	// Errors is where a failed refresh of the store's index is reported
	// while the suite plays.
	Errors io.Writer
	// Shard, when set, plays only its share of the plays (Shard.Share),
	// and the matrix says it holds one share.
	Shard Shard
	// SharedGate, when set, is a file through which this suite's gate
	// decides as one with the other suites given the same file on this
	// machine (loadgate.Options.Shared).
	SharedGate string
	// NoReplay plays no play again: by default a play that missed its
	// expectation while the harness or a driver stood still is replayed
	// once, alone, at the suite's end (StoodStill), and the replay decides.
	NoReplay bool
}

// Result is a suite played: its matrix as written, and what stopped it.
type Result struct {
	// Matrix is the matrix as written and read back, its cells tallied.
	Matrix runstore.Matrix
	// Path is the matrix page, in the store as given.
	Path  string
	Plays []PlayResult
	Wall  time.Duration
	// Stopped says why the suite stopped before its end (ErrNoRunFolder,
	// wrapped); Unread names the run folders whose record could not be
	// read, which the matrix lacks.
	Stopped error
	Unread  error
}

// Totals counts the matrix's plays, those that met their expectation and
// the flaky cells: a suite passes when every play met it and no cell is
// flaky.
func (r Result) Totals() (plays, met, flaky int) {
	for _, c := range r.Matrix.Cells {
		plays += c.Runs
		met += c.Met
		if c.Flaky {
			flaky++
		}
	}
	return plays, met, flaky
}

// firstPlays counts the plays of prs that are not replays.
func firstPlays(prs []PlayResult) int {
	n := 0
	for _, pr := range prs {
		if pr.ReplayOf == "" {
			n++
		}
	}
	return n
}

// Run plays the plan (Play), the store's index refreshed now and then,
// and writes the safety matrix from the run folders the plays made into
// the store, with the index once more. When ctx ends (Ctrl-C) the matrix
// holds the plays that ended and says it is partial. The error says the
// gate could not be made or the matrix not written.
func Run(ctx context.Context, p Plan, opts Options) (Result, error) {
	gate, err := newGate(opts.SharedGate)
	if err != nil {
		return Result{}, err
	}
	defer gate.Close()
	started := time.Now()
	// The store's index lists every run in it: rebuilt after each play it
	// cost more than the plays' reports (a suite of 2 000 plays rebuilt
	// an index of up to 2 000 rows 2 000 times). Now and then is enough
	// for someone watching, and once at the end; on a goroutine of its
	// own, since a rebuild of thousands of runs takes a few hundred
	// milliseconds, in which no ending play should wait.
	stopIndexing := refreshIndex(opts.Store, indexEvery, opts.Errors)
	po := PlayOptions{
		Seed: opts.Seed, Runs: opts.Runs, Parallel: opts.Parallel, Gate: gate,
		Run:     runner.RunOptions{Store: opts.Store, Backend: p.backend, ProgressEvery: -1, NoIndex: true},
		Command: opts.Rerun, Progress: opts.Progress, Done: opts.Done, Shard: opts.Shard,
	}
	if opts.Progress != nil {
		// Each play's steps as they happen, and its progress as run prints it.
		po.Run.ProgressEvery = 0
	}
	if !opts.NoReplay {
		po.Replay = StoodStill
	}
	prs, stopped := Play(ctx, p.Cells, po)
	wall := time.Since(started)
	stopIndexing()

	var dirs []string
	for _, pr := range prs {
		if pr.Outcome != nil {
			dirs = append(dirs, pr.Outcome.Dir)
		}
	}
	runsRead, readErr := ReadRuns(dirs)
	m := p.Matrix(runsRead, opts.Seed, opts.Runs)
	planned := len(opts.Shard.Share(Jobs(p.Cells, opts.Runs)))
	m.Title = "splitbrain suite"
	m.Command = opts.Command
	m.Started, m.Wall = started, runstore.Duration(wall.Round(time.Second))
	if ctx.Err() != nil {
		m.Partial = fmt.Sprintf("the suite was interrupted after %v; %d of %d plays ended (each healed, cleaned up and reported), the others were not started",
			wall.Round(time.Second), firstPlays(prs), planned)
	} else if stopped != nil {
		m.Partial = "the suite stopped: " + stopped.Error()
	}
	if !opts.Shard.Whole() {
		m.Partial = strings.TrimPrefix(m.Partial+"; ", "; ") + fmt.Sprintf("share %s of the suite: %d of its plays, the other shares' in stores of their own; splitbrain matrix over them all assembles the whole", opts.Shard, planned)
	}
	store, err := filepath.Abs(opts.Store)
	if err != nil {
		return Result{}, err
	}
	if err := pages.WriteMatrix(store, m); err != nil {
		return Result{}, errors.Join(err, readErr, pages.WriteIndex(opts.Store))
	}
	// The index lists every run and the matrix: rebuilt once more now
	// that both are written.
	readErr = errors.Join(readErr, pages.WriteIndex(opts.Store))
	// Read back what was written: the tallies are WriteMatrix's.
	if back, err := runstore.ReadMatrix(store); err == nil {
		m = back
	}
	return Result{Matrix: m, Path: filepath.Join(opts.Store, runstore.MatrixFile), Plays: prs, Wall: wall,
		Stopped: stopped, Unread: readErr}, nil
}
