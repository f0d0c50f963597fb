package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"splitbrain/checker"
	"splitbrain/history"
)

// op is one client operation of a history: its invoke and, unless it was
// still pending when the history ended, its completion.
//
// inv and end point into the history (a long history has millions of
// operations: copies of both events would double its size); end points to
// a zero event while the operation is pending.
type op struct {
	inv  *history.Event
	end  *history.Event
	done bool
}

// noEvent is the completion of a pending operation.
var noEvent history.Event

// pairOps pairs each client's invokes with their completions, in invoke
// order. Nemesis events are faults, not operations, and are left out.
func pairOps(events []history.Event) []op {
	pending := map[string]int{}
	out := make([]op, 0, len(events)/2)
	for i := range events {
		e := &events[i]
		if e.F == history.Nemesis || e.Process == history.ProcessNemesis {
			continue
		}
		if e.Type == history.Invoke {
			pending[e.Process] = len(out)
			out = append(out, op{inv: e, end: &noEvent})
			continue
		}
		i, ok := pending[e.Process]
		if !ok {
			continue
		}
		delete(pending, e.Process)
		out[i].end, out[i].done = e, true
	}
	return out
}

// isResource reports whether f acts on the protected resource rather than
// on the lock.
func isResource(f history.Func) bool {
	return f == history.Read || isWrite(f)
}

// isWrite reports whether f changes the protected resource.
func isWrite(f history.Func) bool {
	return f == history.Write || f == history.Transfer || f == history.Add
}

// resourceOp is an operation on the protected resource with what the report
// makes of it.
type resourceOp struct {
	op
	// outcome is "ok", "fail" ("rejected" for a write), "info" or
	// "pending".
	outcome string
	// finding is a sentence when the op shows something wrong (a write
	// outside the writer's lease, a stale token accepted) or a fence that
	// worked (a rejected write); "" otherwise.
	finding string
	// bad marks a finding that is a problem, not a fence that held.
	bad bool
}

// at is when the op completed (or, pending, when it was invoked).
func (o resourceOp) at() int64 {
	if o.done {
		return o.end.Time
	}
	return o.inv.Time
}

// resourceOps picks the resource operations out of ops and judges each
// write against the writer's belief intervals and the tokens the storage
// had accepted before. It works from history events alone, so it renders
// whatever workload recorded them.
func resourceOps(ops []op, res checker.Result) []resourceOp {
	// A write that names its lease (history.Event.Lease) is judged against
	// that lease's beliefs, whatever process the client wrote as; one
	// that does not, against its process's.
	type lease struct{ key, value string }
	beliefs := map[string]*clientBeliefs{}
	byLease := map[lease]*clientBeliefs{}
	add := func(cb *clientBeliefs, b checker.Belief) *clientBeliefs {
		if cb == nil {
			cb = &clientBeliefs{}
		}
		cb.bs = append(cb.bs, b)
		return cb
	}
	for _, k := range res.Keys {
		for _, b := range k.Beliefs {
			beliefs[b.Client] = add(beliefs[b.Client], b)
			if b.Value != "" {
				byLease[lease{b.Key, b.Value}] = add(byLease[lease{b.Key, b.Value}], b)
			}
		}
	}
	for _, cb := range beliefs {
		cb.index()
	}
	for _, cb := range byLease {
		cb.index()
	}
	var out []resourceOp
	for _, o := range ops {
		if !isResource(o.inv.F) {
			continue
		}
		r := resourceOp{op: o, outcome: string(o.end.Type)}
		if !o.done {
			r.outcome = checker.OutcomePending
		} else if o.end.Type == history.Fail && isWrite(o.inv.F) {
			r.outcome = "rejected"
		}
		out = append(out, r)
	}
	// Tokens are the checker's to judge, in the storage's order: the
	// report shows its findings, write by write, never a second opinion.
	stale := map[int64]string{}
	if f := res.Fencing; f != nil {
		for _, v := range f.Violations {
			stale[v.Later.Index] = v.Text
		}
	}
	for i := range out {
		r := &out[i]
		if !isWrite(r.inv.F) {
			continue
		}
		switch r.outcome {
		case "rejected":
			r.finding = fmt.Sprintf("the storage rejected %s%s", describeOp(r.op), errSuffix(r.end.Err))
			continue
		case "ok":
		default:
			continue
		}
		if text, ok := stale[r.inv.Index]; ok {
			r.finding, r.bad = text, true
			continue
		}
		if r.inv.Process == history.ProcessInit || r.inv.Process == history.ProcessFinal {
			// The harness's own set-up writes and final reads need no lock.
			continue
		}
		cb := beliefs[r.inv.Process]
		if r.inv.Lease != "" {
			cb = byLease[lease{r.inv.Key, r.inv.Lease}]
		}
		if cb == nil {
			cb = &clientBeliefs{}
		}
		if s := cb.outsideLease(r.op); s != "" {
			r.finding, r.bad = s, true
		}
	}
	return out
}

// clientBeliefs are one client's belief intervals, sorted by start, with
// the running maximum of their ends so a lookup need not scan them all.
type clientBeliefs struct {
	bs []checker.Belief
	// maxEnd[i] is the index of the belief with the latest end among
	// bs[:i+1] (an open belief counts as ending last).
	maxEnd []int
}

func (c *clientBeliefs) index() {
	sort.SliceStable(c.bs, func(i, j int) bool { return c.bs[i].Start < c.bs[j].Start })
	c.maxEnd = make([]int, len(c.bs))
	for i := range c.bs {
		c.maxEnd[i] = i
		if i > 0 && !laterEnd(c.bs[i], c.bs[c.maxEnd[i-1]]) {
			c.maxEnd[i] = c.maxEnd[i-1]
		}
	}
}

func laterEnd(a, b checker.Belief) bool {
	if b.EndReason == checker.EndOpen {
		return false
	}
	return a.EndReason == checker.EndOpen || a.End > b.End
}

func coversTime(b checker.Belief, t int64) bool {
	return b.Start <= t && (t <= b.End || b.EndReason == checker.EndOpen)
}

// covering finds a belief that covers t.
func (c *clientBeliefs) covering(t int64) (checker.Belief, bool) {
	j := sort.Search(len(c.bs), func(i int) bool { return c.bs[i].Start > t }) - 1
	for ; j >= 0; j-- {
		if !coversTime(c.bs[c.maxEnd[j]], t) {
			// No belief starting at or before j lasts until t.
			return checker.Belief{}, false
		}
		if coversTime(c.bs[j], t) {
			return c.bs[j], true
		}
	}
	return checker.Belief{}, false
}

// outsideLease says how a write that took effect relates to its client's
// belief intervals: "" when a belief covered its completion.
func (c *clientBeliefs) outsideLease(o op) string {
	if _, ok := c.covering(o.end.Time); ok {
		return ""
	}
	if b, ok := c.covering(o.inv.Time); ok {
		return fmt.Sprintf("%s was sent at %s while %s held %q, but took effect only by %s, after that belief ended at %s (%s)",
			describeOp(o), checker.Seconds(o.inv.Time), b.Client, b.Key, checker.Seconds(o.end.Time), checker.Seconds(b.End), endText(b.EndReason))
	}
	// Nothing covers the invoke, so every belief that started by then had
	// ended: the latest end among them is the lease the client last held.
	j := sort.Search(len(c.bs), func(i int) bool { return c.bs[i].Start > o.inv.Time }) - 1
	if j < 0 {
		return fmt.Sprintf("%s took effect at %s although %s held no lock", describeOp(o), checker.Seconds(o.end.Time), o.inv.Process)
	}
	last := c.bs[c.maxEnd[j]]
	return fmt.Sprintf("%s took effect at %s although %s's belief in %q had ended at %s (%s)",
		describeOp(o), checker.Seconds(o.end.Time), last.Client, last.Key, checker.Seconds(last.End), endText(last.EndReason))
}

func token(o op) *int64 {
	if o.done && o.end.Token != nil {
		return o.end.Token
	}
	return o.inv.Token
}

func errSuffix(err string) string {
	if err == "" {
		return ""
	}
	line, _, _ := strings.Cut(err, "\n")
	return ": " + line
}

// describeOp names an op and its argument in words, e.g.
// `c1's write of 5 to "counter" with token 6`.
func describeOp(o op) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s's %s", o.inv.Process, o.inv.F)
	if v := shortValue(o.inv.Value); v != "" {
		fmt.Fprintf(&sb, " of %s", v)
	}
	if o.inv.Key != "" {
		prep := " to "
		if o.inv.F == history.Read {
			prep = " of "
		}
		fmt.Fprintf(&sb, "%s%q", prep, o.inv.Key)
	}
	if t := token(o); t != nil {
		fmt.Fprintf(&sb, " with token %d", *t)
	}
	return sb.String()
}

// opSentence says what one resource op did, for the violation explanation.
func opSentence(r resourceOp) string {
	o := r.op
	when := checker.Seconds(o.inv.Time)
	if o.done {
		when += "–" + checker.Seconds(o.end.Time)
	}
	var s string
	switch {
	case r.outcome == "ok" && o.inv.F == history.Read:
		s = fmt.Sprintf("%s read %q: %s", o.inv.Process, o.inv.Key, orNothing(shortValue(o.end.Value)))
	case r.outcome == "ok":
		s = describeOp(o) + ": ok"
	case r.outcome == "rejected":
		s = describeOp(o) + ": rejected" + errSuffix(o.end.Err)
	case r.outcome == "info":
		s = describeOp(o) + ": outcome unknown" + errSuffix(o.end.Err)
	case r.outcome == checker.OutcomePending:
		s = describeOp(o) + ": never completed"
	default:
		s = describeOp(o) + ": " + r.outcome + errSuffix(o.end.Err)
	}
	return s + " (" + when + ")"
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// shortValue renders a JSON value compactly for a sentence, cut to a
// readable length (the tooltip and history.jsonl have it whole).
func shortValue(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	s := buf.String()
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "…"
	}
	return s
}

// maxOpSentences bounds the resource ops listed under one violation.
const maxOpSentences = 12

// resourceDuring says what the given clients did to the resource between
// from and to, findings first.
func resourceDuring(ops []resourceOp, clients []string, from, to int64) []string {
	want := map[string]bool{}
	for _, c := range clients {
		want[c] = true
	}
	var findings, plain []string
	for _, r := range ops {
		if !want[r.inv.Process] || r.inv.Time > to || r.at() < from {
			continue
		}
		if r.finding != "" {
			findings = append(findings, r.finding)
		} else {
			plain = append(plain, opSentence(r))
		}
	}
	all := append(findings, plain...)
	if len(all) > maxOpSentences {
		n := len(all) - maxOpSentences
		all = append(all[:maxOpSentences], fmt.Sprintf("… and %d more operations on the resource (history.jsonl has them all)", n))
	}
	return all
}

// resourceView is the page's summary of the protected resource.
type resourceView struct {
	Counts       []string
	Findings     []finding
	MoreFindings int
}

type finding struct {
	Text string
	Bad  bool
}

// maxFindings bounds the findings listed on the page.
const maxFindings = 30

func buildResourceView(ops []resourceOp) *resourceView {
	if len(ops) == 0 {
		return nil
	}
	type fk struct {
		f       history.Func
		outcome string
	}
	counts := map[fk]int{}
	var funcs []history.Func
	for _, r := range ops {
		k := fk{r.inv.F, r.outcome}
		if counts[fk{f: r.inv.F}] == 0 {
			funcs = append(funcs, r.inv.F)
		}
		counts[k]++
		counts[fk{f: r.inv.F}]++
	}
	v := &resourceView{}
	for _, f := range funcs {
		var parts []string
		for _, oc := range []string{"ok", "rejected", "fail", "info", checker.OutcomePending} {
			if n := counts[fk{f, oc}]; n > 0 {
				label := oc
				if oc == "info" {
					label = "unknown"
				}
				parts = append(parts, fmt.Sprintf("%d %s", n, label))
			}
		}
		v.Counts = append(v.Counts, fmt.Sprintf("%d %s (%s)", counts[fk{f: f}], f, strings.Join(parts, ", ")))
	}
	// Problems first: they are what the reader came for.
	for _, bad := range []bool{true, false} {
		for _, r := range ops {
			if r.finding == "" || r.bad != bad {
				continue
			}
			if len(v.Findings) < maxFindings {
				v.Findings = append(v.Findings, finding{Text: r.finding, Bad: r.bad})
			} else {
				v.MoreFindings++
			}
		}
	}
	return v
}
