// Package shrink turns an invalid run of a generated workload into the
// smallest scenario it can find that still violates the same property: a
// scenario file in the ordinary format, with the run's faults as explicit
// steps at their times, fewer of them, shorter and earlier, with fewer
// clients and keys and a shorter workload.
//
// Runs are not deterministic — real processes, real timing — so a smaller
// candidate counts only when every one of k replays (same seed, faults at
// their times) violates the property; the result's reproduction rate is
// measured over further runs. Each replay is an ordinary run
// (runner.Run) of the candidate's file.
package shrink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/internal/private"
	"splitbrain/pages"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

// Options configures a shrink.
type Options struct {
	// Replays is k: a candidate counts only if all k of its replays
	// violate the property (default 3).
	Replays int
	// Confirm is how many further runs, one at a time, measure the
	// result's reproduction rate (default 10).
	Confirm int
	// Parallel is how many replays of a candidate go side by side
	// (default 1).
	Parallel int
	// MinRate is the share of the confirming runs the result should
	// violate in (default 0.9): a smallest candidate that does worse
	// gives way to a larger one that does not (see confirm).
	MinRate float64
	// Budget bounds the whole shrink, the confirming runs included: the
	// search stops when one more candidate and those runs would not fit.
	// Zero: no bound.
	Budget time.Duration
	// Backend is where the nodes run; empty: where the run's did.
	Backend string
	// CacheDir holds the clock shim and the live-run registry; empty: the
	// default.
	CacheDir string
	// Progress receives a line per candidate; nil discards them (they are
	// in shrink.log too).
	Progress io.Writer
}

// Dir is the folder of a run's shrink, inside the run folder: the shrunk
// scenario, shrink.log, and the runs of the shrunk scenario.
const Dir = "shrink"

// LogFile is the shrink's log, in Dir.
const LogFile = "shrink.log"

// Result is what a shrink found.
type Result struct {
	// File is the shrunk scenario; empty when nothing was written.
	File string `json:"file,omitempty"`
	// Report is a run of File that violated, from the confirming runs.
	Report   string `json:"report,omitempty"`
	Run      string `json:"run"`
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	Seed     int64  `json:"seed"`
	Property string `json:"property"`
	// From and To are the sizes before and after: faults, clients, keys
	// and the workload's length.
	From Size `json:"from"`
	To   Size `json:"to"`
	// Baseline is how many of the first replays of the run's own faults
	// violated.
	Baseline Count `json:"baseline"`
	// Reproduced is how many of the confirming runs violated; zero runs
	// when they were not run (interrupted).
	Reproduced Count         `json:"reproduced"`
	Candidates int           `json:"candidates"`
	Wall       time.Duration `json:"wall_ns"`
	// Interrupted is set when Ctrl-C ended the shrink: File is the best
	// found so far, unconfirmed.
	Interrupted bool `json:"interrupted,omitempty"`
	// BudgetSpent is set when the search stopped at the budget.
	BudgetSpent bool `json:"budget_spent,omitempty"`
	// LinkErr says why the run's report could not be made to link File.
	LinkErr string `json:"link_error,omitempty"`
}

// Size is how big a scenario is.
type Size struct {
	Faults   int           `json:"faults"`
	Clients  int           `json:"clients"`
	Keys     int           `json:"keys"`
	Duration time.Duration `json:"duration_ns"`
}

func sizeOf(c *candidate) Size {
	return Size{Faults: len(c.faults), Clients: len(c.clients), Keys: c.keys, Duration: c.duration}
}

// Count is k of n runs.
type Count struct {
	Violated int `json:"violated"`
	Runs     int `json:"runs"`
	// Of is how many runs were planned, when they stopped early because
	// the rate wanted was out of reach; zero when all were run.
	Of int `json:"of,omitempty"`
}

func (c Count) String() string {
	if c.Of > c.Runs {
		return fmt.Sprintf("%d of the first %d of %d", c.Violated, c.Runs, c.Of)
	}
	return fmt.Sprintf("%d of %d", c.Violated, c.Runs)
}

// Shrink shrinks the invalid run in dir. It writes the shrunk scenario
// into dir/shrink/ as soon as it has one and each time it finds a smaller
// one, so that Ctrl-C (ctx ending) leaves the best found so far; then,
// unless interrupted, it measures the result's reproduction rate and
// links the file and a run of it from the run's report.
//
// Errors: ErrNotInvalid and ErrNotShrinkable (wrapped) for a run that
// cannot be shrunk, ErrNoReproduction when no replay of the run's own
// faults violated; anything else is the harness's.
func Shrink(ctx context.Context, dir string, opts Options) (*Result, error) {
	started := time.Now()
	o, err := load(dir)
	if err != nil {
		return nil, err
	}
	opts.Replays = cmpOr(opts.Replays, 3)
	opts.Confirm = cmpOr(opts.Confirm, 10)
	opts.Parallel = cmpOr(opts.Parallel, 1)
	if opts.MinRate <= 0 || opts.MinRate > 1 {
		opts.MinRate = 0.9
	}
	opts.Backend = runner.Backend(opts.Backend, o.meta.Backend)
	out := filepath.Join(o.dir, Dir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("shrink: %w", err)
	}
	logFile, err := private.Append(filepath.Join(out, LogFile))
	if err != nil {
		return nil, fmt.Errorf("shrink: %w", err)
	}
	defer logFile.Close()
	sh := &shrinker{o: o, opts: opts, started: started, log: logFile}
	sh.name = o.sc.Name + "-shrunk"
	sh.file = filepath.Join(out, sh.name+".yaml")
	sh.w = &writer{doc: o.doc, name: sh.name, lock: o.sc.Lock.Kind}
	sh.rp = &replayer{o: o, w: sh.w, k: opts.Replays, par: opts.Parallel, store: out, file: sh.file,
		backend: opts.Backend, cacheDir: opts.CacheDir, logf: sh.logf}
	return sh.shrink(ctx)
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

type shrinker struct {
	o          *origin
	opts       Options
	started    time.Time
	name, file string
	w          *writer
	rp         *replayer
	s          *search
	// p is the search that goes on from a larger candidate when the
	// smallest reproduced too seldom (polish); nil if none did.
	p   *search
	res Result
	// bestCount is how s's best fared in its confirming runs.
	bestCount Count
	mu        sync.Mutex
	log       io.Writer
}

func (sh *shrinker) logf(format string, args ...any) {
	line := fmt.Sprintf("%6s  %s\n", time.Since(sh.started).Round(time.Second), fmt.Sprintf(format, args...))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, _ = io.WriteString(sh.log, line)
	if sh.opts.Progress != nil {
		_, _ = io.WriteString(sh.opts.Progress, line)
	}
}

func (sh *shrinker) shrink(ctx context.Context) (*Result, error) {
	o, opts := sh.o, sh.opts
	base := &candidate{clients: o.sc.Clients, keys: o.sc.Workload.Keys, duration: o.sc.Workload.Duration}
	for i, f := range o.faults {
		base.faults = append(base.faults, fault{id: i, at: f.At, step: f.Step})
	}
	sh.res = Result{Run: o.dir, Scenario: o.sc.Name, Lock: o.sc.Lock.Kind, Seed: o.meta.Seed, Property: o.prop, From: sizeOf(base)}
	res := &sh.res
	budget := "no budget"
	if opts.Budget > 0 {
		budget = "a budget of " + opts.Budget.String()
	}
	sh.logf("shrinking %s: %s against %s, seed %d, violated %s; %s", o.dir, o.sc.Name, o.sc.Lock.Kind, o.meta.Seed, o.prop, base.size())
	sh.logf("a candidate counts if %d of %d replays violate %s; %d runs side by side; %s", opts.Replays, opts.Replays, o.prop, opts.Parallel, budget)

	v, err := sh.rp.test(ctx, base, false)
	switch {
	case ctx.Err() != nil:
		res.Interrupted, res.Wall = true, time.Since(sh.started)
		sh.logf("interrupted before the run's own faults were replayed; nothing written")
		return res, nil
	case err != nil:
		return nil, err
	}
	if v.violated == 0 && v.failed == v.runs {
		// Not a violation that did not come back: the harness could not
		// replay at all (no redis-server, no engine, a fault refused).
		return nil, fmt.Errorf("every replay of the run's faults failed: %w", v.err)
	}
	res.Baseline = Count{Violated: v.violated, Runs: v.runs}
	sh.logf("the run's %d faults as explicit steps: %s %s", len(base.faults), v, o.prop)
	if v.violated == 0 {
		return nil, fmt.Errorf("%w: %s violated %s, but its %d faults, replayed at their times with its seed %d, violated it in 0 of %d replays (%s): the violation hung on a timing these replays did not meet; nothing written",
			ErrNoReproduction, o.dir, o.prop, len(base.faults), o.meta.Seed, v.runs, filepath.Join(o.dir, Dir, LogFile))
	}
	// The search side by side is coarse: fewer faults, clients and keys,
	// a shorter workload. Shorter faults that start sooner change the
	// timing a violation hangs on, and replays side by side, loading the
	// machine, judge timing too kindly (polish tries them, one at a time).
	s := &search{
		coarse: true,
		test:   sh.rp.test, k: opts.Replays, slack: o.sc.Lock.TTL + 200*time.Millisecond,
		best: base, bestV: v, chain: []*candidate{base}, notes: map[string]note{}, cache: map[string]verdict{},
		key: func(c *candidate) (string, error) {
			b, err := sh.w.file(c, "", nil)
			return string(b), err
		},
		logf: sh.logf,
		accepted: func(c *candidate, _ verdict) error {
			return sh.write(c, "The search goes on; this is the best found so far.")
		},
	}
	sh.s = s
	if v.violated < v.runs {
		sh.logf("the run's own faults: %s only; a smaller candidate must do better, all %d", v, opts.Replays)
	}
	if err := sh.write(base, "The search goes on; this is the best found so far."); err != nil {
		return nil, err
	}
	res.File = sh.file

	sctx := ctx
	var deadline time.Time
	if opts.Budget > 0 {
		deadline = sh.started.Add(opts.Budget)
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
		// The confirming runs are part of the budget: those of the best
		// and, should it reproduce too seldom, of one larger candidate.
		s.fits = func() bool {
			return time.Until(deadline) > s.bestV.wall+2*sh.confirmWall(s.bestV.wall)
		}
	}
	err = s.run(sctx)
	res.Candidates, res.To = s.tried, sizeOf(s.best)
	switch {
	case ctx.Err() != nil:
		res.Interrupted, res.Wall = true, time.Since(sh.started)
		sh.logf("interrupted after %d candidates; the best so far, %s, is in %s", s.tried, s.best.size(), sh.file)
		return res, sh.write(s.best, fmt.Sprintf("Interrupted after %d candidates: its reproduction rate was not measured.", s.tried))
	case errors.Is(err, errBudget) || errors.Is(err, context.DeadlineExceeded):
		res.BudgetSpent = true
		sh.logf("the budget is spent after %d candidates: %s", s.tried, s.best.size())
	case err != nil:
		return nil, err
	default:
		sh.logf("no smaller candidate after %d: %s", s.tried, s.best.size())
	}

	// Stage 2: the best's rate, one at a time; larger ones if it falls
	// short.
	chosen, reached, err := sh.confirm(ctx, s.chain, s.bestV.wall, deadline)
	switch {
	case ctx.Err() != nil:
		removeAll(chosen.dirs)
		res.Interrupted, res.Wall = true, time.Since(sh.started)
		sh.logf("interrupted while confirming; %s is unconfirmed", sh.file)
		return res, sh.write(s.best, "Interrupted while its reproduction rate was measured.")
	case err != nil:
		return nil, err
	}
	story := ""
	if chosen.c != s.best {
		story = fmt.Sprintf("The smallest candidate of the search side by side, %s, passed its %d replays but violated %s in %s further runs only; %s, accepted before it, did best.",
			s.best.size(), opts.Replays, o.prop, sh.bestCount, chosen.c.size())
	}
	// Stage 3 and 4: on from there with runs one at a time, and the
	// rate of what that finds measured afresh.
	if reached && ctx.Err() == nil {
		p, err := sh.polish(sctx, chosen, deadline)
		if err != nil {
			return nil, err
		}
		if p.version > 0 && ctx.Err() == nil {
			final, ok, err := sh.confirm(ctx, p.chain[1:], p.bestV.wall, deadline)
			switch {
			case err != nil && ctx.Err() == nil:
				return nil, err
			case ok:
				removeAll(chosen.dirs)
				story += fmt.Sprintf(" From %s the search went on with runs one at a time, a candidate counting only if all %d violated, and found this one (%d more tried).",
					chosen.c.size(), opts.Confirm, p.tried)
				if final.c != p.best {
					story += fmt.Sprintf(" (The smallest it found, %s, violated in %s further runs only.)", p.best.size(), sh.bestCount)
				}
				chosen = final
			default:
				removeAll(final.dirs)
				story += fmt.Sprintf(" The smaller ones the search found from it with runs one at a time (%d tried) fell short of %d of %d in further runs.",
					p.tried, sh.need(), opts.Confirm)
			}
		}
	}
	if sh.p != nil {
		res.Candidates += sh.p.tried
	}
	res.To = sizeOf(chosen.c)
	res.Reproduced = chosen.count
	if chosen.dir != "" {
		res.Report = filepath.Join(chosen.dir, runstore.ReportFile)
	}
	res.Wall = time.Since(sh.started)
	rate := fmt.Sprintf("Run %d more times, one at a time, with seed %d, it violated %s in %s runs: splitbrain run %s --seed %d.",
		chosen.count.Runs, o.meta.Seed, o.prop, res.Reproduced, sh.file, o.meta.Seed)
	if err := sh.write(chosen.c, strings.TrimSpace(story+" "+rate)); err != nil {
		return nil, err
	}
	sh.logf("%s violated %s in %s further runs; shrunk from %s to %s in %v", sh.file, o.prop, res.Reproduced,
		res.From.String(), res.To.String(), res.Wall.Round(time.Second))
	if err := sh.link(); err != nil {
		res.LinkErr = err.Error()
		sh.logf("the run's report does not link it: %v", err)
	}
	return res, nil
}

// confirmed is a candidate's reproduction rate over further runs.
type confirmed struct {
	c     *candidate
	count Count
	v     verdict
	dirs  []string // the runs' folders, those that violated first
	dir   string   // the first run that violated; empty if none did
}

// need is how many of the confirming runs must violate.
func (sh *shrinker) need() int {
	return int(math.Ceil(sh.opts.MinRate*float64(sh.opts.Confirm) - 1e-9))
}

// confirmRuns runs c Options.Confirm more times, one at a time, and stops
// once stopAt of them did not violate.
func (sh *shrinker) confirmRuns(ctx context.Context, c *candidate, stopAt int) (confirmed, error) {
	n := sh.opts.Confirm
	v, ds, err := sh.rp.confirm(ctx, c, n, stopAt)
	if err != nil {
		return confirmed{}, err
	}
	cf := confirmed{c: c, count: Count{Violated: v.violated, Runs: v.runs, Of: n}, v: v, dirs: ds}
	if v.violated > 0 {
		cf.dir = ds[0]
	}
	return cf, nil
}

func removeAll(dirs []string) {
	for _, d := range dirs {
		if d != "" {
			_ = os.RemoveAll(d)
		}
	}
}

// confirm measures the rate of the last candidate of chain over
// Options.Confirm further runs, one at a time — as splitbrain run runs
// the file. k of k replays can let through a candidate that violates
// only now and then (a smaller schedule, with fewer chances to break
// exclusion, passes 3 of 3 by luck, more easily still when its replays
// load the machine side by side); when the rate is under
// Options.MinRate it steps back along chain, to larger candidates, while
// the deadline (if any) allows, and returns the first that reaches it
// (reached), else the one that did best. A candidate's runs stop once the
// rate is out of its reach. The runs of the one returned are kept; the
// others' are removed. wall is about how long a run takes.
func (sh *shrinker) confirm(ctx context.Context, chain []*candidate, wall time.Duration, deadline time.Time) (confirmed, bool, error) {
	var best confirmed
	bestRate := -1.0
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		if i < len(chain)-1 && !deadline.IsZero() && time.Until(deadline) < sh.confirmWall(wall) {
			sh.logf("no time left in the budget to confirm a larger candidate")
			break
		}
		sh.logf("confirming %s: %d more runs, one at a time", c.size(), sh.opts.Confirm)
		cf, err := sh.confirmRuns(ctx, c, sh.opts.Confirm-sh.need()+1)
		if err != nil {
			return best, false, err
		}
		short := ""
		if cf.count.Violated < sh.need() {
			short = fmt.Sprintf(", short of %d of %d", sh.need(), sh.opts.Confirm)
		}
		sh.logf("%s: %s runs violated %s%s", c.size(), cf.count, sh.o.prop, short)
		if i == len(chain)-1 {
			sh.bestCount = cf.count
		}
		if rate := float64(cf.count.Violated) / float64(max(cf.count.Runs, 1)); best.c == nil || rate > bestRate {
			removeAll(best.dirs)
			best, bestRate = cf, rate
		} else {
			removeAll(cf.dirs)
		}
		if cf.count.Violated >= sh.need() {
			return best, true, nil
		}
	}
	return best, false, nil
}

// polish goes on shrinking from the confirmed candidate, with what the
// coarse search does not try (shorter faults, sooner starts) besides:
// the same search, but its replays one at a time and as many as the
// confirming runs, every one of which must violate, so that what it
// finds is as reliable as what it started from. Its chain starts with
// from; ctx ending (Ctrl-C) or the budget stop it with what it has.
func (sh *shrinker) polish(ctx context.Context, from confirmed, deadline time.Time) (*search, error) {
	n := sh.opts.Confirm
	p := &search{
		k: n, slack: sh.s.slack, best: from.c, bestV: from.v, chain: []*candidate{from.c},
		notes: map[string]note{}, cache: map[string]verdict{}, key: sh.s.key, logf: sh.logf,
		name: "candidate (one at a time)",
		accepted: func(c *candidate, _ verdict) error {
			return sh.write(c, "The search goes on; this is the best found so far.")
		},
	}
	p.test = func(ctx context.Context, c *candidate, _ bool) (verdict, error) {
		cf, err := sh.confirmRuns(ctx, c, 1)
		removeAll(cf.dirs)
		return cf.v, err
	}
	if !deadline.IsZero() {
		// Room for one more candidate and the fresh runs of the last.
		p.fits = func() bool { return time.Until(deadline) > 2*sh.confirmWall(p.bestV.wall) }
		if !p.fits() {
			return p, nil
		}
	}
	sh.logf("going on from %s with shorter and sooner faults too: a candidate now counts if %d of %d runs one at a time violate",
		from.c.size(), n, n)
	sh.p = p
	err := p.run(ctx)
	switch {
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		sh.logf("interrupted after %d more candidates: %s", p.tried, p.best.size())
	case errors.Is(err, errBudget) || errors.Is(err, context.DeadlineExceeded):
		sh.res.BudgetSpent = true
		sh.logf("the budget is spent after %d more candidates: %s", p.tried, p.best.size())
	case err != nil:
		return nil, err
	default:
		sh.logf("no smaller candidate after %d more: %s", p.tried, p.best.size())
	}
	return p, nil
}

// confirmWall is about how long the confirming runs of a candidate
// whose replays took wall side by side take one at a time.
func (sh *shrinker) confirmWall(wall time.Duration) time.Duration {
	return time.Duration(sh.opts.Confirm) * wall
}

func (z Size) String() string {
	return fmt.Sprintf("%s, %s, %s, a %v workload", plural(z.Faults, "fault", "faults"),
		plural(z.Clients, "client", "clients"), plural(z.Keys, "key", "keys"), z.Duration)
}

// write writes c as the shrunk scenario, with a description that ends
// with status; atomically, so that Ctrl-C never leaves half a file.
func (sh *shrinker) write(c *candidate, status string) error {
	src, err := sh.w.file(c, sh.description(c, status), sh.comments(c))
	if err != nil {
		return err
	}
	if _, err := spec.Parse(src, sh.file); err != nil {
		return fmt.Errorf("shrink: the shrunk scenario does not read back: %w", err)
	}
	tmp := sh.file + ".tmp"
	if err := private.WriteFile(tmp, src, 0o644); err != nil {
		return fmt.Errorf("shrink: %w", err)
	}
	if err := os.Rename(tmp, sh.file); err != nil {
		return fmt.Errorf("shrink: %w", err)
	}
	return nil
}

func (sh *shrinker) description(c *candidate, status string) string {
	o := sh.o
	tried := 0
	if sh.s != nil {
		tried = sh.s.tried
	}
	if sh.p != nil {
		tried += sh.p.tried
	}
	paras := []string{
		fmt.Sprintf("Shrunk by splitbrain shrink from the invalid run %s of %s against %s, seed %d, which violated %s: %s became %s.",
			o.dir, o.sc.Name, o.sc.Lock.Kind, o.meta.Seed, o.prop, sh.res.From, c.size()),
		fmt.Sprintf("Its faults are the run's, replayed at their times; a candidate counted only if %d of %d replays with seed %d violated %s (%d tried in %v). "+
			"The comment above each step says why it stays: without it, or with it shorter or sooner, fewer replays violated.",
			sh.opts.Replays, sh.opts.Replays, o.meta.Seed, o.prop, tried, time.Since(sh.started).Round(time.Second)),
		status,
	}
	for i, p := range paras {
		paras[i] = wrap(p, 72)
	}
	return strings.Join(paras, "\n\n") + "\n"
}

// wrap breaks text into lines of at most width characters, at spaces.
func wrap(text string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}

// comments says why each part of c is kept, from the search's notes.
func (sh *shrinker) comments(c *candidate) map[string]string {
	o := sh.o
	m := map[string]string{}
	// The notes of the search that found c first, then those of the one
	// before it; each worded against the place c, or the candidate the
	// later search started from, has in its chain.
	type source struct {
		notes   map[string]note
		version int
	}
	var sources []source
	root := c
	if sh.p != nil {
		if v := slices.Index(sh.p.chain, c); v >= 0 {
			sources = append(sources, source{sh.p.notes, v})
			root = sh.p.chain[0]
		}
	}
	if sh.s != nil {
		if v := slices.Index(sh.s.chain, root); v >= 0 {
			sources = append(sources, source{sh.s.notes, v})
		}
	}
	lookup := func(key string) (note, int, bool) {
		for _, src := range sources {
			if n, ok := src.notes[key]; ok {
				return n, src.version, true
			}
		}
		return note{}, 0, false
	}
	has := func(key string) bool { _, _, ok := lookup(key); return ok }
	why := func(key, kept string) string {
		n, version, ok := lookup(key)
		if !ok {
			return kept
		}
		s := n.text
		switch {
		case n.version < version:
			s += " (on an earlier, larger candidate)"
		case n.version > version:
			s += " (on a later, smaller candidate)"
		}
		return s
	}
	names := c.names()
	for _, f := range c.faults {
		lines := []string{describe(f.step, names) + ": needed; " +
			why(noteFault(f.id), "not tried without it (the search stopped first)") + "."}
		// A shorter fault tried on a later candidate is not this one's
		// length: the note would not be about it.
		if n, version, ok := lookup(noteFor(f.id)); ok && n.version <= version {
			lines = append(lines, "Shorter: "+why(noteFor(f.id), "")+".")
		}
		orig := o.faults[f.id]
		from := strings.TrimPrefix(orig.From, filepath.Join(o.dir, runner.ScenarioFile))
		lines = append(lines, fmt.Sprintf("The run's scenario.yaml%s, at %v.", from, orig.At))
		m[noteFault(f.id)] = wrapComment(lines)
	}
	for _, i := range groupStarts(c.faults) {
		f := c.faults[i]
		text := fmt.Sprintf("The next fault starts %v into the workload", f.at)
		if has(noteWait(f.id)) {
			text += "; sooner: " + why(noteWait(f.id), "") + "."
		} else {
			text += "."
		}
		m[noteWait(f.id)] = wrapComment([]string{text})
	}
	from := sh.res.From
	m[noteClients] = fmt.Sprintf("%d in the run", from.Clients)
	if len(c.clients) == 2 {
		m[noteClients] += "; no fewer: exclusion takes two to break"
	}
	for _, name := range c.clients {
		if has(noteClient(name)) {
			m[noteClients] += fmt.Sprintf("; %s: %s", names[name], why(noteClient(name), ""))
		}
	}
	m[noteKeys] = fmt.Sprintf("%d in the run", from.Keys)
	if has(noteKeys) {
		m[noteKeys] += "; " + why(noteKeys, "")
	}
	m[noteDuration] = fmt.Sprintf("%v in the run", from.Duration)
	if has(noteDuration) {
		m[noteDuration] += "; " + why(noteDuration, "")
	}
	return m
}

func wrapComment(paras []string) string {
	for i, p := range paras {
		paras[i] = wrap(p, 76)
	}
	return strings.Join(paras, "\n")
}

// link makes the run's report link the shrunk scenario and a run of it:
// the run is judged again from its history (its report is drawn from
// it) and written with the link in its meta. A verdict that comes out
// otherwise than before (a checker timeout) leaves the report alone.
func (sh *shrinker) link() error {
	o := sh.o
	rel := func(p string) string {
		r, err := filepath.Rel(o.dir, p)
		if err != nil {
			return p
		}
		return filepath.ToSlash(r)
	}
	link := runstore.Shrunk{Scenario: rel(sh.file),
		Summary: fmt.Sprintf("%s; violated %s in %s further runs", sh.res.To, o.prop, sh.res.Reproduced)}
	if sh.res.Report != "" {
		link.Report = rel(sh.res.Report)
	}
	events, err := history.ReadFile(filepath.Join(o.dir, runstore.HistoryFile))
	if err != nil {
		return fmt.Errorf("reading its history: %w", err)
	}
	var opts []checker.Option
	if why := history.Unfinished(events); why != "" {
		opts = append(opts, checker.Incomplete(why))
	}
	res := checker.Check(events, opts...)
	if res.Verdict != o.res.Verdict {
		return fmt.Errorf("judged again it is %s, not %s (%s); its report was left as it was", res.Verdict, o.res.Verdict, res.Reason)
	}
	meta := o.meta
	meta.Shrunk = &link
	return pages.Write(o.dir, meta, events, res)
}
