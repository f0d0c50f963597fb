package scenarios

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"splitbrain/results"
	"splitbrain/scenarios/spec"
)

// PlayedRun is a run folder and its record.
type PlayedRun struct {
	Dir string
	Rec results.Record
}

// ReadRuns reads the record of each run folder; a folder without a
// readable result.json is reported and left out.
func ReadRuns(dirs []string) ([]PlayedRun, error) {
	var out []PlayedRun
	var errs []error
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rec, err := results.ReadRecord(abs)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
			continue
		}
		out = append(out, PlayedRun{abs, rec})
	}
	return out, errors.Join(errs...)
}

// AssembleMatrix builds the matrix from run folders alone: each play's
// record says its scenario, lock, seed, expectation and answers; the
// scenarios (scs, or those parsed from the folders' scenario.yaml) say
// each story's family and which locks it does not fit.
func AssembleMatrix(runs []PlayedRun, scs []*spec.Scenario, locks []string) results.Matrix {
	locks = slices.Clone(locks)
	byName := map[string]*spec.Scenario{}
	var order []string
	add := func(sc *spec.Scenario) {
		if byName[sc.Name] == nil {
			byName[sc.Name] = sc
			order = append(order, sc.Name)
		}
	}
	for _, sc := range scs {
		add(sc)
	}
	plays := map[[2]string][]PlayedRun{}
	for _, r := range runs {
		name := r.Rec.Meta.Scenario
		if byName[name] == nil {
			if sc, err := spec.Load(filepath.Join(r.Dir, ScenarioFile)); err == nil && sc.Name == name {
				add(sc)
			} else if sc, err := spec.Load(name); err == nil && sc.Name == name {
				// A run folder from before plays kept their scenario file.
				add(sc)
			} else if !slices.Contains(order, name) {
				order = append(order, name)
			}
		}
		if !slices.Contains(locks, r.Rec.Meta.Lock) {
			locks = append(locks, r.Rec.Meta.Lock)
		}
		k := [2]string{name, r.Rec.Meta.Lock}
		plays[k] = append(plays[k], r)
	}
	var known []*spec.Scenario
	for _, n := range order {
		if sc := byName[n]; sc != nil {
			known = append(known, sc)
		}
	}
	fams := FamiliesOf(known)
	famIndex := func(name string) int {
		if i := slices.Index(Families, fams[name]); i >= 0 {
			return i
		}
		return len(Families)
	}
	// By family, then each story followed by its variants (clock-jump,
	// clock-jump-control), then by name.
	base := func(name string) string {
		best := name
		for _, o := range order {
			if o != name && strings.HasPrefix(name, o+"-") && len(o) < len(best) {
				best = o
			}
		}
		return best
	}
	slices.SortStableFunc(order, func(a, b string) int {
		if d := famIndex(a) - famIndex(b); d != 0 {
			return d
		}
		if c := strings.Compare(base(a), base(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})

	m := results.Matrix{Scenarios: order, Locks: locks}
	for _, f := range Families {
		m.Families = append(m.Families, string(f))
	}
	for _, name := range order {
		sc := byName[name]
		for _, l := range locks {
			c := results.MatrixCell{Scenario: name, Lock: l, Family: string(fams[name])}
			ps := plays[[2]string{name, l}]
			if sc != nil {
				e, _ := sc.ExpectFor(l)
				c.Expect = string(e)
				if ok, why := Fit(sc, l); !ok && len(ps) == 0 {
					c.NA = why
				}
			}
			if sc == nil && len(ps) == 0 {
				continue
			}
			slices.SortStableFunc(ps, func(a, b PlayedRun) int { return a.Rec.Meta.Started.Compare(b.Rec.Meta.Started) })
			for _, p := range ps {
				c.Plays = append(c.Plays, results.PlayOf(p.Dir, p.Rec))
				if c.Expect == "" {
					c.Expect = p.Rec.Meta.Expect
				}
			}
			m.Cells = append(m.Cells, c)
		}
	}
	return m
}
