package suite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"splitbrain/pages"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

// A sweep plays one story across the values of one parameter (spec.Sweep):
// each value a variant of the story, played against each lock Runs times
// on the suite's seeds, and the share of plays that broke the lock's
// promise plotted against the value (pages.WriteSweep).

// SweepPlan is a sweep's plays: the story's variants, one per value, ×
// its locks.
type SweepPlan struct {
	Story    *spec.Scenario
	Sweep    *spec.Sweep
	Variants []*spec.Scenario
	// Plan lays out Variants × Locks, variant by variant.
	Plan
}

// NewSweepPlan makes the variants of sc for sw's values and lays them out
// against locks (each cell n/a where the variant does not fit).
func NewSweepPlan(sc *spec.Scenario, sw *spec.Sweep, locks []string, backend string) (SweepPlan, error) {
	if sw == nil {
		return SweepPlan{}, fmt.Errorf("%s has no sweep: give one in the file (sweep: {param: rate, values: [...]}) or on the command line", sc.Name)
	}
	sp := SweepPlan{Story: sc, Sweep: sw}
	for _, v := range sw.Values {
		variant, err := sc.Variant(sw.Param, v)
		if err != nil {
			return SweepPlan{}, err
		}
		sp.Variants = append(sp.Variants, variant)
	}
	sp.Plan = NewPlan(sp.Variants, locks, backend)
	if sw.Param == "ttl" {
		// A lock that cannot take a point's TTL would play it slowed down
		// to another TTL (spec.Scenario.Slowed): at another point of the
		// axis than the one it is drawn at. Such a point is n/a for it.
		for i, c := range sp.Cells {
			if c.NA == "" && c.Scenario.ScaleWhy != "" {
				sp.Cells[i].NA = "a sweep of the TTL plays each point as written, and " + c.Scenario.ScaleWhy
			}
		}
	}
	return sp, nil
}

// SweepResult is a sweep played: its data as written, and what stopped it.
type SweepResult struct {
	Sweep   runstore.Sweep
	Path    string // the sweep's page, in the store as given
	Plays   []PlayResult
	Wall    time.Duration
	Stopped error
	Unread  error
}

// RunSweep plays a sweep's cells as Run plays a suite's (the same gate,
// seeds and order), and writes the sweep's page and data into the store.
func RunSweep(ctx context.Context, sp SweepPlan, opts Options) (SweepResult, error) {
	gate, err := newGate(opts.SharedGate)
	if err != nil {
		return SweepResult{}, err
	}
	defer gate.Close()
	started := time.Now()
	stopIndexing := refreshIndex(opts.Store, indexEvery, opts.Errors)
	po := PlayOptions{
		Seed: opts.Seed, Runs: opts.Runs, Parallel: opts.Parallel, Gate: gate,
		Run:     runner.RunOptions{Store: opts.Store, Backend: sp.backend, ProgressEvery: -1, NoIndex: true},
		Command: opts.Rerun, Progress: opts.Progress, Done: opts.Done,
	}
	if opts.Progress != nil {
		po.Run.ProgressEvery = 0
	}
	prs, stopped := Play(ctx, sp.Cells, po)
	wall := time.Since(started)
	stopIndexing()

	byCell := map[int][]string{}
	var dirs []string
	for _, pr := range prs {
		if pr.Outcome != nil {
			byCell[pr.Cell] = append(byCell[pr.Cell], pr.Outcome.Dir)
			dirs = append(dirs, pr.Outcome.Dir)
		}
	}
	read, readErr := ReadRuns(dirs)
	recs := map[string]runstore.Record{}
	for _, r := range read {
		recs[r.Dir] = r.Rec
	}
	sw := sp.Sweep
	param, _ := spec.SweepParamOf(sw.Param)
	s := runstore.Sweep{
		Story: sp.Story.Name, Command: opts.Command, Seed: opts.Seed, Seeds: Seeds(opts.Seed, opts.Runs), Runs: opts.Runs,
		Started: started, Wall: runstore.Duration(wall.Round(time.Second)),
		Param: sw.Param, Axis: param.Axis, Log: param.Log, Values: sw.Values, X: sw.X, Locks: sp.Locks,
	}
	if m := sw.Mark; m != nil {
		s.Mark = &runstore.SweepMark{Value: m.Value, X: m.X, Label: m.Label}
	}
	for i, c := range sp.Cells {
		v := i / len(sp.Locks)
		pt := runstore.SweepPoint{Lock: c.Lock, Value: sw.Values[v], X: sw.X[v], Variant: c.Scenario.Name, NA: c.NA}
		for _, d := range byCell[i] {
			if rec, ok := recs[d]; ok {
				pt.Plays = append(pt.Plays, runstore.PlayOf(d, rec))
			}
		}
		s.Points = append(s.Points, pt)
	}
	played, _ := sp.Played()
	if ctx.Err() != nil {
		s.Partial = fmt.Sprintf("the sweep was interrupted after %v; %d of %d plays ended (each healed, cleaned up and reported), the others were not started",
			wall.Round(time.Second), len(prs), played*opts.Runs)
	} else if stopped != nil {
		s.Partial = "the sweep stopped: " + stopped.Error()
	}
	store, err := filepath.Abs(opts.Store)
	if err != nil {
		return SweepResult{}, err
	}
	if err := pages.WriteSweep(store, s); err != nil {
		return SweepResult{}, errors.Join(err, readErr, pages.WriteIndex(opts.Store))
	}
	readErr = errors.Join(readErr, pages.WriteIndex(opts.Store))
	if back, err := runstore.ReadSweep(store, s.Story); err == nil {
		s = back
	}
	page, _ := runstore.SweepFiles(s.Story)
	return SweepResult{Sweep: s, Path: filepath.Join(opts.Store, page), Plays: prs, Wall: wall, Stopped: stopped, Unread: readErr}, nil
}
