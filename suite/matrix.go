package suite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"splitbrain/locks"
	"splitbrain/pages"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/fit"
	"splitbrain/scenarios/spec"
)

// PlayedRun is a run folder and its record.
type PlayedRun struct {
	Dir string
	Rec runstore.Record
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
		rec, err := runstore.ReadRecord(abs)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
			continue
		}
		out = append(out, PlayedRun{abs, rec})
	}
	return out, errors.Join(errs...)
}

// Assemble builds the matrix from run folders alone: each play's
// record says its scenario, lock, seed, expectation and answers; the
// scenarios (scs, or those parsed from the folders' scenario.yaml) say
// each story's family and which locks it does not fit.
func Assemble(runs []PlayedRun, scs []*spec.Scenario, locks []string) runstore.Matrix {
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
			if sc, err := spec.Load(filepath.Join(r.Dir, runner.ScenarioFile)); err == nil && sc.Name == name {
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

	m := runstore.Matrix{Scenarios: order, Locks: locks}
	for _, f := range Families {
		m.Families = append(m.Families, string(f))
	}
	for _, name := range order {
		sc := byName[name]
		for _, l := range locks {
			c := runstore.MatrixCell{Scenario: name, Lock: l, Family: string(fams[name])}
			ps := plays[[2]string{name, l}]
			if sc != nil {
				// A family's expectation for a lock is its shape's, where
				// the lock plays one (pause-critical-section's ensemble
				// states curator's, not the family's default).
				base := sc
				if v := sc.ForLock(l); v != nil {
					base = v
				}
				e, _ := base.ExpectFor(l)
				c.Expect = string(e)
				if ok, why := fit.Lock(sc, l); !ok && len(ps) == 0 {
					c.NA = why
				}
			}
			if sc == nil && len(ps) == 0 {
				continue
			}
			slices.SortStableFunc(ps, func(a, b PlayedRun) int { return a.Rec.Meta.Started.Compare(b.Rec.Meta.Started) })
			c.Plays = withReplays(ps)
			for _, p := range ps {
				if c.Expect == "" {
					c.Expect = p.Rec.Meta.Expect
				}
			}
			m.Cells = append(m.Cells, c)
		}
	}
	return m
}

// withReplays is a cell's plays in the order given, each play that was
// replayed kept inside its replay (runstore.MatrixPlay.First) instead of
// on its own: the replay decides its seed's answer. A replay
// whose first play is not among ps (a matrix of some folders only)
// stands alone; a first play replayed more than once keeps its last
// replay, the others stand alone.
func withReplays(ps []PlayedRun) []runstore.MatrixPlay {
	// A replay's first play is its sibling folder of that name.
	replayedBy := map[string]int{} // first play's folder → its replay's index in ps
	for i, p := range ps {
		if of := p.Rec.Meta.ReplayOf; of != "" {
			replayedBy[filepath.Join(filepath.Dir(p.Dir), of)] = i
		}
	}
	firsts := map[int]runstore.MatrixPlay{} // replay's index → its first play
	inside := map[int]bool{}                // first plays kept inside their replay
	for i, p := range ps {
		if j, ok := replayedBy[p.Dir]; ok && p.Rec.Meta.ReplayOf == "" && ps[j].Rec.Meta.Seed == p.Rec.Meta.Seed {
			firsts[j] = runstore.PlayOf(p.Dir, p.Rec)
			inside[i] = true
		}
	}
	var out []runstore.MatrixPlay
	for i, p := range ps {
		if inside[i] {
			continue
		}
		mp := runstore.PlayOf(p.Dir, p.Rec)
		if first, ok := firsts[i]; ok {
			mp.First = &first
		}
		out = append(out, mp)
	}
	return out
}

// FindRuns lists the run folders under root: every folder holding a
// result.json, root itself included. Links are not followed (store/latest
// points at a run listed already).
func FindRuns(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&os.ModeSymlink != 0 {
			return nil // store/latest points at a run listed already
		}
		if !d.IsDir() && d.Name() == runstore.ResultFile {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	return dirs, nil
}

// Rebuild assembles the matrix of the run folders dirs alone (Assemble,
// the built-in lock kinds as its columns) and writes it into out:
// matrix.html and matrix.json. command is the command line, shown on the
// page. It returns the matrix as written, how many run folders it holds,
// and the folders that could not be read (unread), which it lacks; err
// says the matrix could not be written.
func Rebuild(out string, dirs []string, command string) (m runstore.Matrix, runs int, unread, err error) {
	dirs = slices.Clone(dirs)
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	played, unread := ReadRuns(dirs)
	m = Assemble(played, nil, locks.Matrix())
	m.Title = "splitbrain matrix"
	m.Command = command
	seeds := map[int64]bool{}
	for _, r := range played {
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
		return m, len(played), unread, err
	}
	if err := pages.WriteMatrix(abs, m); err != nil {
		return m, len(played), unread, err
	}
	if back, err := runstore.ReadMatrix(abs); err == nil {
		m = back
	}
	return m, len(played), unread, nil
}
