package checker

import (
	"fmt"
	"sort"
	"strings"

	"splitbrain/history"
)

// Kinds of protected resource, told apart by the value of the key's initial
// write (history/values.go).
const (
	kindCounter = "counter"
	kindBank    = "bank"
	kindSet     = "set"
)

// resource is everything that happened to one resource key.
type resource struct {
	key  string
	kind string
	// init is the harness's initial write; nil when none was applied.
	init     *writeOp
	sections []*section
	// finals are the ok reads of process "final", in order.
	finals []*resourceOp
	// writes are every write, transfer and add (the initial one included),
	// in invoke order.
	writes []*writeOp
	// reads are every ok read (final ones included), in invoke order.
	reads []*resourceOp
}

// section is the resource operations run under one lease (its root
// belief), or a process's run of operations outside any lease: in either,
// a write is computed from the section's read before it.
type section struct {
	lease *Belief // nil outside any lease
	ops   []*resourceOp
}

// writeOp is one write, transfer or add with what the checks need.
type writeOp struct {
	op   *resourceOp
	ev   *history.Event // the invoke
	read *resourceOp    // the ok read of its section it was computed from
	typ  history.Type   // completion type; "" while pending
	ack  history.Ack
	// applied: the storage applied it (ok, with a seq).
	applied bool
}

// collectResources groups the resource operations by key, and within a key
// by lease (critical sections). Every operation is checked, in a lease or
// not: a process's operations outside any lease form sections of their own
// (a run of them, up to its next operation under a lease), so a write made
// from a read outside a lease is judged as any other.
func collectResources(a *analysis) ([]*resource, []string) {
	byKey := map[string]*resource{}
	var order []string
	var notes []string
	bySection := map[*Belief]*section{}
	outside := map[procKey]*section{}
	lastRead := map[*section]*resourceOp{}
	for _, op := range a.ops {
		ev := op.inv
		r := byKey[ev.Key]
		if r == nil {
			r = &resource{key: ev.Key}
			byKey[ev.Key] = r
			order = append(order, ev.Key)
		}
		typ := op.typ()
		var sec *section
		pk := procKey{ev.Process, ev.Key}
		switch {
		case op.lease != nil:
			root := op.lease.root
			sec = bySection[root]
			if sec == nil {
				sec = &section{lease: root}
				bySection[root] = sec
				r.sections = append(r.sections, sec)
			}
			delete(outside, pk)
		case ev.Process != history.ProcessInit && ev.Process != history.ProcessFinal:
			notes = append(notes, fmt.Sprintf("%s by %s on %q at event %d ran outside any lease", ev.F, ev.Process, ev.Key, ev.Index))
			sec = outside[pk]
			if sec == nil {
				sec = &section{}
				outside[pk] = sec
				r.sections = append(r.sections, sec)
			}
		}
		if sec != nil {
			sec.ops = append(sec.ops, op)
		}
		if ev.F == history.Read {
			if typ == history.OK {
				r.reads = append(r.reads, op)
				if ev.Process == history.ProcessFinal {
					r.finals = append(r.finals, op)
				}
				if sec != nil {
					lastRead[sec] = op
				}
			}
			continue
		}
		w := &writeOp{op: op, ev: ev, typ: typ}
		op.write = w
		if sec != nil {
			w.read = lastRead[sec]
			delete(lastRead, sec)
		}
		if op.done != nil {
			done := op.done
			if len(done.Value) > 0 {
				if err := done.Decode(&w.ack); err != nil {
					notes = append(notes, err.Error())
				}
			}
			w.applied = typ == history.OK
			if w.applied && w.ack.Seq == 0 {
				notes = append(notes, fmt.Sprintf("event %d: an applied %s without the storage's seq", done.Index, ev.F))
			}
		}
		r.writes = append(r.writes, w)
		if ev.Process == history.ProcessInit && w.applied && r.init == nil {
			r.init = w
			r.kind = kindOf(ev)
		}
	}
	out := make([]*resource, 0, len(order))
	for _, k := range order {
		out = append(out, byKey[k])
	}
	return out, notes
}

// kindOf tells the resource's kind from its initial value.
func kindOf(init *history.Event) string {
	v := strings.TrimSpace(string(init.Value))
	switch {
	case strings.HasPrefix(v, "{"):
		return kindBank
	case strings.HasPrefix(v, "["):
		return kindSet
	}
	return kindCounter
}

// applied returns r's applied writes in the storage's order.
func (r *resource) applied() []*writeOp {
	var out []*writeOp
	for _, w := range r.writes {
		if w.applied {
			out = append(out, w)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ack.Seq < out[j].ack.Seq })
	return out
}

// lastFinal is the last final read, or nil.
func (r *resource) lastFinal() *resourceOp {
	if len(r.finals) == 0 {
		return nil
	}
	return r.finals[len(r.finals)-1]
}

// Write is one write to the resource as the checks report it.
type Write struct {
	Client string       `json:"client"`
	Key    string       `json:"key"`
	F      history.Func `json:"f"`
	// Value says what it wrote: "6", "12.50 a1→a3", "7".
	Value string `json:"value"`
	Token *int64 `json:"token,omitempty"`
	// Seq is its place among the writes the storage applied to the key.
	Seq int64 `json:"seq,omitempty"`
	// ReadAt is when the read it was computed from returned; -1 if none.
	ReadAt int64 `json:"read_at"`
	Invoke int64 `json:"invoke"`
	// End is its completion, or the history's end when pending.
	End int64 `json:"end"`
	// Outcome is ok (applied), fail (rejected), info or pending.
	Outcome string `json:"outcome"`
	Err     string `json:"err,omitempty"`
	// Index is the invoke's event index.
	Index int64 `json:"index"`
}

// Label describes the write in a sentence: "c1's write of 6 (token 3,
// read at 0.10s, written at 3.00s)".
func (w Write) Label() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s's %s of %s (", w.Client, w.F, w.Value)
	if w.Token != nil {
		fmt.Fprintf(&b, "token %d, ", *w.Token)
	}
	if w.ReadAt >= 0 {
		fmt.Fprintf(&b, "read at %s, ", Seconds(w.ReadAt))
	}
	switch w.Outcome {
	case string(history.OK):
		fmt.Fprintf(&b, "written at %s", Seconds(w.End))
	case string(history.Fail):
		fmt.Fprintf(&b, "rejected at %s", Seconds(w.End))
	default:
		fmt.Fprintf(&b, "sent at %s, outcome unknown", Seconds(w.Invoke))
	}
	b.WriteString(")")
	return b.String()
}

func (a *analysis) writeRef(w *writeOp) Write {
	out := Write{Client: w.ev.Process, Key: w.ev.Key, F: w.ev.F, Token: w.ev.Token, Seq: w.ack.Seq,
		ReadAt: -1, Invoke: w.ev.Time, End: a.end, Outcome: string(w.typ), Index: w.ev.Index}
	if w.typ == "" {
		out.Outcome = OutcomePending
	}
	if w.op.done != nil {
		done := w.op.done
		out.End, out.Err = done.Time, done.Err
	}
	if w.read != nil {
		out.ReadAt = w.read.done.Time
	}
	switch w.ev.F {
	case history.Transfer:
		var t history.TransferValue
		if w.ev.Decode(&t) == nil {
			out.Value = fmt.Sprintf("%s %s→%s", t.Amount, t.From, t.To)
		}
	default:
		out.Value = string(w.ev.Value)
	}
	return out
}

// resourceChecks bundles the resource checks' results.
type resourceChecks struct {
	counter *CounterResult
	bank    *BankResult
	set     *SetResult
	fencing *FencingResult
	// counterViz draws the counter's failing window, when it has one.
	counterViz func([]FaultWindow) *visualization
	// bankViz draws the bank's failing window, when it has one.
	bankViz func([]FaultWindow) *visualization
	notes   []string
}

// any reports whether a resource was checked.
func (rc resourceChecks) any() bool { return rc.counter != nil || rc.bank != nil || rc.set != nil }

func (rc resourceChecks) properties() []Property {
	var out []Property
	if rc.counter != nil {
		out = append(out, Property{PropCounter, rc.counter.Verdict, rc.counter.Reason, true})
	}
	if rc.bank != nil {
		out = append(out, Property{PropBank, rc.bank.Verdict, rc.bank.Reason, true})
	}
	if rc.set != nil {
		out = append(out, Property{PropSet, rc.set.Verdict, rc.set.Reason, true})
	}
	if rc.fencing != nil {
		out = append(out, Property{PropFencing, rc.fencing.Verdict, rc.fencing.Reason, rc.fencing.StorageFences})
	}
	return out
}

func checkResources(a *analysis, cfg *config) resourceChecks {
	var rc resourceChecks
	if len(a.ops) == 0 {
		return rc
	}
	res, notes := collectResources(a)
	rc.notes = notes
	byKind := map[string][]*resource{}
	var checked []*resource
	for _, r := range res {
		if r.init == nil {
			// Not a resource the harness set up (its initial write would
			// be there, or the run failed and says so).
			rc.notes = append(rc.notes, fmt.Sprintf("%d operation(s) on resource %q not checked: no initial state was recorded (process %s)",
				len(r.writes)+len(r.reads), r.key, history.ProcessInit))
			continue
		}
		checked = append(checked, r)
		byKind[r.kind] = append(byKind[r.kind], r)
	}
	if rs := byKind[kindCounter]; len(rs) > 0 {
		rc.counter, rc.counterViz = checkCounter(a, rs, cfg)
	}
	if rs := byKind[kindBank]; len(rs) > 0 {
		rc.bank, rc.bankViz = checkBank(a, rs, cfg)
	}
	if rs := byKind[kindSet]; len(rs) > 0 {
		rc.set = checkSet(a, rs)
	}
	rc.fencing = checkFencing(a, checked)
	return rc
}

// outcomes counts the key's writes (the initial one aside) by outcome.
func (r *resource) outcomes() (applied, rejected, unknown int) {
	for _, w := range r.writes {
		if w.ev.Process == history.ProcessInit {
			continue
		}
		switch w.typ {
		case history.OK:
			applied++
		case history.Fail:
			rejected++
		default:
			unknown++
		}
	}
	return applied, rejected, unknown
}

// eachKey checks every resource with check and folds the verdicts; it
// returns the reasons of the unknown and of the valid ones (an invalid one
// explains itself in its violations).
func eachKey(rs []*resource, check func(*resource) (Verdict, string)) (v Verdict, unknown, valid []string) {
	var verdicts []Verdict
	for _, r := range rs {
		kv, why := check(r)
		verdicts = append(verdicts, kv)
		switch kv {
		case Unknown:
			unknown = append(unknown, why)
		case Valid:
			valid = append(valid, why)
		}
	}
	return verdictOf(verdicts...), unknown, valid
}

// verdictOf folds per-key verdicts: invalid beats unknown beats valid.
func verdictOf(vs ...Verdict) Verdict {
	out := Valid
	for _, v := range vs {
		switch {
		case v == Invalid:
			return Invalid
		case v != Valid:
			out = Unknown
		}
	}
	return out
}
