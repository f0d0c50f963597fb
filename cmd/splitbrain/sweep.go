package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

var sweepUsage = `Usage: splitbrain sweep STORY [--param P --values V1,V2,...] [flags]

Plays one story (a built-in name or a .yaml file) across the values of one
of its parameters — the file's sweep: section, or --param and --values —
each value a variant of the story (its rate steps' clock rate, its TTL, its
starve steps' CPU share), played --runs times against each lock the story
lists (or --lock's) on seeds derived from --seed, and writes a plot of the
share of plays that broke the lock's promise against the value, with its
95 % Wilson interval: STORE/sweep-STORY.html and STORE/sweep-STORY.json.
Every variant expects any, and leaves open the outcome of every scripted
acquire after the first client's: a sweep measures, it does not expect.

Flags:
  --param P       rate (the clock rate of the story's clock: {rate:} steps,
                  values such as 1.01, +1% or 500ppm), ttl (lock.ttl, values
                  such as 2s) or cpu (the story's starve steps, such as 5%)
  --values V,...  the values, comma-separated (with --param)
  --runs N        plays per value and lock (default 1)
  --parallel P    plays side by side at most (as suite's)
` + runFlagsHelp + `
Examples:
  splitbrain sweep clock-rate-drift --runs 10 --seed 5
  splitbrain sweep clock-rate-drift --param rate --values +0.5%,+1%,+1.5%,+2% --lock redsync

Exit codes: 0 when every play ended with a verdict, 2 when interrupted or
a play's answer is unknown, 254 bad arguments, 255 internal error.
`

func cmdSweep(args []string, stdout, stderr io.Writer) (int, error) {
	f, pos, seed, err := parseRunFlags("sweep", args)
	if err != nil {
		return exitUsage, err
	}
	switch {
	case len(pos) != 1:
		return exitUsage, &usageError{fmt.Sprintf("sweep takes one story, got %d: %q", len(pos), strings.Join(pos, " "))}
	case f.runs < 1 || f.runs > 1000:
		return exitUsage, &usageError{fmt.Sprintf("--runs %d: want a whole number from 1 to 1000", f.runs)}
	case f.parallel < 1 || f.parallel > 64:
		return exitUsage, &usageError{fmt.Sprintf("--parallel %d: want a whole number from 1 to 64", f.parallel)}
	case (f.param == "") != (f.values == ""):
		return exitUsage, &usageError{"--param and --values go together: the parameter and its values, such as --param rate --values +0.5%,+1%,+2%"}
	}
	sc, err := loadScenario(pos[0])
	if err != nil {
		return exitUsage, err
	}
	o := f.overrides
	o.Lock = ""
	if err := sc.Override(o); err != nil {
		return exitUsage, &usageError{fmt.Sprintf("%s: %v", pos[0], err)}
	}
	sw := sc.Sweep
	if f.param != "" {
		var mark *spec.SweepMark
		if sw != nil && sw.Param == f.param && sw.Mark != nil {
			mark = sw.Mark
		}
		if sw, err = spec.NewSweep(f.param, strings.Split(f.values, ","), mark); err != nil {
			return exitUsage, &usageError{err.Error()}
		}
	}
	if sw == nil {
		return exitUsage, &usageError{fmt.Sprintf("%s has no sweep: section; give --param and --values", pos[0])}
	}
	locks := sc.Locks
	if f.overrides.Lock != "" {
		locks = []string{f.overrides.Lock}
	}
	sp, err := suite.NewSweepPlan(sc, sw, locks, f.backend)
	if err != nil {
		return exitUsage, &usageError{err.Error()}
	}
	names := make([]string, len(sp.Variants))
	values := map[string]string{}
	for i, v := range sp.Variants {
		names[i], values[v.Name] = v.Name, sw.Values[i]
	}
	if err := checkStore(f.store, names...); err != nil {
		return exitUsage, err
	}
	for _, b := range sp.Backends() {
		if err := backendReady(context.Background(), b); err != nil {
			return exitInternal, err
		}
	}
	ctx, stdout, stderr, stop := stopContext(stdout, stderr)
	defer stop()
	played, na := sp.Played()
	fmt.Fprintf(stdout, "splitbrain sweep: %s, %s over %d values × %d locks = %d cells (%d played, %d n/a), %d run(s) each, seed %d\n",
		sc.Name, sw.Param, len(sw.Values), len(locks), len(sp.Cells), played, na, f.runs, seed)
	// One play alone: this sweep with its value, one run on its seed.
	rerun := func(v *spec.Scenario, s int64) string {
		parts := []string{"splitbrain", "sweep", pos[0], "--param", sw.Param, "--values", values[v.Name],
			"--lock", v.Lock.Kind, "--seed", fmt.Sprint(s)}
		if f.store != "store" {
			parts = append(parts, "--store", f.store)
		}
		return shellCommand(parts...)
	}
	opts := suite.Options{
		Seed: seed, Runs: f.runs, Parallel: f.parallel, Store: f.store, Errors: stderr,
		Command: shellCommand(append([]string{"splitbrain", "sweep"}, args...)...),
		Rerun:   rerun,
		Done:    func(pr suite.PlayResult) { printPlay(stdout, sp.Cells[pr.Cell], pr, true) },
	}
	res, err := suite.RunSweep(ctx, sp, opts)
	if err != nil {
		return exitInternal, err
	}
	fmt.Fprintf(stdout, "\n%-12s", sw.Param)
	for _, l := range locks {
		fmt.Fprintf(stdout, " %16s", l)
	}
	fmt.Fprintln(stdout)
	code := exitValid
	for vi, val := range sw.Values {
		fmt.Fprintf(stdout, "%-12s", val)
		for li := range locks {
			p := res.Sweep.Points[vi*len(locks)+li]
			cell := "n/a"
			if p.NA == "" {
				cell = fmt.Sprintf("%d/%d broke", p.Invalid, p.Runs-p.Unknown)
				if p.Unknown > 0 {
					cell += fmt.Sprintf(" %d?", p.Unknown)
					code = exitUnknown
				}
			}
			fmt.Fprintf(stdout, " %16s", cell)
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "sweep: %s\n", res.Path)
	switch {
	case res.Stopped != nil:
		code = exitInternal
	case ctx.Err() != nil:
		code = exitUnknown
	}
	return code, errors.Join(res.Stopped, res.Unread)
}
