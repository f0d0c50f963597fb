package resource

import (
	"github.com/anishathalye/porcupine"

	"splitbrain/history"
)

// What the counter and the bank share: each checks its critical sections as
// atomic read-then-write operations on a register (the counter's value,
// the bank's balances), applied in the storage's order of writes, with
// porcupine; each resource supplies only what its values are.

// csOp is what a critical section is to a register model.
type csOp uint8

const (
	// csRead: a read, or a section whose write was rejected, or the
	// register at the end of a piece.
	csRead csOp = iota
	// csRW: read, then wrote what it computed, atomically if the lock held.
	csRW
	// csMaybe: as csRW, the write's outcome unknown.
	csMaybe
	// csBlind: wrote without a read in its section.
	csBlind
	// csMaybeBlind: a blind write of unknown outcome.
	csMaybeBlind
	// csStart: the register at the start of a piece.
	csStart
)

// csState is a register's value and how many writes the storage had
// applied to it.
type csState[V comparable] struct {
	V V
	N int64
}

// csStep is the step of both registers. A read must see the register (a
// read-then-write, what it read); a write applies in the storage's order —
// the write with seq s is the s-th applied (seq 0: not known) — and one of
// unknown outcome was applied, taking the next place, or not. So a write
// of unknown outcome that took a known write's place leaves that one
// nowhere to go, and one that the seqs show landed between a section's
// read and write cannot be taken as not applied. start is the register a
// csStart sets, with seq the writes applied by then; write says whether
// the write fits the register at all.
func csStep[V comparable](st csState[V], op csOp, seq int64, start V, read func(V) bool, write func(V) (V, bool)) []interface{} {
	switch op {
	case csRead:
		if read(st.V) {
			return []interface{}{st}
		}
		return nil
	case csStart:
		return []interface{}{csState[V]{start, seq}}
	case csRW, csMaybe:
		if !read(st.V) {
			return nil
		}
	}
	v, ok := write(st.V)
	if !ok {
		return nil
	}
	applied := csState[V]{v, st.N + 1}
	switch {
	case op == csMaybe || op == csMaybeBlind:
		return []interface{}{st, applied}
	case seq != 0 && seq != st.N+1:
		return nil
	}
	return []interface{}{applied}
}

// csOps walks one resource's critical sections and hands add each
// operation its register check is made of: a read that no write used
// (csRead, write nil), or a write (f: the resource's kind of write) with
// the read it was computed from (read nil for a blind one), as csRW,
// csMaybe, csBlind or csMaybeBlind by its outcome; a rejected write leaves
// its read a csRead. usable says whether a read's or a write's value can
// be used: an unusable read is no read, an unusable write is passed over.
// An operation runs from its read's invoke (a blind write's own) to its
// write's completion, past the history's end for an unknown outcome (it
// may land any time).
func csOps(a *analysis, r *resource, f history.Func, usable func(*resourceOp) bool, add func(op csOp, read, write *resourceOp, call, ret int64)) {
	never := a.end + 1
	for _, sec := range r.sections {
		var read *resourceOp
		flush := func() {
			if read != nil {
				add(csRead, read, nil, read.inv.Time, read.done.Time)
			}
			read = nil
		}
		for _, op := range sec.ops {
			ev := op.inv
			typ := op.typ()
			switch {
			case ev.F == history.Read:
				if typ != history.OK {
					continue
				}
				flush()
				if usable(op) {
					read = op
				}
				continue
			case ev.F != f || !usable(op):
				continue
			}
			end := never
			if typ != "" && typ != history.Info {
				end = op.done.Time
			}
			call := ev.Time
			if read != nil {
				call = read.inv.Time
			}
			switch {
			case read == nil && typ == history.OK:
				add(csBlind, nil, op, call, end)
			case read == nil && typ != history.Fail:
				add(csMaybeBlind, nil, op, call, end)
			case read == nil:
			case typ == history.OK:
				add(csRW, read, op, call, end)
			case typ == history.Fail:
				// Rejected: the critical section only read.
				flush()
			default:
				add(csMaybe, read, op, call, end)
			}
			read = nil
		}
		flush()
	}
}

// replayable returns r's applied writes in the storage's order and the
// writes of unknown outcome, or ok false when an applied write has no seq:
// without the storage's order there is nothing to replay, and porcupine
// alone judges.
func (r *resource) replayable() (applied, unknown []*writeOp, ok bool) {
	applied = r.applied()
	for _, w := range applied {
		if w.ack.Seq == 0 {
			return nil, nil, false
		}
	}
	for _, w := range r.writes {
		if !w.applied && w.typ != history.Fail && w.ev.Process != history.ProcessInit {
			unknown = append(unknown, w)
		}
	}
	return applied, unknown, true
}

// landedIn finds the writes of unknown outcome that may fill a gap in the
// storage's order before a write that returned at done: those sent by
// then. agree says there is one, or several that wrote the same (same):
// then what landed is known, and taking the first of them for it changes
// nothing later gaps can hold (they come before later returns, so the
// others still fit them).
func landedIn(unknown []*writeOp, done int64, same func(x, y *writeOp) bool) (cands []int, agree bool) {
	for i, u := range unknown {
		if u.ev.Time <= done {
			cands = append(cands, i)
		}
	}
	agree = len(cands) > 0
	for _, i := range cands {
		if !same(unknown[i], unknown[cands[0]]) {
			agree = false
		}
	}
	return cands, agree
}

// holdsStale reports whether the piece p spans one of the stale writes of
// its key: the pieces to draw when a replay named them.
func holdsStale(p []porcupine.Operation, stale []Write) bool {
	if len(p) == 0 {
		return false
	}
	var key string
	switch in := p[0].Input.(type) {
	case CounterInput:
		key = in.Key
	case BankInput:
		key = in.Key
	}
	return spansWrite(p, func(yield func(Write) bool) {
		for _, w := range stale {
			if w.Key == key && !yield(w) {
				return
			}
		}
	})
}
