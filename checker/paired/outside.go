package paired

import (
	"fmt"
	"sort"

	"splitbrain/history"
)

// OutsideWrite is a write that the storage applied when no belief of its
// writer's lease covered its completion: it was sent during the lease and
// took effect after it ended (Late), or sent when the writer held no lease.
// A write that names its lease (history.Event.Lease) is judged against
// that lease's beliefs, whatever process the client wrote as; one that
// does not, against its process's. The harness's own set-up writes and
// final reads need no lock and are never listed.
type OutsideWrite struct {
	// Index is the write's invoke event index.
	Index  int64  `json:"index"`
	Client string `json:"client"`
	Key    string `json:"key"`
	// Belief is the belief the write is judged against: the one that
	// covered its invoke (Late), or the last to end before it; nil when
	// the writer held no lease.
	Belief *Belief `json:"belief,omitempty"`
	Late   bool    `json:"late,omitempty"`
	Text   string  `json:"text"`
}

// outsideWrites finds the applied writes of ops outside their writer's
// lease, in invoke order, from the beliefs of keys.
func outsideWrites(ops []*ResourceOp, keys []KeyInfo) []OutsideWrite {
	var writes []*ResourceOp
	for _, op := range ops {
		inv := op.Inv
		if IsWrite(inv.F) && op.Type() == history.OK && inv.Process != history.ProcessInit && inv.Process != history.ProcessFinal {
			writes = append(writes, op)
		}
	}
	if len(writes) == 0 {
		// A lock-only history has millions of beliefs and nothing to
		// judge against them.
		return nil
	}
	type lease struct{ key, value string }
	beliefs := map[string]*clientBeliefs{}
	byLease := map[lease]*clientBeliefs{}
	add := func(cb *clientBeliefs, b *Belief) *clientBeliefs {
		if cb == nil {
			cb = &clientBeliefs{}
		}
		cb.bs = append(cb.bs, b)
		return cb
	}
	for i := range keys {
		for j := range keys[i].Beliefs {
			b := &keys[i].Beliefs[j]
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
	var out []OutsideWrite
	for _, op := range writes {
		inv := op.Inv
		cb := beliefs[inv.Process]
		if inv.Lease != "" {
			cb = byLease[lease{inv.Key, inv.Lease}]
		}
		if cb == nil {
			cb = &clientBeliefs{}
		}
		if w, ok := cb.outside(history.Op{Invoke: inv, Completion: op.Done}); ok {
			out = append(out, w)
		}
	}
	return out
}

// IsWrite reports whether f changes the protected resource.
func IsWrite(f history.Func) bool {
	return f == history.Write || f == history.Transfer || f == history.Add
}

// clientBeliefs are one client's belief intervals, sorted by start, with
// the running maximum of their ends so a lookup need not scan them all.
type clientBeliefs struct {
	bs []*Belief
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

func laterEnd(a, b *Belief) bool {
	if b.EndReason == EndOpen {
		return false
	}
	return a.EndReason == EndOpen || a.End > b.End
}

func coversTime(b *Belief, t int64) bool {
	return b.Start <= t && (t <= b.End || b.EndReason == EndOpen)
}

// covering finds a belief that covers t.
func (c *clientBeliefs) covering(t int64) (*Belief, bool) {
	j := sort.Search(len(c.bs), func(i int) bool { return c.bs[i].Start > t }) - 1
	for ; j >= 0; j-- {
		if !coversTime(c.bs[c.maxEnd[j]], t) {
			// No belief starting at or before j lasts until t.
			return nil, false
		}
		if coversTime(c.bs[j], t) {
			return c.bs[j], true
		}
	}
	return nil, false
}

// outside says how a write that took effect relates to its client's belief
// intervals: ok false when a belief covered its completion.
func (c *clientBeliefs) outside(o history.Op) (OutsideWrite, bool) {
	inv, end := o.Invoke, o.Completion
	w := OutsideWrite{Index: inv.Index, Client: inv.Process, Key: inv.Key}
	if _, ok := c.covering(end.Time); ok {
		return w, false
	}
	if b, ok := c.covering(inv.Time); ok {
		w.Belief, w.Late = b, true
		w.Text = fmt.Sprintf("%s was sent at %s while %s held %q, but took effect only by %s, after that belief ended at %s (%s)",
			o.Describe(), Seconds(inv.Time), b.Client, b.Key, Seconds(end.Time), Seconds(b.End), EndText(b.EndReason))
		return w, true
	}
	// Nothing covers the invoke, so every belief that started by then had
	// ended: the latest end among them is the lease the client last held.
	j := sort.Search(len(c.bs), func(i int) bool { return c.bs[i].Start > inv.Time }) - 1
	if j < 0 {
		w.Text = fmt.Sprintf("%s took effect at %s although %s held no lock", o.Describe(), Seconds(end.Time), inv.Process)
		return w, true
	}
	last := c.bs[c.maxEnd[j]]
	w.Belief = last
	w.Text = fmt.Sprintf("%s took effect at %s although %s's belief in %q had ended at %s (%s)",
		o.Describe(), Seconds(end.Time), last.Client, last.Key, Seconds(last.End), EndText(last.EndReason))
	return w, true
}

// EndText says in words why a belief ended (Belief.EndReason).
func EndText(reason string) string {
	switch reason {
	case EndDeadline:
		return "validity deadline"
	case EndRelease:
		return "released"
	case EndReacquire:
		return "replaced by a new lease granted to the client"
	case EndOpen:
		return "still held when the history ended"
	}
	return reason
}
