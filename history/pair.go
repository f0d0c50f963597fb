package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Op is one client operation of a history: its invoke and, unless it was
// still pending when the history ended, its completion. Both point into the
// history (a long history has millions of operations: copies of both events
// would double its size).
type Op struct {
	Invoke *Event
	// Completion is nil when the operation never completed: it was still
	// pending when the history ended (Pairing.Pending), or the history is
	// inconsistent (Pairing.Problems).
	Completion *Event
}

// Done reports whether the operation completed.
func (o Op) Done() bool { return o.Completion != nil }

// Type is the completion's type: ok, fail or info; "" when the operation
// never completed.
func (o Op) Type() Type {
	if o.Completion == nil {
		return ""
	}
	return o.Completion.Type
}

// Process is the process that invoked the operation.
func (o Op) Process() string { return o.Invoke.Process }

// Token is the fencing token of the operation: the completion's, else the
// invoke's.
func (o Op) Token() *int64 {
	if o.Completion != nil && o.Completion.Token != nil {
		return o.Completion.Token
	}
	return o.Invoke.Token
}

// Problem is an inconsistency Pair found: a history with one cannot be
// judged.
type Problem struct {
	// At is the position in the history of the event it is about.
	At   int
	Text string
}

// Pairing is a history's operations: each client's invokes paired with
// their completions. It is made once (Pair), for the checker and the
// report alike.
type Pairing struct {
	// Ops are the operations in invoke order. Nemesis events are faults,
	// not operations, and the harness's End, Setup and Stall events are
	// no operations either.
	Ops []Op
	// Pending lists the operations still pending when the history ended,
	// as indexes into Ops, in invoke order. An operation that never
	// completed and is not listed was cut off by an inconsistency.
	Pending []int
	// Problems are the inconsistencies, in history order: an invoke while
	// the process's previous operation was pending, a completion of no
	// pending invoke, a completion of another function or key.
	Problems []Problem
	// opOf is, for each position of the history, the index in Ops of the
	// operation the event invokes or completes; -1 for any other event.
	opOf []int32
}

// OpOf is the index in Ops of the operation whose invoke or completion is
// at position pos of the history; -1 when none (a fault, the End event, a
// completion that pairs with no invoke).
func (p *Pairing) OpOf(pos int) int { return int(p.opOf[pos]) }

// Pair pairs each client's invokes with their completions. A process has
// at most one operation pending: its next event completes it, and must be
// of the same function and key, else the history is inconsistent (a
// Problem) and the operation never completed.
func Pair(events []Event) Pairing {
	p := Pairing{Ops: make([]Op, 0, len(events)/2), opOf: make([]int32, len(events))}
	// pending is each process's pending operation (an index in Ops), -1
	// when none: a key is set once per operation rather than added and
	// deleted.
	pending := map[string]int{}
	for i := range events {
		p.opOf[i] = -1
		e := &events[i]
		if e.Harness() || e.F == Nemesis || e.Process == ProcessNemesis {
			continue
		}
		prev, seen := pending[e.Process]
		open := seen && prev >= 0
		if e.Type == Invoke {
			if open {
				inv := p.Ops[prev].Invoke
				p.problem(i, "process %s invoked %s (event %d) while its %s (event %d) was still pending",
					e.Process, e.F, e.Index, inv.F, inv.Index)
			}
			pending[e.Process] = len(p.Ops)
			p.opOf[i] = int32(len(p.Ops))
			p.Ops = append(p.Ops, Op{Invoke: e})
			continue
		}
		if !open {
			p.problem(i, "event %d: %s %s by %s completes no pending invoke", e.Index, e.F, e.Type, e.Process)
			continue
		}
		pending[e.Process] = -1
		inv := p.Ops[prev].Invoke
		if inv.F != e.F {
			p.problem(i, "event %d: %s %s by %s completes a %s (event %d)", e.Index, e.F, e.Type, e.Process, inv.F, inv.Index)
			continue
		}
		if e.Key != "" && inv.Key != e.Key {
			p.problem(i, "event %d: %s %s by %s is for key %q but its invoke (event %d) was for %q",
				e.Index, e.F, e.Type, e.Process, e.Key, inv.Index, inv.Key)
			continue
		}
		p.Ops[prev].Completion = e
		p.opOf[i] = int32(prev)
	}
	for _, k := range pending {
		if k >= 0 {
			p.Pending = append(p.Pending, k)
		}
	}
	slices.Sort(p.Pending)
	return p
}

func (p *Pairing) problem(at int, format string, args ...any) {
	p.Problems = append(p.Problems, Problem{At: at, Text: fmt.Sprintf(format, args...)})
}

// Describe names the operation and its argument in words, e.g.
// `c1's write of 5 to "counter" with token 6`.
func (o Op) Describe() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s's %s", o.Invoke.Process, o.Invoke.F)
	if v := ShortValue(o.Invoke.Value); v != "" {
		fmt.Fprintf(&sb, " of %s", v)
	}
	if o.Invoke.Key != "" {
		prep := " to "
		if o.Invoke.F == Read {
			prep = " of "
		}
		fmt.Fprintf(&sb, "%s%q", prep, o.Invoke.Key)
	}
	if t := o.Token(); t != nil {
		fmt.Fprintf(&sb, " with token %d", *t)
	}
	return sb.String()
}

// ShortValue renders a JSON value compactly for a sentence, cut to a
// readable length (history.jsonl has it whole).
func ShortValue(raw json.RawMessage) string {
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
