package liveness

import (
	"cmp"
	"slices"
	"sort"
)

// span is a stretch of time [from, to] in the history's time base.
type span struct{ from, to int64 }

// overlaps reports whether s shares an instant with (a, b) other than an
// end: spans that touch do not overlap.
func (s span) overlaps(a, b int64) bool { return s.from < b && s.to > a }

// spans is a set of stretches, merged and sorted: what is true or false of
// a client over time (it could not reach the nodes; a fault was on its
// path).
type spans []span

// merged sorts ss and joins the stretches that overlap or touch; a
// stretch of no length holds no instant and is left out.
func merged(ss []span) spans {
	slices.SortFunc(ss, func(x, y span) int { return cmp.Compare(x.from, y.from) })
	var out spans
	for _, s := range ss {
		if s.to <= s.from {
			continue
		}
		if n := len(out); n > 0 && s.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// overlaps reports whether any stretch overlaps (a, b).
func (ss spans) overlaps(a, b int64) bool {
	// The first stretch that ends after a is the only one that can.
	i := sort.Search(len(ss), func(i int) bool { return ss[i].to > a })
	return i < len(ss) && ss[i].from < b
}

// covers reports whether one stretch holds all of (a, b).
func (ss spans) covers(a, b int64) bool {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].to >= b })
	return i < len(ss) && ss[i].from <= a
}

// lastEnd is the latest end of a stretch at or before t, or min when
// none ends by then.
func (ss spans) lastEnd(t, min int64) int64 {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].to > t })
	if i == 0 {
		return min
	}
	return ss[i-1].to
}

// at returns the stretch that holds t (from ≤ t < to), if any.
func (ss spans) at(t int64) (span, bool) {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].to > t })
	if i < len(ss) && ss[i].from <= t {
		return ss[i], true
	}
	return span{}, false
}

// claims are the stretches during which some operation may have kept a
// lock taken, each owned by the attempt it comes from, sorted by start,
// for the question an obligation asks: did a claim other than the
// attempt's own overlap (a, b)?
type claims struct {
	list []claim
	// best and second are, for each prefix of list, the claims with the
	// latest ends of two different owners.
	best, second []int
}

// claim is one stretch during which an operation may have kept the lock
// taken, and the attempt (acquire) it comes from.
type claim struct {
	span
	owner int
}

func newClaims(list []claim) claims {
	slices.SortFunc(list, func(x, y claim) int { return cmp.Compare(x.from, y.from) })
	c := claims{list: list, best: make([]int, len(list)), second: make([]int, len(list))}
	b, s := -1, -1
	for i, cl := range list {
		switch {
		case b < 0 || cl.to > list[b].to:
			if b >= 0 && list[b].owner != cl.owner {
				s = b
			}
			b = i
		case cl.owner != list[b].owner && (s < 0 || cl.to > list[s].to):
			s = i
		}
		c.best[i], c.second[i] = b, s
	}
	return c
}

// other returns a claim not owned by owner that overlaps (a, b).
func (c claims) other(owner int, a, b int64) (claim, bool) {
	// Claims that start before b: a prefix.
	n := sort.Search(len(c.list), func(i int) bool { return c.list[i].from >= b })
	if n == 0 {
		return claim{}, false
	}
	for _, i := range []int{c.best[n-1], c.second[n-1]} {
		if i >= 0 && c.list[i].owner != owner {
			if c.list[i].to > a {
				return c.list[i], true
			}
			return claim{}, false
		}
	}
	return claim{}, false
}

// lastEnd is the latest end, at or before t, of a claim not owned by
// owner; min when there is none.
func (c claims) lastEnd(owner int, t, min int64) int64 {
	out := min
	for _, cl := range c.list {
		if cl.from > t {
			break
		}
		if cl.owner != owner && cl.to <= t && cl.to > out {
			out = cl.to
		}
	}
	return out
}

// after returns the first stretch that begins after t.
func (ss spans) after(t int64) (span, bool) {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].from > t })
	if i < len(ss) {
		return ss[i], true
	}
	return span{}, false
}
