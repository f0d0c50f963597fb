package lease

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"splitbrain/checker/paired"
	"splitbrain/checker/search"
	"splitbrain/checker/verdict"
)

// intervalCheck is the outcome of one interval property with what its
// visualization needs.
type intervalCheck struct {
	res     IntervalResult
	cs      bool // P2
	ops     []porcupine.Operation
	outcome porcupine.CheckResult
	keys    []paired.KeyInfo
	faults  []paired.FaultWindow
	timeout time.Duration
}

// checkIntervals runs P1 (cs false) or P2 (cs true). reuse is P1's check
// when P2's intervals are the same: its operations and porcupine's outcome
// are taken over, so the search is not repeated.
func checkIntervals(cfg search.Config, keys []paired.KeyInfo, clients []string, faults []paired.FaultWindow, cs bool, reuse *intervalCheck) intervalCheck {
	c := intervalCheck{cs: cs, keys: keys, faults: faults, timeout: cfg.Timeout}
	if reuse != nil {
		c.ops = reuse.ops
	} else {
		c.ops = operations(keys, clients, cs)
	}
	c.res.Ops = len(c.ops)
	if len(c.ops) == 0 {
		c.res.Verdict = verdict.Unknown
		switch {
		case countBeliefs(keys) > 0:
			c.res.Reason = "every lease granted had lapsed before its client saw the grant, so mutual exclusion was never tested"
		case countAttempts(keys) == 0:
			c.res.Reason = "no operations recorded"
		default:
			c.res.Reason = "no acquire succeeded, so mutual exclusion was never tested"
		}
		return c
	}
	if reuse != nil {
		c.outcome = reuse.outcome
	} else {
		c.outcome, _ = cfg.Run(MutexModel(), searched(c.ops), cfg.Timeout)
	}
	all, count := overlaps(keys, faults, cs)
	c.res.ViolationCount = count
	c.res.Violations = all

	what := "mutual exclusion violated"
	if cs {
		what = "critical sections overlapped"
	}
	switch {
	case c.outcome == porcupine.Illegal && len(all) > 0:
		c.res.Verdict = verdict.Invalid
		c.res.Reason = fmt.Sprintf("%s: %d overlapping %s", what, c.res.ViolationCount, intervalNoun(cs))
	case c.outcome == porcupine.Illegal:
		c.res.Verdict = verdict.Invalid
		c.res.Reason = what + ": porcupine found no order of the acquires and expiries " +
			"in which one client at a time held the lock, though no two belief intervals overlap by more than an instant"
	case len(all) > 0:
		// Two overlapping intervals are a counterexample on their own:
		// whichever acquire took effect first, the other took effect
		// before it ended. That holds whatever porcupine said.
		c.res.Verdict = verdict.Invalid
		c.res.Reason = fmt.Sprintf("%s: %d overlapping %s (porcupine: %s)",
			what, c.res.ViolationCount, intervalNoun(cs), strings.ToLower(string(c.outcome)))
	case c.outcome == porcupine.Unknown:
		c.res.Verdict = verdict.Unknown
		c.res.Reason = fmt.Sprintf("porcupine did not finish within %s", cfg.Timeout)
	case cs:
		c.res.Verdict = verdict.Valid
		c.res.Reason = "no two critical sections on one key overlapped"
	default:
		c.res.Verdict = verdict.Valid
		c.res.Reason = fmt.Sprintf("%d successful acquire(s) on %d key(s): no two clients believed they held the same lock at once",
			countBeliefs(keys), len(keys))
	}
	return c
}

func intervalNoun(cs bool) string {
	if cs {
		return "critical section(s)"
	}
	return "belief interval(s)"
}

// sameIntervals reports whether every critical section ended with its
// belief and P1 judges every belief, so P2's operations equal P1's.
func sameIntervals(keys []paired.KeyInfo) bool {
	for _, k := range keys {
		for _, b := range k.Beliefs {
			if b.CSEnd != b.End || b.CSEndReason != b.EndReason || holds(b, true) != holds(b, false) {
				return false
			}
		}
	}
	return true
}

// end is where an interval of the property ends, and why.
func end(b paired.Belief, cs bool) (int64, string) {
	if cs {
		return b.CSEnd, b.CSEndReason
	}
	return b.End, b.EndReason
}

// holds is the one rule for which intervals a property judges, used alike
// by the sweep (overlaps), porcupine's operations and the visualization: a
// grant whose validity had ended by the time its client saw it (a pause
// after the validity check, or the naive variant, which skips it) carries
// no belief for P1 — the lock promised nothing — while P2 still judges
// what the client then did with it.
func holds(b paired.Belief, cs bool) bool { return cs || !lapsedAtGrant(b) }

// opMeta describes an operation in the visualization.
type opMeta struct {
	client   string
	from, to int64 // event indexes (acquire) or -1
	reason   string
}

func (m opMeta) String() string {
	if m.reason != "" {
		return fmt.Sprintf("%s: belief ended (%s)", m.client, m.reason)
	}
	return fmt.Sprintf("%s: events %d→%d", m.client, m.from, m.to)
}

// operations builds the porcupine history from belief intervals. Inputs are
// boxed once per client and key, and metadata is left for the failing
// window (withMeta): a long history has millions of operations.
func operations(keys []paired.KeyInfo, clients []string, cs bool) []porcupine.Operation {
	ids := make(map[string]int, len(clients))
	for i, c := range clients {
		ids[c] = i
	}
	n := 0
	for _, k := range keys {
		n += 2 * len(k.Beliefs)
	}
	ops := make([]porcupine.Operation, 0, n)
	for _, k := range keys {
		inputs := map[string]*[2]interface{}{}
		for _, b := range k.Beliefs {
			if !holds(b, cs) {
				continue
			}
			in := inputs[b.Client]
			if in == nil {
				in = &[2]interface{}{
					MutexInput{Op: OpAcquire, Client: b.Client, Key: b.Key},
					MutexInput{Op: OpExpire, Client: b.Client, Key: b.Key},
				}
				inputs[b.Client] = in
			}
			ops = append(ops, porcupine.Operation{ClientId: ids[b.Client], Input: in[0], Call: b.Invoke, Return: b.Start})
			at, reason := end(b, cs)
			if reason == paired.EndOpen {
				// Held to the end of the history: no expiry to check.
				continue
			}
			ops = append(ops, porcupine.Operation{ClientId: ids[b.Client], Input: in[1], Call: at, Return: at})
		}
	}
	return ops
}

// withMeta describes the operations of a window on keys in, between from
// and to, from the beliefs they came from.
func withMeta(ops []porcupine.Operation, keys []paired.KeyInfo, in map[string]bool, from, to int64, cs bool) {
	type at struct {
		client string
		time   int64
		op     MutexOp
	}
	meta := map[at]opMeta{}
	for _, k := range keys {
		if !in[k.Key] {
			continue
		}
		for _, b := range k.Beliefs {
			if b.Start < from || b.Invoke > to || !holds(b, cs) {
				continue
			}
			meta[at{b.Client, b.Start, OpAcquire}] = opMeta{client: b.Client, from: b.InvokeIndex, to: b.OKIndex}
			t, reason := end(b, cs)
			meta[at{b.Client, t, OpExpire}] = opMeta{client: b.Client, from: -1, to: -1, reason: reason}
		}
	}
	for i := range ops {
		op := inputOf(ops[i])
		if m, ok := meta[at{op.Client, ops[i].Return, op.Op}]; ok {
			ops[i].Metadata = m
		}
	}
}

// overlaps finds every pair of intervals of different clients on one key
// that overlap for more than an instant, or where one is an instant strictly
// inside the other, and explains the first verdict.MaxViolations of them. Touching
// intervals do not count: porcupine's intervals are closed, so an acquire
// may take effect at the very instant of the previous holder's expiry.
func overlaps(keys []paired.KeyInfo, faults []paired.FaultWindow, cs bool) ([]Violation, int) {
	type pair struct {
		key      int
		x, y     int
		from, to int64
	}
	var pairs []pair
	for ki, k := range keys {
		bs := k.Beliefs // sorted by Start
		for i := range bs {
			for j := i + 1; j < len(bs) && bs[j].Start <= intervalEnd(bs[i], cs); j++ {
				x, y := bs[i], bs[j]
				if x.Client == y.Client || !holds(x, cs) || !holds(y, cs) {
					continue
				}
				from, to := max(x.Start, y.Start), min(intervalEnd(x, cs), intervalEnd(y, cs))
				if !(from < to || (from == to && (strictlyInside(from, x, cs) || strictlyInside(from, y, cs)))) {
					continue
				}
				pairs = append(pairs, pair{ki, i, j, from, to})
			}
		}
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return cmp.Compare(a.from, b.from) })
	out := make([]Violation, 0, min(len(pairs), verdict.MaxViolations))
	for _, p := range pairs[:min(len(pairs), verdict.MaxViolations)] {
		k := keys[p.key]
		out = append(out, violation(k.Key, k.Beliefs[p.x], k.Beliefs[p.y], p.from, p.to, faults, cs))
	}
	return out, len(pairs)
}

// lapsedAtGrant reports whether b's deadline had passed by the time its
// client saw the grant: the validity ends at the deadline, so a deadline at
// the very instant of the OK has passed too.
func lapsedAtGrant(b paired.Belief) bool { return b.Deadline != nil && *b.Deadline <= b.Start }

func strictlyInside(t int64, b paired.Belief, cs bool) bool {
	return b.Start < t && t < intervalEnd(b, cs)
}

// intervalEnd is the interval's end, except that an open one (no deadline,
// no release) never ended: its end is only where the history stops.
func intervalEnd(b paired.Belief, cs bool) int64 {
	at, reason := end(b, cs)
	if reason == paired.EndOpen {
		return math.MaxInt64
	}
	return at
}

func violation(key string, x, y paired.Belief, from, to int64, faults []paired.FaultWindow, cs bool) Violation {
	v := Violation{Key: key, Clients: [2]string{x.Client, y.Client}, From: from, To: to}
	var labels []string
	v.Faults, labels = paired.FaultsDuring(faults, min(x.Invoke, y.Invoke), to)
	var b strings.Builder
	if cs {
		fmt.Fprintf(&b, "%s and %s were both in their critical sections on %q from %s to %s (%s)",
			x.Client, y.Client, key, paired.Seconds(from), paired.Seconds(to), paired.Seconds(to-from))
		for _, z := range []paired.Belief{x, y} {
			if z.CSEnd > z.End && z.EndReason == paired.EndDeadline {
				fmt.Fprintf(&b, "; %s's critical section ran %s past its validity deadline (%s)",
					z.Client, paired.Seconds(z.CSEnd-z.End), paired.Seconds(z.End))
			}
		}
	} else {
		fmt.Fprintf(&b, "%s and %s both believed they held lock %q from %s to %s (%s)",
			x.Client, y.Client, key, paired.Seconds(from), paired.Seconds(to), paired.Seconds(to-from))
	}
	if len(labels) > 0 {
		b.WriteString("; active faults: " + strings.Join(labels, "; "))
	} else {
		b.WriteString("; no fault was active")
	}
	v.Text = b.String()
	return v
}

func countAttempts(keys []paired.KeyInfo) int {
	n := 0
	for _, k := range keys {
		n += len(k.Attempts)
	}
	return n
}

func countBeliefs(keys []paired.KeyInfo) int {
	n := 0
	for _, k := range keys {
		n += len(k.Beliefs)
	}
	return n
}

// window picks the pieces porcupine rejects (or, when porcupine did not
// decide, those holding a violation) and renumbers their clients densely so
// the visualization has no empty lanes.
func (c intervalCheck) window() *search.Window {
	model := MutexModel()
	illegal := c.outcome == porcupine.Illegal
	pieces := mutexPieces(append([]porcupine.Operation(nil), c.ops...))
	var picked []porcupine.Operation
	for _, part := range pieces {
		if len(picked) > search.MaxWindowOps {
			break
		}
		if holdsViolation(part, c.res.Violations) {
			picked = append(picked, part...)
		}
	}
	if len(picked) == 0 && illegal {
		// Porcupine rejected the history though no two intervals
		// overlap: re-check each piece (small after the quiescent split)
		// to find the failing one.
		for _, part := range pieces {
			if len(picked) > search.MaxWindowOps {
				break
			}
			if porcupine.CheckOperationsTimeout(model, part, c.timeout) == porcupine.Illegal {
				picked = append(picked, part...)
			}
		}
	}
	if len(picked) == 0 {
		return nil
	}
	from, to := picked[0].Call, picked[0].Return
	dense := map[string]int{}
	keys := map[string]bool{}
	var names []string
	for _, op := range picked {
		from, to = min(from, op.Call), max(to, op.Return)
		keys[inputOf(op).Key] = true
		cl := inputOf(op).Client
		if _, ok := dense[cl]; !ok {
			dense[cl] = 0
			names = append(names, cl)
		}
	}
	paired.SortNatural(names)
	for i, cl := range names {
		dense[cl] = i
	}
	for i := range picked {
		picked[i].ClientId = dense[inputOf(picked[i]).Client]
	}
	withMeta(picked, c.keys, keys, from, to, c.cs)

	anns := search.FaultAnnotations(c.faults, from, to)
	for _, k := range c.keys {
		if !keys[k.Key] {
			continue
		}
		for _, at := range k.Attempts {
			if at.End < from || at.Invoke > to {
				continue
			}
			id, ok := dense[at.Client]
			if !ok {
				// A client that only failed in this window still gets
				// a lane: its failures are part of the story.
				id = len(dense)
				dense[at.Client] = id
			}
			anns = append(anns, porcupine.Annotation{
				ClientId:        id,
				Start:           max(at.Invoke, from),
				End:             min(at.End, to),
				Description:     fmt.Sprintf("%s acquire %q: %s", at.Client, at.Key, at.Outcome),
				Details:         at.Err,
				BackgroundColor: "#e5e5e5",
			})
		}
	}
	return &search.Window{Model: model, Ops: picked, Annotations: anns, Timeout: c.timeout}
}

func holdsViolation(part []porcupine.Operation, vs []Violation) bool {
	if len(part) == 0 {
		return false
	}
	key := inputOf(part[0]).Key
	from, to := part[0].Call, part[0].Return
	for _, op := range part {
		from, to = min(from, op.Call), max(to, op.Return)
	}
	for _, v := range vs {
		if v.Key == key && v.From <= to && v.To >= from {
			return true
		}
	}
	return false
}

func inputOf(op porcupine.Operation) MutexInput {
	in, _ := op.Input.(MutexInput)
	return in
}
