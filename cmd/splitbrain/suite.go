package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"splitbrain/checker"
	"splitbrain/internal/loadgate"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

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
	ctx, stdout, stderr, stop := stopContext(stdout, stderr)
	defer stop()
	progress := stderr
	if !f.json {
		progress = stdout
	}
	scs, err := suiteScenarios(ctx, pos, f, progress)
	if err != nil {
		return exitUsage, err
	}
	locks := suiteLocks(scs, f.overrides.Lock)
	names := make([]string, len(scs))
	for i, sc := range scs {
		names[i] = sc.Name
	}
	shard, err := suiteShard(f.shard)
	if err != nil {
		return exitUsage, err
	}
	if f.gate != "" {
		if err := loadgate.CheckShared(f.gate); err != nil {
			return exitUsage, &usageError{fmt.Sprintf("--gate %q: %v", f.gate, err)}
		}
	}
	if f.plan {
		return printPlan(stdout, suite.NewPlan(scs, locks, f.backend), seed, shard, f)
	}
	f.store = shard.Dir(f.store)
	if err := checkStore(f.store, names...); err != nil {
		return exitUsage, err
	}
	plan := suite.NewPlan(scs, locks, f.backend)
	for _, b := range plan.Backends() {
		if err := backendReady(context.Background(), b); err != nil {
			return exitInternal, err
		}
	}
	played, na := plan.Played()
	if played == 0 {
		// A suite that plays nothing must not say every play met its
		// expectation: there were none.
		return exitUsage, nothingToPlay(plan)
	}
	fmt.Fprintf(progress, "splitbrain suite: %d stories × %d locks = %d cells (%d played, %d n/a: %s), %d run(s) each, up to %d side by side, seed %d\n",
		len(scs), len(locks), len(plan.Cells), played, na, percent(na, len(plan.Cells)), f.runs, f.parallel, seed)
	if !shard.Whole() {
		fmt.Fprintf(progress, "share %s: %d of the suite's %d plays, into %s\n", shard, len(shard.Share(suite.Jobs(plan.Cells, f.runs))), played*f.runs, f.store)
	}
	if f.runs > 1 {
		fmt.Fprintf(progress, "play seeds by run: %s (any play re-runs alone: splitbrain run SCENARIO --lock LOCK --seed S)\n", joinSeeds(suite.Seeds(seed, f.runs)))
	}
	opts := suite.Options{
		Seed: seed, Runs: f.runs, Parallel: f.parallel, Store: f.store, Errors: stderr,
		Command: shellCommand(append([]string{"splitbrain", "suite"}, args...)...),
		Rerun:   func(sc *spec.Scenario, s int64) string { return rerunCommand(sc, s, f, true) },
		Done:    func(pr suite.PlayResult) { printPlay(progress, plan.Cells[pr.Cell], pr, f.parallel > 1) },
		Shard:   shard, SharedGate: f.gate, NoReplay: f.noReplay,
	}
	if f.parallel == 1 {
		// One at a time: each play's steps as they happen, as run prints them.
		opts.Progress = func(sc *spec.Scenario, s int64) io.Writer {
			fmt.Fprintf(progress, "\nsplitbrain: scenario %s against %s, seed %d\n", sc.Name, sc.Lock.Kind, s)
			return progress
		}
	}
	res, err := suite.Run(ctx, plan, opts)
	if err != nil {
		return exitInternal, err
	}
	code := exitValid
	plays, met, flaky := res.Totals()
	switch {
	case plays == 0:
		code = exitInvalid
	case met < plays || flaky > 0:
		code = exitInvalid
		if f.shard == "env" {
			// A task of a job on an engine (fanout): its share is
			// played and its verdicts are in its run folders, which the
			// gather step judges all together. An exit of 1 would be a
			// failed task there — Swarm's replicated job plays it again
			// (seen: a share's plays twice in the store), Kubernetes
			// fails the Job.
			code = exitValid
			fmt.Fprintf(progress, "splitbrain: %d of %d plays missed their expectation; the task still ends 0, the gather step judges the plays\n", plays-met, plays)
		}
	}
	switch {
	case res.Stopped != nil:
		code = exitInternal
	case ctx.Err() != nil:
		code = exitUnknown
	}
	if f.json {
		writeJSON(stdout, suiteJSON{Matrix: res.Path, Partial: res.Matrix.Partial, Cells: res.Matrix.Cells, Locks: res.Matrix.Summary()})
	} else {
		printSuite(stdout, plan, res, seed, f)
	}
	return code, errors.Join(res.Stopped, res.Unread)
}

// printSuite prints a suite's end: its matrix, the flaky cells and the
// findings with the play to open for each, and the tally.
func printSuite(stdout io.Writer, plan suite.Plan, res suite.Result, seed int64, f runFlags) {
	m := res.Matrix
	plays, met, flaky := res.Totals()
	played, na := plan.Played()
	fmt.Fprintln(stdout)
	printMatrix(stdout, m)
	printLockSummary(stdout, m)
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
	printStalledMisses(stdout, m)
	printReplays(stdout, m)
	fmt.Fprintf(stdout, "%d of %d plays met their expectation (%d cells played, %d n/a (%s), %d flaky; %d stories, seed %d, %d run(s) per cell, up to %d side by side, %v)\n",
		met, plays, played, na, percent(na, played+na), flaky, len(plan.Scenarios), seed, f.runs, f.parallel, res.Wall.Round(time.Second))
	fmt.Fprintf(stdout, "safety matrix: %s\n", res.Path)
}

// printStalledMisses says how many of the plays that missed their
// expectation had the harness stand still, if any did.
func printStalledMisses(stdout io.Writer, m runstore.Matrix) {
	if missed, stalled, longest := m.StalledMisses(); stalled > 0 {
		fmt.Fprintf(stdout, "stalls: in %d of the %d plays that missed their expectation the harness stood still (up to %v), a pause no scenario scripted: on a loaded machine, replay one alone with its command\n",
			stalled, missed, longest.Round(time.Millisecond))
	}
}

// printReplays says how many plays the suite played again because the
// harness or a driver stood still while they missed their expectation,
// and how many of the replays met it.
func printReplays(stdout io.Writer, m runstore.Matrix) {
	if replayed, met, longest := m.Replays(); replayed > 0 {
		fmt.Fprintf(stdout, "replays: %d plays missed their expectation while the harness or a driver stood still (up to %v) and were played again alone; %d of the replays met it, and decide their cells (each first play is kept beside its replay: --no-replay plays none again)\n",
			replayed, longest.Round(time.Millisecond), met)
	}
}

// suiteScenarios loads the suite's stories (every built-in one unless
// files are named) with the command line's overrides, each to be played
// against every lock it fits.
func suiteScenarios(ctx context.Context, pos []string, f runFlags, progress io.Writer) ([]*spec.Scenario, error) {
	if len(pos) == 0 {
		pos = spec.Builtin()
	}
	// Load and check every scenario first: a bad file or flag should not
	// be found only after minutes of runs.
	var scs []*spec.Scenario
	for _, p := range pos {
		sc, err := loadScenario(p)
		if err != nil {
			return nil, err
		}
		scs = append(scs, sc)
	}
	// The lock drivers, the user's and the files', described before the
	// overrides, which check their fencing.
	if err := withDrivers(ctx, scs, f, progress, false); err != nil {
		return nil, err
	}
	loaded := scs
	scs = nil
	for i, sc := range loaded {
		p := pos[i]
		o := f.overrides
		// The suite plays every lock a story fits (or --lock's); the
		// file's own list is checked for consistency only. With --lock,
		// only that lock's deployment takes --clients and --time.
		o.Lock, o.Only = "", o.Lock
		if !sc.Workload.Generated() {
			// A suite mixes scripted and generated scenarios; --time is
			// for the generated ones (as the help says).
			o.Duration = 0
		}
		if err := sc.Override(o); err != nil {
			return nil, &usageError{fmt.Sprintf("%s: %v", p, err)}
		}
		if slices.ContainsFunc(scs, func(o *spec.Scenario) bool { return o.Name == sc.Name }) {
			return nil, &usageError{fmt.Sprintf("%s: a scenario named %s is in the suite already; each row needs its own name", p, sc.Name)}
		}
		scs = append(scs, sc)
	}
	return scs, nil
}

type suiteJSON struct {
	Matrix  string                `json:"matrix"`
	Partial string                `json:"partial,omitempty"`
	Cells   []runstore.MatrixCell `json:"cells"`
	// Locks is each lock's summary, as the terminal and the page print
	// it: under how many rows it kept each promise, and its price.
	Locks []runstore.LockSummary `json:"locks"`
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
func printPlay(w io.Writer, c suite.Cell, pr suite.PlayResult, oneLine bool) {
	if pr.Outcome == nil {
		msg, _, _ := strings.Cut(fmt.Sprint(pr.Err), "\n")
		fmt.Fprintf(w, "%s against %s, seed %d: no run: %s\n", c.Scenario.Name, c.Lock, pr.Seed, msg)
		return
	}
	if pr.ReplayOf != "" {
		fmt.Fprintf(w, "replay of %s (it missed its expectation while the harness or a driver stood still):\n", pr.ReplayOf)
	}
	if !oneLine {
		printVerdict(w, c.Scenario, pr.Outcome)
		fmt.Fprintf(w, "report: %s\n", filepath.Join(pr.Outcome.Dir, runstore.ReportFile))
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
		c.Scenario.Expect, mark, filepath.Join(pr.Outcome.Dir, runstore.ReportFile))
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
func printMatrix(w io.Writer, m runstore.Matrix) {
	cells := map[[2]string]runstore.MatrixCell{}
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

// printLockSummary prints each lock's promises and price, one line a
// lock: runstore's Summary, which matrix.html shows on top too.
func printLockSummary(w io.Writer, m runstore.Matrix) {
	sum := m.Summary()
	if len(sum) == 0 {
		return
	}
	fmt.Fprintln(w, "Per lock (kept/rows where a play answered the promise; n/a rows apart; unknown is never kept):")
	// The locks nothing was played against share one line: a matrix
	// assembled from a few folders has every lock kind as a column.
	var idle []string
	for _, s := range sum {
		if s.Played == 0 {
			idle = append(idle, s.Lock)
			continue
		}
		fmt.Fprintf(w, "  %s\n", s)
	}
	if len(idle) > 0 {
		fmt.Fprintf(w, "  nothing played against %s\n", strings.Join(idle, ", "))
	}
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
		found, err := suite.FindRuns(p)
		if err != nil {
			return exitInternal, err
		}
		dirs = append(dirs, found...)
	}
	if len(dirs) == 0 {
		return exitUsage, &usageError{fmt.Sprintf("matrix: no run folder (a folder with %s) under %s", runstore.ResultFile, strings.Join(pos, ", "))}
	}
	m, runs, readErr, err := suite.Rebuild(out, dirs, shellCommand(append([]string{"splitbrain", "matrix"}, args...)...))
	if err != nil {
		return exitInternal, err
	}
	printMatrix(stdout, m)
	printLockSummary(stdout, m)
	fmt.Fprintf(stdout, "%d run folders; safety matrix: %s\n", runs, filepath.Join(out, runstore.MatrixFile))
	if readErr != nil {
		return exitInternal, readErr
	}
	return exitValid, nil
}

// percent is part of whole in whole percent, as the suite's lines say the
// share of n/a cells (issue 34's goal: at most 10 %).
func percent(part, whole int) string {
	if whole == 0 {
		return "0 %"
	}
	return fmt.Sprintf("%d %%", (100*part+whole/2)/whole)
}
