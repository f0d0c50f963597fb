// Package liveness judges a lock's two liveness promises, the second and
// third of the three the Redlock page defines a distributed lock by
// (safety is package lease's):
//
//   - deadlock freedom: once the faults on a client's path to the lock
//     have healed, a client that tries gets a free lock — even if its
//     last holder crashed, was cut off or never released: such a lock
//     frees itself within its expiry (a TTL, a session or lease timeout).
//     An attempt refused past that bound, when nothing could have held
//     the lock, is a violation.
//   - fault tolerance: while a client reaches what the lock needs (a
//     majority of a quorum lock's nodes, a single instance's one node, a
//     quorum of an ensemble that reaches itself) and no clock fault is
//     active, its acquires of a free lock succeed, under the faults that
//     leave it that much.
//
// Both read the history alone: the lock's setup (the history's Setup
// event: its nodes, quorum, expiry and retry interval), the faults (which
// nodes were down, which links cut, whose clocks moved, which clients
// stopped; a stall of the harness holds every client's background
// renewals for its length, and a refusal in it is owed nothing) and the
// lock's operations. A lock is free
// when no operation may keep it taken: a grant until its release came
// back ok (from every node, for a lock of independent masters) or until
// it expired, an expiry after its holder's last word (its grant or
// extension; for a lock renewed in the background, after the holder
// stopped or was cut off); a
// refused acquire while it ran, and an expiry more when a node it needed
// was down or cut or the refusal names nodes where its key may remain
// (its rollback may not have reached them); an acquire or
// extension of unknown outcome an expiry after it — a claim that may not
// be, so an attempt that only it can explain is unknown, not valid. The
// retry interval is the slack: what frees itself at an expiry is free a
// retry interval later (the servers' ticks, a new leader). A client must
// have reached the nodes for the retry interval and its library's
// reconnect time before its attempt ended (after a heal it connects
// again), and an ensemble serves no one for as long after a member went
// down or was cut from another, or came back (it may be electing a
// leader).
//
// Each attempt that the lock promised to grant (free all along, and
// reachable from a retry interval before its end) is judged by one of
// the two, and so is each grant to a client that could reach the lock,
// free all along or not: a grant shows the lock was free when it came —
// a waiter handed the lock at a release (a queue's next in line) shows
// the lock live though its attempt began on a held lock. They are judged
// by one of the two: by deadlock freedom when no fault was on its client's path for
// the bound (expiry + retry) before its end, by fault tolerance when one
// was. Granted, it meets the promise; refused, it breaks it; of unknown
// outcome, it is unknown. A promise with no attempt to judge is unknown:
// the history cannot decide it (no client tried, or the faults never left
// the lock reachable).
//
// Availability figures come with them: the share of attempts granted,
// the longest stretch in which a client kept trying and nothing was
// granted, and the time from each heal to the next grant, set against the
// lock's expiry and bound.
package liveness

import (
	"fmt"
	"strings"

	"splitbrain/checker/paired"
	"splitbrain/checker/search"
	"splitbrain/checker/verdict"
	"splitbrain/history"
)

// Property names, as checker.Result.Properties lists them.
const (
	DeadlockFreedom = "deadlock-freedom"
	FaultTolerance  = "fault-tolerance"
)

// Result is the verdict of both promises.
type Result struct {
	// Setup is the lock's setup the history recorded; nil when it
	// recorded none (a history written before liveness was judged).
	Setup           *history.LockSetup `json:"setup,omitempty"`
	DeadlockFreedom Promise            `json:"deadlock_freedom"`
	FaultTolerance  Promise            `json:"fault_tolerance"`
}

// Promise is the verdict of one liveness promise.
type Promise struct {
	Verdict verdict.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
	// Judged counts the attempts the promise applied to: Met were
	// granted, Unknown had an unknown outcome (or only a claim of unknown
	// outcome explains their refusal), ViolationCount were refused.
	Judged         int `json:"judged"`
	Met            int `json:"met"`
	Unknown        int `json:"unknown"`
	ViolationCount int `json:"violation_count"`
	// Violations lists at most verdict.MaxViolations of them.
	Violations []Violation `json:"violations,omitempty"`
}

// Violation is an attempt the lock promised to grant and refused.
type Violation struct {
	Key string `json:"key"`
	// Client is the process that tried.
	Client      string `json:"client"`
	Invoke      int64  `json:"invoke"`
	End         int64  `json:"end"`
	InvokeIndex int64  `json:"invoke_index"`
	EndIndex    int64  `json:"end_index"`
	Err         string `json:"err,omitempty"`
	// From and To are the window of the violation: from when nothing
	// could hold the lock and the client could reach it, to the refusal.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Healed is when the last fault on the client's path healed before
	// the attempt, or -1 when none had (deadlock freedom's bound counts
	// from there).
	Healed int64  `json:"healed"`
	Text   string `json:"text"`
}

// Checkers are the two promises as checkers of the history events (which
// the paired.History they are given was read from); both are judged once,
// by the first to run, and stored in *out and *avail. A promise whose
// decide is set is part of the composed verdict (the play expects it);
// otherwise it is reported and decides nothing.
func Checkers(events []history.Event, decideDF, decideFT bool, out **Result, avail **Availability) []verdict.Checker {
	var res *Result
	get := func(h *paired.History) *Result {
		if res == nil {
			res, *avail = Judge(events, h)
			*out = res
		}
		return res
	}
	df := verdict.Func(func(_ search.Config, h *paired.History) verdict.Property {
		return get(h).DeadlockFreedom.property(DeadlockFreedom, decideDF)
	})
	ft := verdict.Func(func(_ search.Config, h *paired.History) verdict.Property {
		return get(h).FaultTolerance.property(FaultTolerance, decideFT)
	})
	return []verdict.Checker{df, ft}
}

func (p Promise) property(name string, decide bool) verdict.Property {
	numbers := verdict.Count(nil, p.Judged, "attempt judged", "attempts judged", true)
	numbers = verdict.Count(numbers, p.ViolationCount, "refused", "refused", false)
	numbers = verdict.Count(numbers, p.Unknown, "of unknown outcome", "of unknown outcome", false)
	return verdict.Property{Name: name, Verdict: p.Verdict, Reason: p.Reason, Decides: decide, Numbers: numbers}
}

// Incomplete makes r's valid promises unknown: the history is a prefix of
// its run, and what came after could have broken them.
func (r *Result) Incomplete(reason string) {
	for _, p := range []*Promise{&r.DeadlockFreedom, &r.FaultTolerance} {
		if p.Verdict == verdict.Valid {
			p.Verdict = verdict.Unknown
			p.Reason = "the history is incomplete (" + reason + "); its prefix shows no violation"
		}
	}
}

// Judge judges both promises over events, the history h was read from,
// and measures its availability.
func Judge(events []history.Event, h *paired.History) (*Result, *Availability) {
	setup, err := setupOf(events)
	atts := lockOps(events, h.End)
	res := &Result{Setup: setup}
	if setup == nil {
		why := "the history does not record the lock's setup (the nodes it needs, its expiry): " + err
		res.DeadlockFreedom = Promise{Verdict: verdict.Unknown, Reason: why}
		res.FaultTolerance = res.DeadlockFreedom
		return res, availability(atts, h, nil)
	}
	j := newJudge(*setup, atts, h, events)
	j.judge(res)
	return res, availability(atts, h, setup)
}

// setupOf finds the history's Setup event, or says why there is none to
// go by.
func setupOf(events []history.Event) (*history.LockSetup, string) {
	for i := range events {
		if events[i].F != history.Setup {
			continue
		}
		s, err := events[i].LockSetup()
		if err != nil {
			return nil, err.Error()
		}
		return &s, ""
	}
	return nil, "it has no setup event"
}

// judge holds what both promises are judged from.
type judge struct {
	setup history.LockSetup
	atts  []*attempt
	reach map[string]*reach
	// certain and possible are the claims on each key: stretches during
	// which an operation kept, or may have kept, the lock taken.
	certain, possible map[string]claims
}

func newJudge(s history.LockSetup, atts []*attempt, h *paired.History, events []history.Event) *judge {
	j := &judge{setup: s, atts: atts}
	seen := map[string]bool{}
	var clients []string
	add := func(c string) {
		if !seen[c] {
			seen[c] = true
			clients = append(clients, c)
		}
	}
	for _, c := range s.Clients {
		add(c)
	}
	for _, p := range h.Clients {
		add(history.ClientOf(p))
	}
	for _, a := range atts {
		add(a.client)
	}
	j.reach = reaches(s, append(faultsOf(h.Faults), stalls(events, clients)...), clients)
	certain, possible := map[string][]claim{}, map[string][]claim{}
	for _, a := range atts {
		c := claim{span: span{a.inv, a.end}, owner: a.id}
		switch a.outcome {
		case history.OK:
			c.to = j.freedAt(a.lease)
			certain[a.key] = append(certain[a.key], c)
			for _, u := range a.lease.unknownExt {
				possible[a.key] = append(possible[a.key], claim{span: span{u.from, u.to + s.Expiry + s.Retry}, owner: a.id})
			}
		case history.Fail:
			if a.remain || j.reach[a.client].missed(span{a.inv, a.end}, a.inv, a.end) {
				// The rollback got no answer from a node (the lock
				// said so), or a node the attempt reached was down
				// or cut at another instant: the rollback may have
				// left the key there.
				c.to += s.Expiry + s.Retry
			}
			certain[a.key] = append(certain[a.key], c)
		default:
			c.to += s.Expiry + s.Retry
			possible[a.key] = append(possible[a.key], c)
		}
	}
	j.certain, j.possible = map[string]claims{}, map[string]claims{}
	for k, cs := range certain {
		j.certain[k] = newClaims(cs)
	}
	for k, cs := range possible {
		j.possible[k] = newClaims(cs)
	}
	return j
}

// freedAt is when the lock a grant took is free again, whatever its
// holder believes: when its release came back ok, if the release reached
// what holds the lock (every node of a lock of independent masters that
// the acquire could have set its key on: a node it did not reach keeps
// the key until it expires), and a retry
// interval later for a lock that frees itself in the background; else a
// retry interval after it expires, an expiry after the holder's last
// word (the servers' slack).
func (j *judge) freedAt(l *lease) int64 {
	s, r := j.setup, j.reach[l.grant.client]
	var expires int64
	if s.Renewed {
		stop := int64(forever)
		if l.release != nil {
			stop = l.release.inv
		}
		expires = renewedUntil(r.noRenew, grantedBy(l.grant, r), stop, s.Expiry) + s.Retry
	} else {
		expires = l.lastOK + s.Expiry + s.Retry
	}
	rel := l.release
	if rel == nil || rel.typ != history.OK {
		return expires
	}
	masters := !s.Peers && s.Quorum < len(s.Nodes)
	if masters && r.missed(span{l.grant.inv, l.grant.end}, rel.inv, rel.end) {
		// A node that may have granted it was out of reach of the
		// release: its key lives on there.
		return expires
	}
	if s.AsyncRelease {
		return min(expires, rel.end+s.Retry)
	}
	return min(expires, rel.end)
}

// grantedBy is the latest instant at which a grant took effect, as far as
// the history tells: its completion, or, when the client was stopped at
// its after-acquire point while the acquire ran, that stop's start — the
// point is past the grant, and the acquire's ok is recorded only once the
// client resumes. A lock renewed in the background lapses an expiry into
// that stop: the holder renews nothing while stopped (a crashed holder's
// lock frees itself then, not an expiry after it came back).
func grantedBy(a *attempt, r *reach) int64 {
	at := a.end
	for _, h := range r.heldAfterGrant {
		if a.inv <= h && h <= a.end {
			at = min(at, h)
		}
	}
	return at
}

// judge judges every attempt and folds the verdicts into res.
func (j *judge) judge(res *Result) {
	s := j.setup
	bound := s.Bound()
	for _, a := range j.atts {
		r := j.reach[a.client]
		if r.cannot.overlaps(min(a.inv, a.end-s.Retry-s.Reconnect), a.end) {
			continue // the lock promised nothing
		}
		if a.outcome != history.OK && r.stalled.overlaps(min(a.inv, a.end-s.Retry-s.Reconnect), a.end) {
			continue // a refusal while the client could not run
		}
		if _, held := j.certain[a.key].other(a.id, a.inv, a.end); held && a.outcome != history.OK {
			// It was not free: a refusal says nothing. A grant does,
			// whenever it came: the lock was free then, or became free
			// while the client waited in its queue (v3lock, the
			// ZooKeeper recipes hand the lock to the next waiter), and
			// only such grants show those locks live.
			continue
		}
		p := &res.FaultTolerance
		if !r.path.overlaps(a.end-bound, a.end) {
			p = &res.DeadlockFreedom
		}
		p.Judged++
		_, maybe := j.possible[a.key].other(a.id, a.inv, a.end)
		switch {
		case a.outcome == history.OK:
			p.Met++
		case a.outcome == history.Fail && !maybe:
			p.ViolationCount++
			if len(p.Violations) < verdict.MaxViolations {
				p.Violations = append(p.Violations, j.violation(a, p == &res.DeadlockFreedom))
			}
		default:
			p.Unknown++
		}
	}
	res.DeadlockFreedom.fold(j.dfWords())
	res.FaultTolerance.fold(j.ftWords())
}

// violation explains a refused attempt: since when the lock was free and
// reachable, and for deadlock freedom since when no fault was on the
// client's path.
func (j *judge) violation(a *attempt, df bool) Violation {
	r := j.reach[a.client]
	free := max(j.certain[a.key].lastEnd(a.id, a.inv, 0), r.cannot.lastEnd(min(a.inv, a.end-j.setup.Retry-j.setup.Reconnect), 0))
	healed := r.path.lastEnd(a.end-j.setup.Bound(), -1)
	v := Violation{Key: a.key, Client: a.process, Invoke: a.inv, End: a.end, InvokeIndex: a.invIdx, EndIndex: a.endIdx,
		Err: a.err, From: free, To: a.end, Healed: healed}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s's acquire of %q (%s–%s) was refused though nothing could hold the lock and %s reached %s from %s on",
		a.process, a.key, paired.Seconds(a.inv), paired.Seconds(a.end), a.client, j.needs(), paired.Seconds(free))
	if df {
		if healed >= 0 {
			fmt.Fprintf(&sb, ", %s after the last fault on its path healed (%s), past the bound of %s", paired.Seconds(a.end-healed),
				paired.Seconds(healed), j.boundText())
		} else {
			fmt.Fprintf(&sb, ", with no fault on its path")
		}
	} else {
		fmt.Fprintf(&sb, ", under a fault on its path")
	}
	if a.err != "" {
		fmt.Fprintf(&sb, ": %s", shortErr(a.err))
	}
	v.Text = sb.String()
	return v
}

func shortErr(s string) string {
	if r := []rune(s); len(r) > 120 {
		return string(r[:117]) + "…"
	}
	return s
}

// needs says what a client must reach, in words.
func (j *judge) needs() string {
	s := j.setup
	var out string
	switch {
	case len(s.Nodes) == 1:
		out = s.Nodes[0]
	case s.Peers:
		out = fmt.Sprintf("a quorum of the ensemble that reached itself (%d of %d)", s.Quorum, len(s.Nodes))
	default:
		out = fmt.Sprintf("a majority of the nodes (%d of %d)", s.Quorum, len(s.Nodes))
	}
	if len(s.Replicas) > 0 {
		out += " and its replicas " + strings.Join(s.Replicas, ", ")
	}
	return out
}

func (j *judge) boundText() string {
	s := j.setup
	out := fmt.Sprintf("%s (expiry %s + retry %s", paired.Seconds(s.Bound()), paired.Seconds(s.Expiry), paired.Seconds(s.Retry))
	if s.Reconnect > 0 {
		out += " + reconnect " + paired.Seconds(s.Reconnect)
	}
	return out + ")"
}

// words are how a promise's verdict is told.
type words struct{ met, none string }

func (j *judge) dfWords() words {
	return words{
		met: "granted past the bound of " + j.boundText() + " after every fault on its client's path",
		none: "no client tried a lock that was free and that it could reach, past the bound of " + j.boundText() +
			" after the last fault on its path: nothing to judge",
	}
}

func (j *judge) ftWords() words {
	return words{
		met: "granted under a fault on its client's path, the client reaching " + j.needs() + " and no clock moved",
		none: "no client tried a lock that was free while a fault was on its path and it still reached " + j.needs() +
			": nothing to judge",
	}
}

// fold sets the promise's verdict and reason from its counts.
func (p *Promise) fold(w words) {
	switch {
	case p.ViolationCount > 0:
		p.Verdict = verdict.Invalid
		p.Reason = fmt.Sprintf("%d of %d attempt(s) on a free lock refused; the first: %s", p.ViolationCount, p.Judged, p.Violations[0].Text)
	case p.Unknown > 0:
		p.Verdict = verdict.Unknown
		p.Reason = fmt.Sprintf("%d of %d attempt(s) on a free lock had an unknown outcome, or a refusal that only an operation of unknown outcome explains",
			p.Unknown, p.Judged)
	case p.Met == 0:
		p.Verdict = verdict.Unknown
		p.Reason = w.none
	default:
		p.Verdict = verdict.Valid
		p.Reason = fmt.Sprintf("%d attempt(s) on a free lock (or handed it in a queue), each %s", p.Met, w.met)
	}
}
