package shrink

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"splitbrain/checker"
	"splitbrain/runner"
	"splitbrain/scenarios/spec"
)

// replayer plays candidates for real: each replay an ordinary run of the
// candidate's file (runner.Run), with the original run's seed and
// backend, in a store of the shrink's own.
type replayer struct {
	o     *origin
	w     *writer
	k     int
	par   int
	store string
	// file is where the shrunk scenario goes: the replays' commands name
	// it.
	file     string
	backend  string
	cacheDir string
	// runErrs counts replays whose harness failed (a run folder made, a
	// fault that could not be injected); logf says what failed.
	logf func(format string, args ...any)
}

// replay is one run of a candidate.
type replay struct {
	violated bool
	at       time.Duration // see verdict.at
	dir      string
	// err is the harness's failure in this replay, if any (a fault that
	// could not be injected, a backend that would not start).
	err error
}

// test replays c k times, side by side (at most par at once); with early
// set it stops at the first replay that does not violate, since the
// candidate cannot count any more. Every replay's run folder is removed:
// only the search's verdicts are kept (in shrink.log).
func (r *replayer) test(ctx context.Context, c *candidate, early bool) (verdict, error) {
	stopAt := 0
	if early {
		stopAt = 1
	}
	rs, wall, err := r.replays(ctx, c, r.k, r.par, stopAt)
	if err != nil {
		return verdict{}, err
	}
	for _, p := range rs {
		if p.dir != "" {
			_ = os.RemoveAll(p.dir)
		}
	}
	return tally(rs, wall), nil
}

// tally counts the replays that violated.
func tally(rs []replay, wall time.Duration) verdict {
	v := verdict{runs: len(rs), at: -1, wall: wall}
	for _, p := range rs {
		if p.violated {
			v.violated++
			v.at = max(v.at, p.at)
		}
		if p.err != nil {
			v.failed++
			if v.err == nil {
				v.err = p.err
			}
		}
	}
	return v
}

// replays runs c n times, par at a time, and returns the replays that
// ended: all n, unless stopAt (when not 0) replays did not violate, or
// ctx ended. An error is the harness's: no run folder could be made, or
// the candidate's file does not parse.
func (r *replayer) replays(ctx context.Context, c *candidate, n, par, stopAt int) ([]replay, time.Duration, error) {
	src, err := r.w.file(c, "", nil)
	if err != nil {
		return nil, 0, err
	}
	sc, err := spec.Parse(src, r.file)
	if err != nil {
		return nil, 0, fmt.Errorf("a candidate's scenario does not read back: %w", err)
	}
	started := time.Now()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu    sync.Mutex
		out   []replay
		fatal error
		wg    sync.WaitGroup
		slots = make(chan struct{}, par)
		fails int
	)
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-rctx.Done():
		}
		if rctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			p, err := r.one(rctx, c, sc, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if fatal == nil {
					fatal = err
				}
				stop()
				return
			}
			if rctx.Err() != nil && !p.violated {
				// Stopped early, or by ctx: says nothing of c.
				if p.dir != "" {
					_ = os.RemoveAll(p.dir)
				}
				return
			}
			out = append(out, p)
			if !p.violated {
				fails++
				if fails == stopAt {
					stop()
				}
			}
		})
	}
	wg.Wait()
	if fatal != nil {
		return nil, 0, fatal
	}
	if err := ctx.Err(); err != nil {
		for _, p := range out {
			_ = os.RemoveAll(p.dir)
		}
		return nil, 0, err
	}
	slices.SortFunc(out, func(a, b replay) int {
		switch {
		case a.violated && !b.violated:
			return -1
		case b.violated && !a.violated:
			return 1
		}
		return 0
	})
	return out, time.Since(started), nil
}

// one plays one replay and judges it: did it violate the property, and
// when first.
func (r *replayer) one(ctx context.Context, c *candidate, sc *spec.Scenario, i int) (replay, error) {
	out, err := runner.Run(ctx, sc, runner.RunOptions{
		Seed:          r.o.meta.Seed,
		Store:         r.store,
		CacheDir:      r.cacheDir,
		Command:       fmt.Sprintf("splitbrain run %s --seed %d", r.file, r.o.meta.Seed),
		ProgressEvery: -1,
		Backend:       r.backend,
	})
	if out == nil {
		// Nothing could start (no redis-server, no engine): every other
		// replay would fail the same way.
		return replay{}, fmt.Errorf("a replay made no run: %w", err)
	}
	p := replay{dir: out.Dir, at: -1}
	if ctx.Err() == nil {
		p.err = err
	}
	if err != nil && r.logf != nil && ctx.Err() == nil {
		msg := err.Error()
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		r.logf("  replay %d of a candidate: %s", i+1, msg)
	}
	p.violated = violates(out.Result, r.o.prop)
	if p.violated {
		if t, ok := firstViolation(out.Result, r.o.prop); ok && len(c.faults) > 0 && len(out.Result.Faults) > 0 {
			// The history's clock starts before the nodes do; the first
			// fault started at its time from the workload's start.
			offset := time.Duration(out.Result.Faults[0].Start) - c.faults[0].at
			p.at = max(t-offset, 0)
		}
	}
	return p, nil
}

// violates reports whether res found prop violated.
func violates(res checker.Result, prop string) bool {
	for _, p := range res.Properties {
		if p.Name == prop {
			return p.Verdict == checker.Invalid
		}
	}
	return false
}

// firstViolation is when res first saw prop violated, in the history's
// time: the start of the first overlap (P1, P2) or the end of the first
// stale write (counter, bank); not known for the others.
func firstViolation(res checker.Result, prop string) (time.Duration, bool) {
	var ts []int64
	switch prop {
	case checker.PropLeaseLock:
		for _, v := range res.Violations {
			ts = append(ts, v.From)
		}
	case checker.PropCriticalSection:
		if res.CriticalSection != nil {
			for _, v := range res.CriticalSection.Violations {
				ts = append(ts, v.From)
			}
		}
	case checker.PropCounter:
		if res.Counter != nil {
			for _, l := range res.Counter.Lost {
				ts = append(ts, l.Write.End)
			}
		}
	case checker.PropBank:
		if res.Bank != nil {
			for _, l := range res.Bank.Lost {
				ts = append(ts, l.Transfer.End)
			}
		}
	}
	if len(ts) == 0 {
		return 0, false
	}
	return time.Duration(slices.Min(ts)), true
}

// confirm runs c n more times, one at a time — as splitbrain run runs
// its file: runs side by side load the machine, and a violation that
// hangs on timing comes more often under load — keeping their run
// folders. It stops once stopAt runs (when not 0) did not violate. It
// returns how many violated and the folders, those that violated first.
func (r *replayer) confirm(ctx context.Context, c *candidate, n, stopAt int) (verdict, []string, error) {
	rs, wall, err := r.replays(ctx, c, n, 1, stopAt)
	if err != nil {
		return verdict{}, nil, err
	}
	var dirs []string
	for _, p := range rs {
		dirs = append(dirs, p.dir)
	}
	// One at a time: a run's wall is the mean.
	v := tally(rs, wall/time.Duration(max(len(rs), 1)))
	v.of = n
	return v, dirs, nil
}

var (
	// ErrNotInvalid means the run has no violation to shrink to.
	ErrNotInvalid = errors.New("not an invalid run")
	// ErrNotShrinkable means the folder is not a run that can be shrunk:
	// not a run folder, a scripted scenario, steps without a time.
	ErrNotShrinkable = errors.New("cannot shrink")
	// ErrNoReproduction means the run's violation did not come back in
	// any replay of its own schedule: there is nothing to shrink from.
	ErrNoReproduction = errors.New("the violation did not reproduce")
)
