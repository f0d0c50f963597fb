package resource

import (
	"fmt"
	"sort"
	"strings"

	"splitbrain/checker/paired"
	"splitbrain/checker/search"
	"splitbrain/checker/verdict"
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

// section is one client's run of operations on one resource up to and
// including a write: the write is computed from the section's last read.
// A section follows the client, not its lease: a client that read under a
// lease and wrote after releasing it (or before acquiring the next) wrote
// what it computed from that read all the same, and the write counts as
// any other (a lease boundary between the read and the write must not turn
// a lost update into a blind write).
type section struct {
	ops []*resourceOp
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

type procKey struct{ process, key string }

// analysis is what the resource checks read of a history, with the notes
// they add.
type analysis struct {
	end     int64
	clients []string
	faults  []paired.FaultWindow
	ops     []*resourceOp // resource operations, in invoke order
	notes   []string
	// outside counts the writes made outside any lease of their client.
	outside int
	// late are the applied writes that no belief of their writer's lease
	// covered when they took effect (paired.History.OutsideLease).
	late []paired.OutsideWrite
}

// unguarded says, for an invalid resource's reason, which applied writes
// to rs took effect outside their writer's lease: the lock did not guard
// them, and a fencing storage turns such a write away only once a higher
// token has written, so the harm a check finds may be theirs rather than
// the later writer's it names (a holder stalled past its lease, its write
// landing before the next holder's first one). Empty when there are none.
func (a *analysis) unguarded(rs []*resource) string {
	keys := map[string]bool{}
	for _, r := range rs {
		keys[r.key] = true
	}
	var ws []paired.OutsideWrite
	for _, w := range a.late {
		if keys[w.Key] {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		return ""
	}
	first := ws[0]
	what := first.Text
	for _, op := range a.ops {
		if op.inv.Index == first.Index && op.write != nil {
			// The write as the checks name it, not its raw value.
			what = a.writeRef(op.write).Label()
			switch b := first.Belief; {
			case b == nil:
				what += fmt.Sprintf(", while %s held no lock", first.Client)
			case first.Late:
				what += fmt.Sprintf(", sent in %s's lease, which ended at %s (%s)", b.Client, paired.Seconds(b.End), paired.EndText(b.EndReason))
			default:
				what += fmt.Sprintf(", after %s's lease ended at %s (%s)", b.Client, paired.Seconds(b.End), paired.EndText(b.EndReason))
			}
			break
		}
	}
	return fmt.Sprintf("; %d applied write(s) took effect outside their writer's lease, where the lock did not guard them: %s",
		len(ws), what)
}

// resourceOp is one operation on the protected resource: an invoke and its
// completion, the lease it ran under, and what the checks make of it.
type resourceOp struct {
	inv  *history.Event // the invoke
	done *history.Event // the completion; nil while pending
	// lease is the belief of the lease the op ran under; nil for the
	// harness's initial writes and final reads, and for an operation
	// outside any lease.
	lease *paired.Belief
	// write is what the resource checks make of a write, transfer or
	// add (set by collectResources); nil for a read.
	write *writeOp
}

func (o *resourceOp) typ() history.Type {
	if o.done == nil {
		return ""
	}
	return o.done.Type
}

// collectResources groups the resource operations by key, and within a key
// by client into critical sections, each ending at a write. Every operation
// is checked, in a lease or not; one outside any lease is noted.
func collectResources(a *analysis) ([]*resource, []string) {
	byKey := map[string]*resource{}
	var order []string
	var notes []string
	// open is each client's section on a key that no write has closed
	// yet: the client continues under a new process after an unknown
	// outcome (history.ClientOf), its reads still its own.
	open := map[procKey]*section{}
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
		if ev.Process != history.ProcessInit && ev.Process != history.ProcessFinal {
			if op.lease == nil {
				notes = append(notes, fmt.Sprintf("%s by %s on %q at event %d ran outside any lease", ev.F, ev.Process, ev.Key, ev.Index))
				if ev.F != history.Read {
					a.outside++
				}
			}
			pk := procKey{history.ClientOf(ev.Process), ev.Key}
			sec = open[pk]
			if sec == nil {
				sec = &section{}
				open[pk] = sec
				r.sections = append(r.sections, sec)
			}
			if ev.F != history.Read {
				delete(open, pk)
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
		fmt.Fprintf(&b, "read at %s, ", paired.Seconds(w.ReadAt))
	}
	switch w.Outcome {
	case string(history.OK):
		fmt.Fprintf(&b, "written at %s", paired.Seconds(w.End))
	case string(history.Fail):
		fmt.Fprintf(&b, "rejected at %s", paired.Seconds(w.End))
	default:
		fmt.Fprintf(&b, "sent at %s, outcome unknown", paired.Seconds(w.Invoke))
	}
	b.WriteString(")")
	return b.String()
}

func (a *analysis) writeRef(w *writeOp) Write {
	out := Write{Client: w.ev.Process, Key: w.ev.Key, F: w.ev.F, Token: w.ev.Token, Seq: w.ack.Seq,
		ReadAt: -1, Invoke: w.ev.Time, End: a.end, Outcome: string(w.typ), Index: w.ev.Index}
	if w.typ == "" {
		out.Outcome = paired.OutcomePending
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

// Property names.
const (
	Counter = "counter"
	Bank    = "bank"
	Set     = "set"
	Fencing = "fencing"
)

// Results are where the resource checkers store what they found; nil where
// the history has no such resource.
type Results struct {
	Counter *CounterResult
	Bank    *BankResult
	Set     *SetResult
	Fencing *FencingResult
}

// Checkers are the resource checks, storing their results in out: the
// counter, the bank, the set and fencing, and last a checker that decides
// nothing and only tells what could not be checked. They group the
// resource operations once, when the first of them runs.
func Checkers(out *Results) []verdict.Checker {
	g := &grouping{}
	return []verdict.Checker{
		g.checker(kindCounter, func(cfg search.Config, a *analysis, rs []*resource) verdict.Property {
			res, window := checkCounter(a, rs, cfg)
			out.Counter = res
			return counterProperty(res, window, a.faults)
		}),
		g.checker(kindBank, func(cfg search.Config, a *analysis, rs []*resource) verdict.Property {
			res, window := checkBank(a, rs, cfg)
			out.Bank = res
			return bankProperty(res, window, a.faults)
		}),
		g.checker(kindSet, func(cfg search.Config, a *analysis, rs []*resource) verdict.Property {
			out.Set = checkSet(a, rs)
			return setProperty(out.Set)
		}),
		g.checker(kindAny, func(cfg search.Config, a *analysis, rs []*resource) verdict.Property {
			out.Fencing = checkFencing(a, rs)
			return fencingProperty(out.Fencing)
		}),
		verdict.Func(func(_ search.Config, h *paired.History) verdict.Property {
			g.collect(h)
			return verdict.Property{Notes: g.notes}
		}),
	}
}

// kindAny selects every checked resource.
const kindAny = ""

// grouping is the history's resources, grouped once for every resource
// checker.
type grouping struct {
	h       *paired.History
	a       *analysis
	byKind  map[string][]*resource
	checked []*resource
	// notes tell what could not be grouped or checked.
	notes []string
}

func (g *grouping) collect(h *paired.History) {
	if g.h == h {
		return
	}
	*g = grouping{h: h, byKind: map[string][]*resource{}}
	g.a = &analysis{end: h.End, clients: h.Clients, faults: h.Faults, late: h.OutsideLease}
	if len(h.Ops) == 0 {
		return
	}
	g.a.ops = make([]*resourceOp, len(h.Ops))
	for i, op := range h.Ops {
		g.a.ops[i] = &resourceOp{inv: op.Inv, done: op.Done, lease: op.Lease}
	}
	res, notes := collectResources(g.a)
	g.notes = notes
	for _, r := range res {
		if r.init == nil {
			// Not a resource the harness set up (its initial write would
			// be there, or the run failed and says so).
			g.notes = append(g.notes, fmt.Sprintf("%d operation(s) on resource %q not checked: no initial state was recorded (process %s)",
				len(r.writes)+len(r.reads), r.key, history.ProcessInit))
			continue
		}
		g.checked = append(g.checked, r)
		g.byKind[r.kind] = append(g.byKind[r.kind], r)
	}
}

// checker checks the resources of one kind (kindAny: every checked one)
// with check; a history without them has no such property.
func (g *grouping) checker(kind string, check func(search.Config, *analysis, []*resource) verdict.Property) verdict.Checker {
	return verdict.Func(func(cfg search.Config, h *paired.History) verdict.Property {
		g.collect(h)
		rs := g.byKind[kind]
		if kind == kindAny {
			rs = g.checked
		}
		if len(rs) == 0 {
			return verdict.Property{}
		}
		// The checks note what they meet as they go.
		before := len(g.a.notes)
		p := check(cfg, g.a, rs)
		p.Notes = append(p.Notes, g.a.notes[before:]...)
		return p
	})
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
func eachKey(rs []*resource, check func(*resource) (verdict.Verdict, string)) (v verdict.Verdict, unknown, valid []string) {
	var verdicts []verdict.Verdict
	for _, r := range rs {
		kv, why := check(r)
		verdicts = append(verdicts, kv)
		switch kv {
		case verdict.Unknown:
			unknown = append(unknown, why)
		case verdict.Valid:
			valid = append(valid, why)
		}
	}
	return verdictOf(verdicts...), unknown, valid
}

// verdictOf folds per-key verdicts: invalid beats unknown beats valid.
func verdictOf(vs ...verdict.Verdict) verdict.Verdict {
	out := verdict.Valid
	for _, v := range vs {
		switch {
		case v == verdict.Invalid:
			return verdict.Invalid
		case v != verdict.Valid:
			out = verdict.Unknown
		}
	}
	return out
}
