package shrink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"splitbrain/scenarios/spec"
)

// verdict is what the replays of one candidate showed.
type verdict struct {
	// violated of runs replays violated the property; runs is fewer than
	// asked when the replays stopped early, at the first that did not.
	violated, runs int
	// at is, over the replays that violated, the latest time from the
	// workload's start to the property's first violation; negative when
	// not known.
	at time.Duration
	// wall is how long the replays took, side by side.
	wall time.Duration
	// of is, for runs one at a time (confirming), how many were planned;
	// zero for replays side by side.
	of int
	// failed counts the replays whose harness failed; err is the first
	// such failure.
	failed int
	err    error
}

// String says how many violated: "2 of 3 replays violated".
func (v verdict) String() string {
	switch {
	case v.of > v.runs && v.runs == 1 && v.violated == 0:
		return fmt.Sprintf("the first of %d runs did not violate", v.of)
	case v.of > v.runs:
		return fmt.Sprintf("%d of the first %d of %d runs violated", v.violated, v.runs, v.of)
	case v.of > 0:
		return fmt.Sprintf("%d of %d runs violated", v.violated, v.runs)
	}
	return fmt.Sprintf("%d of %d replays violated", v.violated, v.runs)
}

// tester replays a candidate: k times, or (early) until a replay does not
// violate.
type tester func(ctx context.Context, c *candidate, early bool) (verdict, error)

// note is why a part of the best candidate is kept: what happened when a
// candidate without it (or with it shorter) was tried.
type note struct {
	text string
	// version is the number of candidates accepted when it was tried: a
	// note older than the best was tried on a larger candidate.
	version int
}

// errBudget ends the search when another candidate would not fit in the
// time left.
var errBudget = errors.New("the budget is spent")

// search shrinks a candidate that violates the property by trying smaller
// ones: fewer faults (delta debugging), fewer clients and keys, a shorter
// workload, shorter faults, faults that start earlier. A candidate counts
// only when every one of k replays violates.
type search struct {
	test tester
	k    int
	// slack is how long after a violation a workload must go on for it
	// to be seen again (a stale write landing, a lease expiring): the
	// lock's TTL and a little more.
	slack time.Duration
	best  *candidate
	bestV verdict
	// chain holds every candidate accepted, the first best first: the
	// result may have to step back along it (Shrink's confirmation).
	chain []*candidate
	// version counts the candidates accepted; tried, those replayed.
	version, tried int
	notes          map[string]note
	cache          map[string]verdict
	// key names a candidate for the cache: its file.
	key func(*candidate) (string, error)
	// fits reports whether another candidate fits in the time left.
	fits func() bool
	logf func(format string, args ...any)
	// accepted is told of each new best, to write it.
	accepted func(*candidate, verdict) error
	// pass says whether a verdict counts; nil: all k replays violated.
	pass func(verdict) bool
	// name is what the log calls a candidate of this search.
	name string
	// coarse limits the search to fewer faults, clients and keys and a
	// workload that ends sooner; not shorter faults or sooner starts.
	coarse bool
}

// try replays c; when every replay violates, c becomes the best. Otherwise
// the note named noteKey, if any, says so: text, then the count.
func (s *search) try(ctx context.Context, c *candidate, what, noteKey, text string) (bool, error) {
	if s.fits != nil && !s.fits() {
		return false, errBudget
	}
	key, err := s.key(c)
	if err != nil {
		return false, err
	}
	v, seen := s.cache[key]
	if !seen {
		if v, err = s.test(ctx, c, true); err != nil {
			return false, err
		}
		s.cache[key] = v
		s.tried++
	}
	name := s.name
	if name == "" {
		name = "candidate"
	}
	passed := v.violated == s.k && v.runs == s.k
	if s.pass != nil {
		passed = s.pass(v)
	}
	if passed {
		s.best, s.bestV = c, v
		s.version++
		s.chain = append(s.chain, c)
		s.logf("%s %d (%s): %s → best so far: %s", name, s.tried, what, v, c.size())
		if s.accepted != nil {
			return true, s.accepted(c, v)
		}
		return true, nil
	}
	if !seen {
		// A candidate tried before is not tried again, nor told again.
		s.logf("%s %d (%s): %s", name, s.tried, what, v)
	}
	if noteKey != "" {
		s.notes[noteKey] = note{text: fmt.Sprintf("%s, %s", text, v), version: s.version}
	}
	return false, nil
}

// run tries smaller candidates, round after round, until a round finds
// none or the budget or ctx ends; the best is then in s.best.
func (s *search) run(ctx context.Context) error {
	// Clients before faults: with every fault still there the violation
	// has the most chances to come without a client, and a client fewer
	// may leave faults a majority needs (two clients cannot split a
	// quorum's votes as three can).
	phases := []func(context.Context) (bool, error){s.trim, s.dropClients, s.ddmin, s.dropKeys, s.shorten}
	if !s.coarse {
		// Sooner first: faults that start sooner let the workload end
		// sooner, and every later candidate run faster.
		phases = []func(context.Context) (bool, error){s.trim, s.dropClients, s.ddmin, s.dropKeys, s.startEarlier, s.shorten, s.shortenFaults}
	}
	for {
		progress := false
		for _, phase := range phases {
			p, err := phase(ctx)
			progress = progress || p
			if err != nil {
				return err
			}
		}
		if !progress {
			return nil
		}
	}
}

func roundUp(d, to time.Duration) time.Duration { return (d + to - 1) / to * to }

// minGain is the least a shorter workload, wait or fault must save to be
// tried: a round of replays for a few milliseconds is not worth it.
const minGain = 50 * time.Millisecond

// trim drops the faults that start after the violation and ends the
// workload soon after it: what came later cannot have caused it.
func (s *search) trim(ctx context.Context) (bool, error) {
	t := s.bestV.at
	if t < 0 {
		return false, nil
	}
	c := s.best.clone()
	c.faults = slices.DeleteFunc(c.faults, func(f fault) bool { return f.at > t })
	c.duration = min(c.duration, max(roundUp(t+s.slack, 10*time.Millisecond), c.lastEnd()+10*time.Millisecond))
	if len(c.faults) == len(s.best.faults) && c.duration == s.best.duration {
		return false, nil
	}
	return s.try(ctx, c, fmt.Sprintf("cut after the violation at %v", t.Round(time.Millisecond)), "", "")
}

// ddmin is delta debugging over the faults (Zeller's ddmin, by
// complements): remove one of n chunks of them at a time, halving the
// chunks when none can go, until no single fault can go.
func (s *search) ddmin(ctx context.Context) (bool, error) {
	progress := false
	n := 2
	for len(s.best.faults) > 0 {
		fs := s.best.faults
		n = min(n, len(fs))
		chunks := split(fs, n)
		reduced := false
		// The last first: a fault after the violation's cause is the
		// likeliest to be noise.
		for i := len(chunks) - 1; i >= 0; i-- {
			drop := map[int]bool{}
			for _, f := range chunks[i] {
				drop[f.id] = true
			}
			what, noteKey, text := fmt.Sprintf("without %d of %d faults", len(chunks[i]), len(fs)), "", ""
			if len(chunks[i]) == 1 {
				f := chunks[i][0]
				what = "without " + describe(f.step, s.best.names())
				noteKey, text = noteFault(f.id), "without it"
			}
			ok, err := s.try(ctx, s.best.without(drop), what, noteKey, text)
			if err != nil {
				return progress, err
			}
			if ok {
				reduced, progress = true, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if n >= len(fs) {
				break
			}
			n = min(2*n, len(fs))
		}
	}
	return progress, nil
}

// split cuts fs into n chunks of consecutive faults, as equal as can be.
func split(fs []fault, n int) [][]fault {
	var out [][]fault
	for i := range n {
		lo, hi := i*len(fs)/n, (i+1)*len(fs)/n
		if hi > lo {
			out = append(out, fs[lo:hi])
		}
	}
	return out
}

// dropClients removes clients, the last first; two stay, since mutual
// exclusion takes two to break.
func (s *search) dropClients(ctx context.Context) (bool, error) {
	progress := false
	for i := len(s.best.clients) - 1; i >= 0 && len(s.best.clients) > 2; i-- {
		name := s.best.names()[s.best.clients[i]]
		ok, err := s.try(ctx, s.best.withoutClient(i), "without client "+name, noteClient(s.best.clients[i]), "without it")
		if err != nil {
			return progress, err
		}
		progress = progress || ok
	}
	return progress, nil
}

func (s *search) dropKeys(ctx context.Context) (bool, error) {
	if s.best.keys <= 1 {
		return false, nil
	}
	c := s.best.clone()
	c.keys = 1
	return s.try(ctx, c, "one key", noteKeys, "with 1 key")
}

// shorten ends the workload soon after its last fault, or if that is too
// soon, halfway there.
func (s *search) shorten(ctx context.Context) (bool, error) {
	floor := roundUp(s.best.lastEnd()+50*time.Millisecond, 10*time.Millisecond)
	for _, d := range []time.Duration{floor, roundUp((s.best.duration+floor)/2, 10*time.Millisecond)} {
		if d > s.best.duration-minGain {
			continue
		}
		c := s.best.clone()
		c.duration = d
		ok, err := s.try(ctx, c, fmt.Sprintf("a %v workload", d), noteDuration, fmt.Sprintf("%v long", d))
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// shortenFaults halves each fault's duration in turn.
func (s *search) shortenFaults(ctx context.Context) (bool, error) {
	progress := false
	for i := range s.best.faults {
		f := s.best.faults[i]
		d := f.step.For.Min
		if d < 2*minGain {
			continue
		}
		half := (d / 2).Round(time.Millisecond)
		c := s.best.clone()
		c.faults[i].step.For = spec.Span{Min: half, Max: half}
		ok, err := s.try(ctx, c, fmt.Sprintf("%s for %v instead of %v", action(f.step, s.best.names()), half, d),
			noteFor(f.id), fmt.Sprintf("for %v", half))
		if err != nil {
			return progress, err
		}
		progress = progress || ok
	}
	return progress, nil
}

// startEarlier halves each wait in turn: the faults after it start
// earlier, and the workload ends as much earlier.
func (s *search) startEarlier(ctx context.Context) (bool, error) {
	progress := false
	for g := 0; ; g++ {
		starts := groupStarts(s.best.faults)
		if g >= len(starts) {
			return progress, nil
		}
		at := s.best.faults[starts[g]].at
		var prev time.Duration
		if g > 0 {
			prev = s.best.faults[starts[g-1]].at
		}
		wait := at - prev
		if wait < 2*minGain {
			continue
		}
		// No wait at all first, then half of it.
		for _, shift := range []time.Duration{wait, (wait / 2).Round(time.Millisecond)} {
			c := s.best.clone()
			for i := range c.faults {
				if c.faults[i].at >= at {
					c.faults[i].at -= shift
				}
			}
			c.duration = max(c.duration-shift, c.lastEnd()+10*time.Millisecond)
			f := s.best.faults[starts[g]]
			ok, err := s.try(ctx, c, fmt.Sprintf("%s %v earlier", describe(f.step, s.best.names()), shift),
				noteWait(f.id), fmt.Sprintf("a wait of %v", wait-shift))
			if err != nil {
				return progress, err
			}
			if ok {
				progress = true
				break
			}
		}
	}
}

// groupStarts returns the index of the first fault of each start time.
func groupStarts(fs []fault) []int {
	var out []int
	for i, f := range fs {
		if i == 0 || f.at != fs[i-1].at {
			out = append(out, i)
		}
	}
	return out
}
