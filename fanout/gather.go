package fanout

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"splitbrain/checker"
	"splitbrain/pages"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

// playKey names a play by what its run folder records.
type playKey struct {
	Scenario, Lock string
	Seed           int64
}

func (k playKey) String() string {
	return fmt.Sprintf("%s against %s, seed %d", k.Scenario, k.Lock, k.Seed)
}

// Gathered is a suite's matrix assembled from the run folders of all its
// shares, and how they matched its plan.
type Gathered struct {
	Matrix runstore.Matrix
	// Folders is how many run folders were read.
	Folders int
	// Missing are plays of the plan with no run folder; Twice plays with
	// more than one; Unplanned run folders of no play of the plan.
	Missing, Twice, Unplanned []string
	// Unread names the run folders whose record could not be read.
	Unread error
}

// Complete reports whether every play of the plan made one run folder and
// nothing else is there.
func (g Gathered) Complete() bool {
	return len(g.Missing) == 0 && len(g.Twice) == 0 && len(g.Unplanned) == 0 && g.Unread == nil
}

// Problems says how the run folders miss the plan, one line each.
func (g Gathered) Problems() []string {
	var out []string
	for _, p := range []struct {
		what string
		list []string
	}{{"no run folder", g.Missing}, {"more than one run folder", g.Twice}, {"a run folder of no play of the plan", g.Unplanned}} {
		for _, s := range p.list {
			out = append(out, p.what+": "+s)
		}
	}
	if g.Unread != nil {
		out = append(out, "unreadable: "+g.Unread.Error())
	}
	return out
}

// Gather finds every run folder under store (each share's store is a
// folder in it, wherever it was played), checks them against the plan of
// s — each play one run folder (and the replay a suite may have made of
// it), nothing twice, nothing unplanned — and writes the matrix of the
// plan into store, as the suite played whole would: matrix.html and
// matrix.json. command is the command line, shown
// on the page; wall the time the plays took, if known. A matrix is written
// even when plays are missing: it shows what was played, marked partial.
func Gather(store string, s Suite, command string, wall time.Duration) (Gathered, error) {
	dirs, err := suite.FindRuns(store)
	if err != nil {
		return Gathered{}, err
	}
	runs, unread := suite.ReadRuns(dirs)
	g := Gathered{Folders: len(runs), Unread: unread}
	planned := map[playKey]int{}
	var order []playKey
	for _, p := range s.Plan.Plays(s.Seed, s.Runs, suite.Shard{}) {
		k := playKey{p.Cell.Scenario.Name, p.Cell.Lock, p.Seed}
		planned[k] = 0
		order = append(order, k)
	}
	var kept []suite.PlayedRun
	var started time.Time
	for _, r := range runs {
		k := playKey{r.Rec.Meta.Scenario, r.Rec.Meta.Lock, r.Rec.Meta.Seed}
		n, ok := planned[k]
		if !ok {
			rel, _ := filepath.Rel(store, r.Dir)
			g.Unplanned = append(g.Unplanned, fmt.Sprintf("%s (%s)", k, rel))
			continue
		}
		// A replay (Meta.ReplayOf) is its play's second run folder, the
		// one that decides it (suite.Assemble): not a play made twice.
		if r.Rec.Meta.ReplayOf == "" {
			planned[k] = n + 1
		}
		kept = append(kept, r)
		if started.IsZero() || r.Rec.Meta.Started.Before(started) {
			started = r.Rec.Meta.Started
		}
	}
	for _, k := range order {
		switch n := planned[k]; {
		case n == 0:
			g.Missing = append(g.Missing, k.String())
		case n > 1:
			g.Twice = append(g.Twice, fmt.Sprintf("%s: %d run folders", k, n))
		}
	}
	slices.Sort(g.Unplanned)
	m := s.Plan.Matrix(kept, s.Seed, s.Runs)
	m.Title, m.Command, m.Started = "splitbrain suite, fanned out", command, started
	m.Wall = runstore.Duration(wall.Round(time.Second))
	if !g.Complete() {
		m.Partial = fmt.Sprintf("the run folders miss the plan: %s", strings.Join(g.Problems(), "; "))
	}
	abs, err := filepath.Abs(store)
	if err != nil {
		return g, err
	}
	if err := pages.WriteMatrix(abs, m); err != nil {
		return g, err
	}
	// Read back what was written: the tallies are WriteMatrix's.
	if g.Matrix, err = runstore.ReadMatrix(abs); err != nil {
		return g, err
	}
	return g, nil
}

// Compare says how two matrices of the same suite differ, one line each:
// their cells (a story against a lock, n/a or not), the seeds each cell
// was played on, and, for the scripted stories (scripted, by name), the
// verdict of each play and whether it met its expectation — where the
// story states only some answers ({lock: safe}), those answers and
// whether it met its expectation, the others being a race the story
// leaves open. A random schedule's verdict may differ between two plays
// of the same seed (the faults are the seed's, their timing against the
// workload is not), so only its cells and seeds must agree.
func Compare(a, b runstore.Matrix, scripted map[string]bool) []string {
	type cellKey struct{ scenario, lock string }
	index := func(m runstore.Matrix) map[cellKey]runstore.MatrixCell {
		out := map[cellKey]runstore.MatrixCell{}
		for _, c := range m.Cells {
			out[cellKey{c.Scenario, c.Lock}] = c
		}
		return out
	}
	ia, ib := index(a), index(b)
	var diffs []string
	for k, ca := range ia {
		cb, ok := ib[k]
		name := k.scenario + " against " + k.lock
		switch {
		case !ok:
			diffs = append(diffs, name+": only in the first")
			continue
		case (ca.NA == "") != (cb.NA == ""):
			diffs = append(diffs, fmt.Sprintf("%s: n/a %q against %q", name, ca.NA, cb.NA))
			continue
		}
		seeds := func(c runstore.MatrixCell) map[int64]string {
			out := map[int64]string{}
			for _, p := range c.Plays {
				out[p.Seed] += fmt.Sprintf("%s/%v (verdict/as expected) ", p.Verdict, p.AsExpected)
			}
			return out
		}
		sa, sb := seeds(ca), seeds(cb)
		if !slices.Equal(slices.Sorted(maps.Keys(sa)), slices.Sorted(maps.Keys(sb))) || ca.Runs != cb.Runs {
			diffs = append(diffs, fmt.Sprintf("%s: %d plays on seeds %v against %d on %v", name, ca.Runs, slices.Sorted(maps.Keys(sa)), cb.Runs, slices.Sorted(maps.Keys(sb))))
			continue
		}
		if !scripted[k.scenario] {
			continue
		}
		if e, err := checker.ParseExpectation(ca.Expect); err == nil && (e.Verdict == "" || e.Verdict == checker.ExpectAny) {
			// The story states some answers only (failover's ensemble:
			// {lock: safe}, the race of c1's lease against c2's attempt
			// left open) or none ({lock: any}: rueidislock in
			// clock-jump): the answers it leaves open are the race's, so
			// the answers it states and whether each play met its
			// expectation must agree, not the whole verdict.
			sa, sb = statedAnswers(ca, e), statedAnswers(cb, e)
		}
		for seed, va := range sa {
			if vb := sb[seed]; va != vb {
				diffs = append(diffs, fmt.Sprintf("%s, seed %d: %s against %s", name, seed, strings.TrimSpace(va), strings.TrimSpace(vb)))
			}
		}
	}
	for k := range ib {
		if _, ok := ia[k]; !ok {
			diffs = append(diffs, k.scenario+" against "+k.lock+": only in the second")
		}
	}
	slices.Sort(diffs)
	return diffs
}

// statedAnswers maps each of c's seeds to the answers of its plays that
// e states (a part "any" states nothing) and whether each play met e.
func statedAnswers(c runstore.MatrixCell, e checker.Expectation) map[int64]string {
	out := map[int64]string{}
	for _, p := range c.Plays {
		for _, part := range e.Stated(p.Answers) {
			if part.Word != checker.ExpectAny {
				out[p.Seed] += fmt.Sprintf("%s %s, ", part.Name, part.Verdict)
			}
		}
		out[p.Seed] += fmt.Sprintf("as expected %v ", p.AsExpected)
	}
	return out
}

// ScriptedOf maps the names of scs to whether each is scripted.
func ScriptedOf(scs []*spec.Scenario) map[string]bool {
	out := map[string]bool{}
	for _, sc := range scs {
		out[sc.Name] = Scripted(sc)
	}
	return out
}
