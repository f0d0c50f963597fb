package resource

import (
	"fmt"

	"splitbrain/checker/paired"
	"splitbrain/checker/verdict"
	"splitbrain/history"
)

// FencingResult is the outcome of the fencing check: in the storage's order,
// every applied write carries a token above those of the writes of other
// leases before it (one lease may write more than once with its token).
type FencingResult struct {
	Verdict verdict.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
	// Accepted and Rejected count the writes with a token that the storage
	// applied and fenced off.
	Accepted int `json:"accepted"`
	Rejected int `json:"rejected"`
	// RejectedWrites lists the fenced-off writes (at most verdict.MaxViolations).
	RejectedWrites []Write `json:"rejected_writes,omitempty"`
	// Untokened counts applied writes without a token among tokened ones.
	Untokened  int                `json:"untokened,omitempty"`
	Violations []FencingViolation `json:"violations,omitempty"`
	// StorageFences says whether the storage checked the tokens: its
	// initial write says so, or it rejected a write. Only then does the
	// check decide the verdict; a storage that does not fence applies
	// tokened writes in any order, and the check then only tells whether
	// a fencing storage would have refused one of them.
	StorageFences bool `json:"storage_fences"`
}

// FencingViolation is an applied write whose token did not exceed that of
// an earlier applied write of another lease.
type FencingViolation struct {
	Key     string `json:"key"`
	Earlier Write  `json:"earlier"`
	Later   Write  `json:"later"`
	Text    string `json:"text"`
}

// checkFencing returns nil when no write carried a token: nothing was
// fenced, so there is nothing to check.
func checkFencing(a *analysis, rs []*resource) *FencingResult {
	res := &FencingResult{}
	tokened := false
	for _, r := range rs {
		var prev *writeOp
		for _, w := range r.applied() {
			if w == r.init {
				continue
			}
			if w.ev.Token == nil {
				res.Untokened++
				continue
			}
			tokened = true
			res.Accepted++
			if prev != nil && (*w.ev.Token < *prev.ev.Token || *w.ev.Token == *prev.ev.Token && !sameLease(w.op.lease, prev.op.lease)) {
				e, l := a.writeRef(prev), a.writeRef(w)
				if len(res.Violations) < verdict.MaxViolations {
					res.Violations = append(res.Violations, FencingViolation{Key: r.key, Earlier: e, Later: l,
						Text: fmt.Sprintf("the storage applied %s after %s (seq %d, then %d): a stale token was accepted",
							l.Label(), e.Label(), e.Seq, l.Seq)})
				}
			}
			if prev == nil || *w.ev.Token >= *prev.ev.Token {
				prev = w
			}
		}
		if r.init != nil && r.init.ev.Fencing {
			res.StorageFences = true
		}
		for _, w := range r.writes {
			if w.typ != history.Fail || w.ev.Token == nil {
				continue
			}
			tokened = true
			res.StorageFences = true
			res.Rejected++
			if len(res.RejectedWrites) < verdict.MaxViolations {
				res.RejectedWrites = append(res.RejectedWrites, a.writeRef(w))
			}
		}
	}
	if !tokened {
		return nil
	}
	switch {
	case len(res.Violations) > 0 && !res.StorageFences:
		// Out of order at a storage that does not check: the writes' own
		// harm, if any, is the resource checks' to find. The tokens went
		// backwards (a lock that lost its counter) or a stale writer came
		// late; a fencing storage would have refused the later write.
		res.Verdict = verdict.Invalid
		res.Reason = fmt.Sprintf("the storage does not fence, so this does not decide: %d write(s) applied out of token order, which a fencing storage would have refused: %s",
			len(res.Violations), res.Violations[0].Text)
	case len(res.Violations) > 0:
		res.Verdict = verdict.Invalid
		res.Reason = fmt.Sprintf("%d stale token(s) accepted: %s", len(res.Violations), res.Violations[0].Text)
	case !res.StorageFences:
		res.Verdict = verdict.Valid
		res.Reason = fmt.Sprintf("the storage does not fence; it applied %d tokened write(s) in increasing token order", res.Accepted)
	default:
		res.Verdict = verdict.Valid
		res.Reason = fmt.Sprintf("the storage accepted %d tokened write(s) in increasing token order and rejected %d stale one(s)",
			res.Accepted, res.Rejected)
	}
	if res.Untokened > 0 {
		a.notes = append(a.notes, fmt.Sprintf("%d applied write(s) carried no fencing token among tokened ones", res.Untokened))
	}
	return res
}

// sameLease reports whether two beliefs are of one lease: the same belief,
// a belief and the one its late extension began (the lease keeps its
// token), or beliefs of one client's lock value on one key.
func sameLease(a, b *paired.Belief) bool {
	return a == b || a != nil && b != nil &&
		(a.Root() != nil && a.Root() == b.Root() || a.Value != "" && a.Value == b.Value && a.Key == b.Key && a.Client == b.Client)
}

// fencingProperty decides only where the storage checked the tokens; there
// it guards the resource (Fenced), and the critical sections only explain.
// A history without tokens has no fencing property.
func fencingProperty(f *FencingResult) verdict.Property {
	if f == nil {
		return verdict.Property{}
	}
	p := verdict.Property{Name: Fencing, Verdict: f.Verdict, Reason: f.Reason, Decides: f.StorageFences, Fenced: f.StorageFences}
	p.Numbers = verdict.Count(nil, len(f.Violations), "token regression", "token regressions", true)
	p.Numbers = verdict.Count(p.Numbers, f.Rejected, "rejected write", "rejected writes", true)
	p.Numbers = verdict.Count(p.Numbers, f.Accepted, "accepted write", "accepted writes", false)
	p.Numbers = verdict.Count(p.Numbers, f.Untokened, "write without a token", "writes without a token", f.Untokened > 0)
	return p
}
