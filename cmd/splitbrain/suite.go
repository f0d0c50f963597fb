package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"splitbrain/checker"
	"splitbrain/internal/loadgate"
	"splitbrain/locks"
	"splitbrain/results"
	"splitbrain/scenarios"
	"splitbrain/scenarios/spec"
)

// defaultParallel is how many plays a suite runs side by side at most
// unless --parallel says otherwise. Plays mostly wait — on TTLs, on
// faults, on think times — so many share a core; what a machine carries
// without stretching the stories' timing depends on which plays run and
// on what else the machine does, so the suite's gate (suiteGate) starts
// each play only while the CPUs have room. The bound only caps the
// nodes, proxies and ports in use at once.
func defaultParallel() int {
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
				if err := results.WriteIndex(store); err != nil {
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

// defaultShrinkParallel is how many replays of a candidate shrink runs
// side by side unless --parallel says otherwise: shrink has no gate, and
// its replays must keep the timing of the run they reproduce.
func defaultShrinkParallel() int {
	return min(max(2*runtime.NumCPU(), 1), 4)
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

// suiteGate holds each play of a suite back until the CPUs have room:
// below gateBusy, and 100 ms after the previous start, so that what a
// start costs shows before the next is decided. One play per core runs
// whatever the load, so that a suite on a machine busy with other work
// still ends.
func suiteGate() (*loadgate.Gate, error) {
	return loadgate.New(loadgate.Options{Busy: gateBusy, Floor: runtime.NumCPU(), Spacing: 100 * time.Millisecond})
}

func cmdSuite(args []string, stdout, stderr io.Writer) (int, error) {
	f, pos, seed, err := parseRunFlags("suite", args)
	if err != nil {
		return exitUsage, err
	}
	switch {
	case f.all && len(pos) > 0:
		return exitUsage, &usageError{fmt.Sprintf("suite takes scenario files or --all, not both; got --all and %q", strings.Join(pos, " "))}
	case f.runs < 1 || f.runs > 1000:
		return exitUsage, &usageError{fmt.Sprintf("--runs %d: want a whole number from 1 to 1000", f.runs)}
	case f.parallel < 1 || f.parallel > 64:
		return exitUsage, &usageError{fmt.Sprintf("--parallel %d: want a whole number from 1 to 64", f.parallel)}
	}
	if len(pos) == 0 {
		pos = spec.Builtin()
	}
	// Load and check every scenario first: a bad file or flag should not
	// be found only after minutes of runs.
	var scs []*spec.Scenario
	for _, p := range pos {
		sc, err := loadScenario(p)
		if err != nil {
			return exitUsage, err
		}
		o := f.overrides
		// The suite plays every lock a story fits (or --lock's); the
		// file's own list is checked for consistency only.
		o.Lock = ""
		if !sc.Workload.Generated() {
			// A suite mixes scripted and generated scenarios; --time is
			// for the generated ones (as the help says).
			o.Duration = 0
		}
		if err := sc.Override(o); err != nil {
			return exitUsage, &usageError{fmt.Sprintf("%s: %v", p, err)}
		}
		if slices.ContainsFunc(scs, func(o *spec.Scenario) bool { return o.Name == sc.Name }) {
			return exitUsage, &usageError{fmt.Sprintf("%s: a scenario named %s is in the suite already; each row needs its own name", p, sc.Name)}
		}
		scs = append(scs, sc)
	}
	locks := locks.Matrix()
	if f.overrides.Lock != "" {
		locks = []string{f.overrides.Lock}
	}
	names := make([]string, len(scs))
	for i, sc := range scs {
		names[i] = sc.Name
	}
	if err := checkStore(f.store, names...); err != nil {
		return exitUsage, err
	}
	cells := scenarios.Cells(scs, locks)
	for i, c := range cells {
		if c.NA != "" {
			continue
		}
		if ok, why := scenarios.FitBackend(c.Scenario, effectiveBackend(c.Scenario, f)); !ok {
			cells[i].NA = why
		}
	}
	ready := map[string]bool{}
	for _, c := range cells {
		if b := effectiveBackend(c.Scenario, f); c.NA == "" && !ready[b] {
			if err := backendReady(context.Background(), b); err != nil {
				return exitInternal, err
			}
			ready[b] = true
		}
	}
	ctx, stdout, stderr, stop := stopContext(stdout, stderr)
	defer stop()

	progress := stderr
	if !f.json {
		progress = stdout
	}
	played, na := 0, 0
	for _, c := range cells {
		if c.NA == "" {
			played++
		} else {
			na++
		}
	}
	seeds := make([]int64, f.runs)
	for i := range seeds {
		seeds[i] = scenarios.PlaySeed(seed, i)
	}
	fmt.Fprintf(progress, "splitbrain suite: %d stories × %d locks = %d cells (%d played, %d n/a), %d run(s) each, up to %d side by side, seed %d\n",
		len(scs), len(locks), len(cells), played, na, f.runs, f.parallel, seed)
	if f.runs > 1 {
		fmt.Fprintf(progress, "play seeds by run: %s (any play re-runs alone: splitbrain run SCENARIO --lock LOCK --seed S)\n", joinSeeds(seeds))
	}

	gate, err := suiteGate()
	if err != nil {
		return exitInternal, err
	}
	started := time.Now()
	var printMu sync.Mutex
	// The store's index lists every run in it: rebuilt after each play it
	// cost more than the plays' reports (a suite of 2 000 plays rebuilt
	// an index of up to 2 000 rows 2 000 times). Now and then is enough
	// for someone watching, and once at the end; on a goroutine of its
	// own, since a rebuild of thousands of runs takes a few hundred
	// milliseconds, in which no ending play should wait.
	stopIndexing := refreshIndex(f.store, indexEvery, stderr)
	opts := scenarios.SuiteOptions{
		Seed: seed, Runs: f.runs, Parallel: f.parallel, Gate: gate,
		Run:     scenarios.RunOptions{Store: f.store, Backend: f.backend, ProgressEvery: -1, NoIndex: true},
		Command: func(sc *spec.Scenario, s int64) string { return rerunCommand(sc, s, f, true) },
		Done: func(pr scenarios.PlayResult) {
			printMu.Lock()
			defer printMu.Unlock()
			printPlay(progress, cells[pr.Cell], pr, f.parallel > 1)
		},
	}
	if f.parallel == 1 {
		// One at a time: each play's steps as they happen, as run prints them.
		opts.Run.ProgressEvery = 0
		opts.Progress = func(sc *spec.Scenario, s int64) io.Writer {
			fmt.Fprintf(progress, "\nsplitbrain: scenario %s against %s, seed %d\n", sc.Name, sc.Lock.Kind, s)
			return progress
		}
	}
	prs, suiteErr := scenarios.RunSuite(ctx, cells, opts)
	wall := time.Since(started)
	stopIndexing()

	var dirs []string
	for _, pr := range prs {
		if pr.Outcome != nil {
			dirs = append(dirs, pr.Outcome.Dir)
		}
	}
	runsRead, readErr := scenarios.ReadRuns(dirs)
	m := scenarios.AssembleMatrix(runsRead, scs, locks)
	// The matrix reads fit off the stories; what the backend cannot run
	// is this suite's, so its n/a comes from the cells.
	whyNA := map[[2]string]string{}
	for _, c := range cells {
		whyNA[[2]string{c.Scenario.Name, c.Lock}] = c.NA
	}
	for i, c := range m.Cells {
		if why := whyNA[[2]string{c.Scenario, c.Lock}]; c.NA == "" && len(c.Plays) == 0 && why != "" {
			m.Cells[i].NA = why
		}
	}
	m.Title = "splitbrain suite"
	m.Command = shellCommand(append([]string{"splitbrain", "suite"}, args...)...)
	m.Seed, m.Seeds, m.Runs, m.Started, m.Wall = seed, seeds, f.runs, started, results.Duration(wall.Round(time.Second))
	if ctx.Err() != nil {
		m.Partial = fmt.Sprintf("the suite was interrupted after %v; %d of %d plays ended (each healed, cleaned up and reported), the others were not started",
			wall.Round(time.Second), len(prs), played*f.runs)
	} else if suiteErr != nil {
		m.Partial = "the suite stopped: " + suiteErr.Error()
	}
	store, err := filepath.Abs(f.store)
	if err != nil {
		return exitInternal, err
	}
	if err := results.WriteMatrix(store, m); err != nil {
		return exitInternal, errors.Join(err, readErr, results.WriteIndex(f.store))
	}
	// The index lists every run and the matrix: rebuilt once more now
	// that both are written.
	readErr = errors.Join(readErr, results.WriteIndex(f.store))
	// Read back what was written: the tallies are WriteMatrix's.
	if back, err := results.ReadMatrix(store); err == nil {
		m = back
	}
	matrixPath := filepath.Join(f.store, results.MatrixFile)

	code := exitValid
	plays, met, flaky := 0, 0, 0
	for _, c := range m.Cells {
		plays += c.Runs
		met += c.Met
		if c.Flaky {
			flaky++
		}
	}
	if met < plays || flaky > 0 {
		code = exitInvalid
	}
	switch {
	case suiteErr != nil:
		code = exitInternal
	case ctx.Err() != nil:
		code = exitUnknown
	}
	if f.json {
		writeJSON(stdout, suiteJSON{Matrix: matrixPath, Partial: m.Partial, Cells: m.Cells})
		return code, errors.Join(suiteErr, readErr)
	}
	fmt.Fprintln(stdout)
	printMatrix(stdout, m)
	for _, c := range m.Cells {
		if c.Flaky {
			fmt.Fprintf(stdout, "FLAKY: %s against %s: %d/%d invalid, expected %s; first play that missed it: %s\n",
				c.Scenario, c.Lock, c.Invalid, c.Runs, c.Expect, filepath.Join(f.store, filepath.FromSlash(c.FirstUnmet)))
		}
	}
	for _, c := range m.Cells {
		if c.Finding {
			fmt.Fprintf(stdout, "finding: %s against %s: %d/%d invalid (95%% interval %.0f–%.0f %%), lock's promise broken %d, resource harmed %d; first: %s\n",
				c.Scenario, c.Lock, c.Invalid, c.Runs, 100*c.Interval[0], 100*c.Interval[1], c.LockBroken, c.ResourceHarmed,
				filepath.Join(f.store, filepath.FromSlash(c.FirstFailing)))
		}
	}
	if m.Partial != "" {
		fmt.Fprintf(stdout, "PARTIAL: %s\n", m.Partial)
	}
	fmt.Fprintf(stdout, "%d of %d plays met their expectation (%d cells played, %d n/a, %d flaky; %d stories, seed %d, %d run(s) per cell, up to %d side by side, %v)\n",
		met, plays, played, na, flaky, len(scs), seed, f.runs, f.parallel, wall.Round(time.Second))
	fmt.Fprintf(stdout, "safety matrix: %s\n", matrixPath)
	return code, errors.Join(suiteErr, readErr)
}

type suiteJSON struct {
	Matrix  string               `json:"matrix"`
	Partial string               `json:"partial,omitempty"`
	Cells   []results.MatrixCell `json:"cells"`
}

func joinSeeds(seeds []int64) string {
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = strconv.FormatInt(s, 10)
	}
	return strings.Join(parts, ", ")
}

// printPlay prints one ended play: in a parallel suite a line of its own,
// else the verdict under the play's steps, as run prints it.
func printPlay(w io.Writer, c scenarios.Cell, pr scenarios.PlayResult, oneLine bool) {
	if pr.Outcome == nil {
		msg, _, _ := strings.Cut(fmt.Sprint(pr.Err), "\n")
		fmt.Fprintf(w, "%s against %s, seed %d: no run: %s\n", c.Scenario.Name, c.Lock, pr.Seed, msg)
		return
	}
	if !oneLine {
		printVerdict(w, c.Scenario, pr.Outcome)
		fmt.Fprintf(w, "report: %s\n", filepath.Join(pr.Outcome.Dir, results.ReportFile))
		return
	}
	mark := "as expected"
	if !pr.Outcome.AsExpected {
		mark = "NOT as expected"
	}
	a := checker.AnswersOf(pr.Outcome.Result)
	res := ""
	if a.Resource != "" {
		res = ", resource " + string(a.Resource)
	}
	res += otherAnswers(pr.Outcome.Result)
	fmt.Fprintf(w, "%-30s %-16s seed %-20d %-7s (lock %s%s; expected %s: %s)  %s\n",
		c.Scenario.Name, c.Lock, pr.Seed, strings.ToUpper(string(pr.Outcome.Result.Verdict)), a.Lock, res,
		c.Scenario.Expect, mark, filepath.Join(pr.Outcome.Dir, results.ReportFile))
	if pr.Err != nil {
		// The first line: a node's error can carry its whole log, which
		// is in the run folder.
		msg, _, _ := strings.Cut(pr.Err.Error(), "\n")
		fmt.Fprintf(w, "  error: %s\n", msg)
	}
}

// otherAnswers names the deciding properties that were not valid besides the
// lock's promise and the resource — the critical section (P2) above all — so
// that "INVALID (lock valid; ...)" never stands without its reason.
func otherAnswers(res checker.Result) string {
	var b strings.Builder
	for _, p := range res.Properties {
		switch p.Name {
		case checker.PropLeaseLock, checker.PropCounter, checker.PropBank, checker.PropSet, checker.PropFencing:
			continue
		}
		if p.Decides && p.Verdict != checker.Valid {
			fmt.Fprintf(&b, ", %s %s", p.Name, p.Verdict)
		}
	}
	return b.String()
}

// printMatrix prints the safety matrix: rows by fault family, a column per
// lock, each cell k/N invalid and whether it met its expectation.
func printMatrix(w io.Writer, m results.Matrix) {
	cells := map[[2]string]results.MatrixCell{}
	family := map[string]string{}
	for _, c := range m.Cells {
		cells[[2]string{c.Scenario, c.Lock}] = c
		family[c.Scenario] = c.Family
	}
	width := len("SCENARIO")
	for _, s := range m.Scenarios {
		width = max(width, len(s))
	}
	colw := make([]int, len(m.Locks))
	texts := map[[2]string]string{}
	for i, l := range m.Locks {
		colw[i] = max(len(l), len("n/a"))
		for _, s := range m.Scenarios {
			c, ok := cells[[2]string{s, l}]
			t := "-"
			switch {
			case !ok:
			case c.NA != "":
				t = "n/a"
			case c.Runs == 0:
				t = "not played"
			default:
				t = fmt.Sprintf("%d/%d", c.Invalid, c.Runs)
				switch {
				case c.Flaky:
					t += " FLAKY"
				case c.Met == c.Runs:
					t += " ok"
				default:
					t += " NO"
				}
			}
			texts[[2]string{s, l}] = t
			colw[i] = max(colw[i], len(t))
		}
	}
	line := func(first string, cols []string) {
		var b strings.Builder
		fmt.Fprintf(&b, "%-*s", width, first)
		for i, c := range cols {
			fmt.Fprintf(&b, "  %-*s", colw[i], c)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line("SCENARIO", m.Locks)
	for _, fam := range append(slices.Clone(m.Families), "") {
		first := true
		for _, s := range m.Scenarios {
			if family[s] != fam {
				continue
			}
			if first && fam != "" {
				fmt.Fprintf(w, "-- %s\n", fam)
			}
			first = false
			cols := make([]string, len(m.Locks))
			for i, l := range m.Locks {
				cols[i] = texts[[2]string{s, l}]
			}
			line(s, cols)
		}
	}
	fmt.Fprintln(w, "(k/N: plays invalid of plays; ok: every play met its expectation; n/a: the story does not fit the lock, matrix.html says why)")
}

// cmdMatrix assembles a matrix from run folders alone: splitbrain matrix
// DIR... finds every run folder (a folder with a result.json) under each
// DIR and writes matrix.html and matrix.json into --out.
func cmdMatrix(args []string, stdout io.Writer) (int, error) {
	var out string
	var pos []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--out" || a == "-out":
			if i+1 >= len(args) {
				return exitUsage, &usageError{"--out wants a folder for matrix.html and matrix.json"}
			}
			out = args[i+1]
			i++
		case strings.HasPrefix(a, "--out="):
			out = strings.TrimPrefix(a, "--out=")
		case strings.HasPrefix(a, "-"):
			return exitUsage, &usageError{fmt.Sprintf("matrix: unknown flag %q; matrix takes run folders (or stores) and --out DIR", a)}
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) == 0 {
		return exitUsage, &usageError{"matrix takes one or more folders: run folders, or stores holding them"}
	}
	if out == "" {
		out = pos[0]
	}
	if err := checkStore(out); err != nil {
		return exitUsage, err
	}
	var dirs []string
	for _, p := range pos {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			return exitUsage, &usageError{fmt.Sprintf("matrix: %q is not a folder; give run folders or stores", p)}
		}
		err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&os.ModeSymlink != 0 {
				return nil // store/latest points at a run listed already
			}
			if !d.IsDir() && d.Name() == results.ResultFile {
				dirs = append(dirs, filepath.Dir(path))
			}
			return nil
		})
		if err != nil {
			return exitInternal, fmt.Errorf("matrix: %w", err)
		}
	}
	if len(dirs) == 0 {
		return exitUsage, &usageError{fmt.Sprintf("matrix: no run folder (a folder with %s) under %s", results.ResultFile, strings.Join(pos, ", "))}
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	runs, readErr := scenarios.ReadRuns(dirs)
	m := scenarios.AssembleMatrix(runs, nil, locks.Matrix())
	m.Title = "splitbrain matrix"
	m.Command = shellCommand(append([]string{"splitbrain", "matrix"}, args...)...)
	seeds := map[int64]bool{}
	for _, r := range runs {
		seeds[r.Rec.Meta.Seed] = true
		if m.Started.IsZero() || r.Rec.Meta.Started.Before(m.Started) {
			m.Started = r.Rec.Meta.Started
		}
	}
	for s := range seeds {
		m.Seeds = append(m.Seeds, s)
	}
	slices.Sort(m.Seeds)
	if len(m.Seeds) == 1 {
		m.Seed = m.Seeds[0]
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return exitInternal, err
	}
	if err := results.WriteMatrix(abs, m); err != nil {
		return exitInternal, err
	}
	if back, err := results.ReadMatrix(abs); err == nil {
		m = back
	}
	printMatrix(stdout, m)
	fmt.Fprintf(stdout, "%d run folders; safety matrix: %s\n", len(runs), filepath.Join(out, results.MatrixFile))
	if readErr != nil {
		return exitInternal, readErr
	}
	return exitValid, nil
}
