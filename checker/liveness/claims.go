package liveness

import (
	"math"

	"splitbrain/history"
)

// forever stands for a time past any history's end: a lock that a live
// holder keeps alive and never releases is taken for good.
const forever = math.MaxInt64 / 4

// attempt is one acquire: invoked, and completed or still pending when the
// history ended.
type attempt struct {
	id                   int
	key, process, client string
	inv, end             int64 // end: the completion, or the history's end
	invIdx, endIdx       int64 // endIdx: -1 while pending
	// outcome is the completion's type: ok, fail or info; "" pending.
	outcome history.Type
	err     string
	// remain: a refusal whose key may remain on some nodes until it
	// expires (its rollback got no answer there).
	remain bool
	lease  *lease // the lease an ok granted
}

// lease is what a granted acquire gave its client, and what the client
// did with it.
type lease struct {
	grant *attempt
	// lastOK is the latest OK of the acquire or of an extension.
	lastOK int64
	// unknownExt are the extensions of unknown outcome, [invoke, end].
	unknownExt []span
	// release is the first release of the lease; nil when none was
	// invoked.
	release *op
}

// op is an operation's invoke and completion (typ "" while pending).
type op struct {
	inv, end int64
	typ      history.Type
}

type leaseKey struct{ key, value string }

type clientKey struct{ client, key string }

// lockOps reads the acquires, extensions and releases of a history: its
// attempts, in invoke order, each granted one with its lease. Releases
// and extensions find their lease by its lock value (or, without one, as
// the client's latest grant on the key). end is the history's end.
func lockOps(events []history.Event, end int64) []*attempt {
	type pend struct {
		e   *history.Event
		att *attempt
	}
	// The attempts and leases are counted first and allocated at once:
	// a long history has hundreds of thousands of each, and allocating
	// them one by one (and growing out) was much of the check's garbage,
	// which near the memory limit costs a collection of the whole history
	// per few hundred MB. Only pointers to them are kept: were a count
	// short, append would move the rest to a new array and the pointers
	// taken before would still hold their own.
	nAtt, nLease := 0, 0
	for i := range events {
		if e := &events[i]; e.F == history.Acquire {
			switch e.Type {
			case history.Invoke:
				nAtt++
			case history.OK:
				nLease++
			}
		}
	}
	atts := make([]attempt, 0, nAtt)
	leases := make([]lease, 0, nLease)
	pending := map[string]pend{}
	byValue := make(map[leaseKey]*lease, nLease)
	latest := map[clientKey]*lease{}
	out := make([]*attempt, 0, nAtt)
	find := func(e *history.Event) *lease {
		if v := e.StringValue(); v != "" {
			if l := byValue[leaseKey{e.Key, v}]; l != nil {
				return l
			}
		}
		return latest[clientKey{history.ClientOf(e.Process), e.Key}]
	}
	for i := range events {
		e := &events[i]
		if e.F != history.Acquire && e.F != history.Extend && e.F != history.Release {
			continue
		}
		if e.Type == history.Invoke {
			p := pend{e: e}
			if e.F == history.Acquire {
				atts = append(atts, attempt{id: len(out), key: e.Key, process: e.Process, client: history.ClientOf(e.Process),
					inv: e.Time, end: end, invIdx: e.Index, endIdx: -1})
				p.att = &atts[len(atts)-1]
				out = append(out, p.att)
			}
			pending[e.Process] = p
			continue
		}
		p, ok := pending[e.Process]
		if !ok || p.e.F != e.F || (e.Key != "" && e.Key != p.e.Key) {
			// Not this operation's completion: the pairing's problem,
			// which keeps the history from being judged at all.
			continue
		}
		delete(pending, e.Process)
		switch e.F {
		case history.Acquire:
			a := p.att
			a.end, a.endIdx, a.outcome, a.err = e.Time, e.Index, e.Type, e.Err
			a.remain = e.Type == history.Fail && len(e.Nodes) > 0
			if e.Type != history.OK {
				continue
			}
			leases = append(leases, lease{grant: a, lastOK: e.Time})
			l := &leases[len(leases)-1]
			a.lease = l
			v := e.StringValue()
			if v == "" {
				v = p.e.StringValue()
			}
			if v != "" {
				byValue[leaseKey{a.key, v}] = l
			}
			latest[clientKey{a.client, a.key}] = l
		case history.Extend:
			l := find(p.e)
			switch {
			case l == nil:
			case e.Type == history.OK:
				l.lastOK = max(l.lastOK, e.Time)
			case e.Type == history.Info:
				l.unknownExt = append(l.unknownExt, span{p.e.Time, e.Time})
			}
		case history.Release:
			if l := find(p.e); l != nil && l.release == nil {
				l.release = &op{inv: p.e.Time, end: e.Time, typ: e.Type}
			}
		}
	}
	// Operations still pending when the history ended.
	for _, p := range pending {
		switch p.e.F {
		case history.Extend:
			if l := find(p.e); l != nil {
				l.unknownExt = append(l.unknownExt, span{p.e.Time, end})
			}
		case history.Release:
			if l := find(p.e); l != nil && l.release == nil {
				l.release = &op{inv: p.e.Time, end: end}
			}
		}
	}
	return out
}

// renewedUntil is when a lock its holder keeps alive in the background
// frees itself: expiry after the holder stopped renewing it — at stop (its
// release, of which it has no word that it freed the lock), or at the
// start of a stretch of noRenew as long as the expiry (cut off, held at
// its gate). A shorter stretch is bridged: the next renewal comes in
// time. from is the grant.
func renewedUntil(noRenew spans, from, stop, expiry int64) int64 {
	t := from
	for {
		if t >= stop {
			return stop + expiry
		}
		sp, in := noRenew.at(t)
		if !in {
			next, ok := noRenew.after(t)
			if !ok || next.from >= stop {
				return stop + expiry
			}
			t = next.from
			continue
		}
		if sp.to >= stop || sp.to-t >= expiry {
			return t + expiry
		}
		t = sp.to
	}
}
