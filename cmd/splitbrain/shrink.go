package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"splitbrain/checker"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
	"splitbrain/shrink"
)

const shrinkUsage = `Usage: splitbrain shrink RUN_DIR [flags]

Shrinks an invalid run of a generated workload (a random schedule of
faults, say) to the smallest scenario it finds that still violates the
same property: the run's faults as explicit steps at their times, then
fewer of them (delta debugging), fewer clients and keys, a shorter
workload, shorter faults that start sooner. Runs are not deterministic, so
a candidate counts only if every one of --replays replays violates (side
by side); the result's reproduction rate is measured over --confirm
further runs, one at a time as splitbrain run runs the file. Should the
smallest candidate violate in fewer than --min-rate of them, the larger
candidates it was shrunk through are measured in turn, and the first
that reaches it is the result (else the one that did best).

Writes RUN_DIR/shrink/<scenario>-shrunk.yaml — an ordinary scenario file:
expect: violation, a description of what was shrunk from what, and above
each step why it is needed — as soon as it has one and each time it finds
a smaller one, so that Ctrl-C leaves the best so far. The confirming runs
are in RUN_DIR/shrink/, with shrink.log; the run's report links the file
and a run of it. Progress: a line per candidate tried, with the best so
far.

Flags:
  --budget D      the whole shrink, the confirming runs included
                  (default 5m; 0: no bound)
  --replays K     replays that must all violate for a candidate to count
                  (default 3)
  --confirm N     further runs, one at a time, measuring the result's
                  rate (default 10)
  --min-rate F    the share of those runs the result should violate in
                  (default 0.9)
  --parallel P    replays of a candidate side by side, each with its own
                  nodes and ports (default: 2 per core, at most 4)
  --backend NAME  local or docker (default: where the run's nodes ran)
  --json          print the outcome as JSON; progress goes to stderr
  -h, --help      this help

Examples:
  splitbrain shrink store/random-clock-counter/latest
  splitbrain shrink store/random-pause-counter/latest --budget 10m --replays 5
  splitbrain run random-clock-counter --lock redlock --shrink   run, and shrink if invalid

Exit codes: 0 the shrunk scenario is written and its rate measured; 2 no
replay of the run's own faults violated (nothing written), or Ctrl-C (the
best so far is written, its rate not measured); 254 bad arguments or a
run that cannot be shrunk (not a run folder, not invalid, a scripted
scenario, steps without a time); 255 internal error.
`

type shrinkFlags struct {
	budget   time.Duration
	replays  int
	confirm  int
	minRate  float64
	parallel int
	backend  string
	json     bool
}

func cmdShrink(args []string, stdout, stderr io.Writer) (int, error) {
	f, pos, err := parseShrinkFlags(args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) != 1 {
		return exitUsage, &usageError{fmt.Sprintf("shrink takes one run folder (such as store/random-clock-counter/latest), got %d", len(pos))}
	}
	if err := f.check(); err != nil {
		return exitUsage, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	progress := stdout
	if f.json {
		progress = stderr
	}
	res, code, err := runShrink(ctx, pos[0], f, progress)
	if err != nil {
		return code, err
	}
	if f.json {
		writeJSON(stdout, res)
	} else {
		printShrink(stdout, res)
	}
	return code, nil
}

// parseShrinkFlags parses shrink's flags and returns the positional
// arguments.
func parseShrinkFlags(args []string) (shrinkFlags, []string, error) {
	var f shrinkFlags
	fs := flag.NewFlagSet("shrink", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.DurationVar(&f.budget, "budget", 5*time.Minute, "a duration such as 5m (0: no bound)")
	fs.IntVar(&f.replays, "replays", 3, "a whole number from 1 to 100")
	fs.IntVar(&f.confirm, "confirm", 10, "a whole number from 1 to 1000")
	fs.Float64Var(&f.minRate, "min-rate", 0.9, "a share such as 0.9, more than 0 and at most 1")
	fs.IntVar(&f.parallel, "parallel", defaultShrinkParallel(), "a whole number from 1 to 64")
	fs.StringVar(&f.backend, "backend", "", "local or docker")
	fs.BoolVar(&f.json, "json", false, "no value (or =true, =false)")
	pos, err := parseInterleaved(fs, args)
	return f, pos, err
}

func (f shrinkFlags) check() error {
	switch {
	case f.budget < 0:
		return &usageError{fmt.Sprintf("--budget %v: want a duration of 0 (no bound) or more, such as 5m", f.budget)}
	case f.replays < 1 || f.replays > 100:
		return &usageError{fmt.Sprintf("--replays %d: want a whole number from 1 to 100", f.replays)}
	case f.confirm < 1 || f.confirm > 1000:
		return &usageError{fmt.Sprintf("--confirm %d: want a whole number from 1 to 1000", f.confirm)}
	case f.minRate <= 0 || f.minRate > 1:
		return &usageError{fmt.Sprintf("--min-rate %v: want a share more than 0 and at most 1, such as 0.9", f.minRate)}
	case f.parallel < 1 || f.parallel > 64:
		return &usageError{fmt.Sprintf("--parallel %d: want a whole number from 1 to 64", f.parallel)}
	case f.backend != "" && !slices.Contains(spec.Backends, f.backend):
		return &usageError{fmt.Sprintf("--backend %q: want one of %s", f.backend, strings.Join(spec.Backends, ", "))}
	}
	return nil
}

// runShrink shrinks the run in dir and returns the exit code its outcome
// calls for; the error, with that code, says why nothing could be done.
func runShrink(ctx context.Context, dir string, f shrinkFlags, progress io.Writer) (*shrink.Result, int, error) {
	// Replays need what the run needed: without it every replay would
	// fail, which is not a violation that did not come back.
	if meta, err := runstore.ReadMeta(dir); err == nil {
		backend := runner.Backend(f.backend, meta.Backend)
		if err := backendReady(ctx, backend); err != nil {
			return nil, exitInternal, err
		}
	}
	res, err := shrink.Shrink(ctx, dir, shrink.Options{
		Replays: f.replays, Confirm: f.confirm, MinRate: f.minRate, Parallel: f.parallel, Budget: f.budget,
		Backend: f.backend, Progress: progress,
	})
	switch {
	case errors.Is(err, shrink.ErrNotInvalid), errors.Is(err, shrink.ErrNotShrinkable):
		return nil, exitUsage, &usageError{"shrink: " + err.Error()}
	case errors.Is(err, shrink.ErrNoReproduction):
		return nil, exitUnknown, fmt.Errorf("shrink: %w", err)
	case err != nil:
		return nil, exitInternal, fmt.Errorf("shrink: %w", err)
	case res.Interrupted:
		return res, exitUnknown, nil
	}
	return res, exitValid, nil
}

func printShrink(w io.Writer, res *shrink.Result) {
	if res.File == "" {
		fmt.Fprintln(w, "shrink: interrupted before the run's own faults were replayed; nothing written")
		return
	}
	fmt.Fprintf(w, "shrunk: %s\n", res.File)
	fmt.Fprintf(w, "  from %s (%s against %s, seed %d)\n", res.From, res.Scenario, res.Lock, res.Seed)
	fmt.Fprintf(w, "  to   %s, violating %s\n", res.To, res.Property)
	switch {
	case res.Interrupted:
		fmt.Fprintf(w, "  interrupted after %d candidates in %v: the best so far, its reproduction rate not measured\n",
			res.Candidates, res.Wall.Round(time.Second))
		return
	case res.BudgetSpent:
		fmt.Fprintf(w, "  the search stopped at the budget, after %d candidates\n", res.Candidates)
	}
	fmt.Fprintf(w, "  violated %s in %s further runs; %d candidates, %v in all\n", res.Property, res.Reproduced, res.Candidates, res.Wall.Round(time.Second))
	if res.Report != "" {
		fmt.Fprintf(w, "  report of a run of it: %s\n", res.Report)
	}
	if res.LinkErr != "" {
		fmt.Fprintf(w, "  the run's report does not link it: %s\n", res.LinkErr)
	}
	fmt.Fprintf(w, "  run it: splitbrain run %s --seed %d\n", res.File, res.Seed)
}

// shrinkPlay is run --shrink: a play that came out invalid is shrunk at
// once; the run's exit code stays the play's.
func shrinkPlay(ctx context.Context, out *runner.Outcome, sc *spec.Scenario, f runFlags, stdout, stderr io.Writer) {
	progress := stdout
	if f.json {
		progress = stderr
	}
	switch {
	case ctx.Err() != nil:
		return
	case out.Result.Verdict != checker.Invalid:
		fmt.Fprintf(progress, "--shrink: the play is %s, nothing to shrink\n", out.Result.Verdict)
		return
	case !sc.Workload.Generated():
		fmt.Fprintf(progress, "--shrink: %s is scripted, its steps are its story already; nothing to shrink\n", sc.Name)
		return
	}
	fmt.Fprintf(progress, "\nsplitbrain: shrinking %s\n", out.Dir)
	sf := shrinkFlags{budget: f.budget, replays: 3, confirm: 10, minRate: 0.9, parallel: defaultShrinkParallel(), backend: f.backend}
	res, _, err := runShrink(ctx, out.Dir, sf, progress)
	if err != nil {
		fmt.Fprintf(stderr, "splitbrain: %v\n", err)
		return
	}
	printShrink(progress, res)
}

// defaultShrinkParallel is how many replays of a candidate shrink runs
// side by side unless --parallel says otherwise: shrink has no gate, and
// its replays must keep the timing of the run they reproduce.
func defaultShrinkParallel() int {
	return min(max(2*runtime.NumCPU(), 1), 4)
}
