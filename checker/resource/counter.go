package resource

import (
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"splitbrain/checker/paired"
	"splitbrain/checker/search"
	"splitbrain/checker/verdict"
	"splitbrain/history"
)

// CounterResult is the outcome of the counter check.
type CounterResult struct {
	Verdict verdict.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
	Keys    []CounterKey    `json:"keys"`
	// Ops is the number of porcupine operations checked.
	Ops int `json:"ops"`
	// LostUpdates counts the applied writes that a stale write undid.
	LostUpdates int `json:"lost_updates"`
	// Lost lists the stale writes (at most verdict.MaxViolations).
	Lost []LostUpdate `json:"lost,omitempty"`
}

// CounterKey summarises one counter.
type CounterKey struct {
	Key     string `json:"key"`
	Initial int64  `json:"initial"`
	// Final is the last final read, if there was one.
	Final    *int64 `json:"final,omitempty"`
	Applied  int    `json:"applied"`
	Rejected int    `json:"rejected"`
	Unknown  int    `json:"unknown"`
}

// LostUpdate is a write computed from a stale read: between its read and its
// write the storage applied other writes, which it undid.
type LostUpdate struct {
	Key   string `json:"key"`
	Write Write  `json:"write"`
	// Read is the value it read.
	Read int64 `json:"read"`
	// Overwrote lists the applied writes it undid (at most 10); Count has
	// them all.
	Overwrote []Write `json:"overwrote,omitempty"`
	Count     int     `json:"count"`
	Text      string  `json:"text"`
}

// CounterInput is one porcupine operation of the counter check.
type CounterInput struct {
	Op   csOp
	R, W int64
	// Seq is an applied write's place in the storage's order of the key's
	// writes; 0 when its outcome is unknown or the history has no seqs.
	// For csStart, the number of writes applied before the piece.
	Seq    int64
	Client string
	Key    string
}

// CounterModel is a register holding the counter, over critical sections
// taken as atomic read-then-write operations, whose writes are applied in
// the storage's order (csStep). Without the order, a write of unknown
// outcome could be taken as not applied where the seqs show that it landed
// between another section's read and write.
func CounterModel() porcupine.Model {
	m := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{csState[int64]{}} },
		Step: func(state, input, _ interface{}) []interface{} {
			s, ok1 := state.(csState[int64])
			in, ok2 := input.(CounterInput)
			if !ok1 || !ok2 {
				return nil
			}
			return csStep(s, in.Op, in.Seq, in.W,
				func(v int64) bool { return v == in.R },
				func(int64) (int64, bool) { return in.W, true })
		},
		Equal: func(a, b interface{}) bool { return a == b },
		Hash: func(s interface{}) uint64 {
			v, _ := s.(csState[int64])
			return uint64(v.V)*0x9e3779b97f4a7c15 ^ uint64(v.N)
		},
		DescribeOperation: func(input, _ interface{}) string {
			in, ok := input.(CounterInput)
			if !ok {
				return fmt.Sprintf("%v", input)
			}
			seq := ""
			if in.Seq > 0 {
				seq = fmt.Sprintf(" (seq %d)", in.Seq)
			}
			switch in.Op {
			case csRead:
				return fmt.Sprintf("%s read %d", in.Client, in.R)
			case csRW:
				return fmt.Sprintf("%s %d→%d%s", in.Client, in.R, in.W, seq)
			case csMaybe:
				return fmt.Sprintf("%s %d→%d?", in.Client, in.R, in.W)
			case csBlind:
				return fmt.Sprintf("%s wrote %d%s", in.Client, in.W, seq)
			case csMaybeBlind:
				return fmt.Sprintf("%s wrote %d?", in.Client, in.W)
			}
			return fmt.Sprintf("%q is %d after %d write(s)", in.Key, in.W, in.Seq)
		},
		DescribeState: func(s interface{}) string {
			if v, ok := s.(csState[int64]); ok {
				return fmt.Sprintf("%d (seq %d)", v.V, v.N)
			}
			return fmt.Sprintf("%v", s)
		},
		DescribeOperationMetadata: search.DescribeMeta,
	}
	return m.ToModel()
}

// counterOps builds the porcupine operations of one counter. An operation
// covers a critical section from its read's invoke to its write's
// completion; an unknown write never completes (it may land any time), so it
// runs to the end of the history.
func counterOps(a *analysis, r *resource, clients map[string]int) ([]porcupine.Operation, []string) {
	var ops []porcupine.Operation
	var notes []string
	add := func(in CounterInput, call, ret int64, meta string) {
		in.Key = r.key
		ops = append(ops, porcupine.Operation{ClientId: clients[in.Client], Input: in, Call: call, Return: ret, Metadata: meta})
	}
	// The value of each read's completion and each write's invoke,
	// decoded once.
	values := map[*resourceOp]int64{}
	usable := func(op *resourceOp) bool {
		ev := op.inv
		if ev.F == history.Read {
			ev = op.done
		}
		var v int64
		if err := json.Unmarshal(ev.Value, &v); err != nil {
			notes = append(notes, fmt.Sprintf("event %d: counter value %s is not a whole number", ev.Index, ev.Value))
			return false
		}
		values[op] = v
		return true
	}
	csOps(a, r, history.Write, usable, func(op csOp, read, write *resourceOp, call, ret int64) {
		in := CounterInput{Op: op}
		if read != nil {
			in.R = values[read]
		}
		if write == nil {
			ev, done := read.inv, read.done
			in.Client = ev.Process
			add(in, call, ret, fmt.Sprintf("%s: read (events %d→%d)", ev.Process, ev.Index, done.Index))
			return
		}
		ev := write.inv
		in.Client, in.W = ev.Process, values[write]
		if write.write.applied {
			in.Seq = write.write.ack.Seq
		}
		add(in, call, ret, fmt.Sprintf("%s: write %d (event %d)", ev.Process, in.W, ev.Index))
	})
	for _, op := range r.finals {
		ev, done := op.inv, op.done
		var v int64
		if err := json.Unmarshal(done.Value, &v); err != nil {
			notes = append(notes, fmt.Sprintf("event %d: counter value %s is not a whole number", done.Index, done.Value))
			continue
		}
		add(CounterInput{Op: csRead, R: v, Client: ev.Process}, ev.Time, done.Time,
			fmt.Sprintf("final read (event %d)", done.Index))
	}
	return ops, notes
}

// counterPieces splits one counter's operations at points where nothing is
// in flight and the last operation started after every other returned: in
// any linearization it comes last, so the value there is known, and the next
// piece starts from it with a csStart operation. So is the number of writes
// applied by then: every write before the point returned (one of unknown
// outcome never returns), so it is the highest seq among them. Times are
// doubled so a csStart fits strictly between two pieces however close they
// are (a csStart concurrent with the last operation before it could hide a
// stale read).
func counterPieces(ops []porcupine.Operation, init, initSeq int64, key string) [][]porcupine.Operation {
	for i := range ops {
		ops[i].Call, ops[i].Return = 2*ops[i].Call, 2*ops[i].Return
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var out [][]porcupine.Operation
	// state and from are the value and the number of applied writes at
	// the start of the piece being built; applied counts them as it goes.
	state, from, applied := init, initSeq, initSeq
	start := 0
	maxRet, ret2 := int64(math.MinInt64), int64(math.MinInt64)
	last := -1
	emit := func(to int) {
		piece := make([]porcupine.Operation, 0, to-start+1)
		at := ops[start].Call - 1
		piece = append(piece, porcupine.Operation{ClientId: 0, Input: CounterInput{Op: csStart, W: state, Seq: from, Key: key},
			Call: at, Return: at, Metadata: "value at the start of this window"})
		out = append(out, append(piece, ops[start:to]...))
	}
	for i := range ops {
		if i > start && maxRet < ops[i].Call && ops[last].Call > ret2 {
			if v, ok := after(ops[last]); ok {
				emit(i)
				state, from, start = v, applied, i
				maxRet, ret2, last = math.MinInt64, math.MinInt64, -1
			}
		}
		if in, _ := ops[i].Input.(CounterInput); in.Seq > applied {
			applied = in.Seq
		}
		switch r := ops[i].Return; {
		case r > maxRet:
			ret2, maxRet, last = maxRet, r, i
		case r > ret2:
			ret2 = r
		}
	}
	if start < len(ops) {
		emit(len(ops))
	}
	return out
}

// after is the value a deterministic operation leaves.
func after(op porcupine.Operation) (int64, bool) {
	in, _ := op.Input.(CounterInput)
	switch in.Op {
	case csRead:
		return in.R, true
	case csRW, csBlind:
		return in.W, true
	}
	return 0, false
}

// checkCounter checks every counter with porcupine and explains lost
// updates from the storage's order of applied writes.
func checkCounter(a *analysis, rs []*resource, cfg search.Config) (*CounterResult, func([]paired.FaultWindow) *search.Window) {
	res := &CounterResult{}
	clients := a.resourceClients()
	var pieces, batches [][]porcupine.Operation
	var problems []string
	for _, r := range rs {
		k := CounterKey{Key: r.key}
		k.Applied, k.Rejected, k.Unknown = r.outcomes()
		if f := r.lastFinal(); f != nil {
			var v int64
			if json.Unmarshal(f.done.Value, &v) == nil {
				k.Final = &v
			}
		}
		if err := json.Unmarshal(r.init.ev.Value, &k.Initial); err != nil {
			problems = append(problems, fmt.Sprintf("counter %q: initial value %s is not a whole number", r.key, r.init.ev.Value))
			res.Keys = append(res.Keys, k)
			continue
		}
		res.Keys = append(res.Keys, k)
		ops, notes := counterOps(a, r, clients)
		a.notes = append(a.notes, notes...)
		res.Ops += len(ops)
		kp := counterPieces(ops, k.Initial, r.init.ack.Seq, r.key)
		pieces = append(pieces, kp...)
		// Pieces of different counters overlap in time: batch per key.
		batches = append(batches, search.Batch(kp, search.BatchOps)...)
		lost := counterReplay(a, r, k.Initial)
		for _, l := range lost {
			res.LostUpdates += l.Count
		}
		res.Lost = append(res.Lost, lost...)
	}
	if len(res.Lost) > verdict.MaxViolations {
		res.Lost = res.Lost[:verdict.MaxViolations]
	}

	model := CounterModel()
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return batches }
	outcome := porcupine.Ok
	if len(pieces) > 0 {
		outcome, _ = cfg.Run(model, nil, cfg.Timeout)
	}
	stale := len(res.Lost)
	switch {
	case len(problems) > 0 && outcome != porcupine.Illegal && stale == 0:
		res.Verdict = verdict.Unknown
		res.Reason = "the counter cannot be judged: " + paired.JoinFirst(problems, 3)
	case outcome == porcupine.Illegal || stale > 0:
		res.Verdict = verdict.Invalid
		res.Reason = counterReason(res, outcome) + a.unguarded(rs)
	case outcome == porcupine.Unknown:
		res.Verdict = verdict.Unknown
		res.Reason = fmt.Sprintf("porcupine did not finish checking the counter within %s", cfg.Timeout)
	default:
		res.Verdict = verdict.Valid
		applied := 0
		for _, k := range res.Keys {
			applied += k.Applied
		}
		res.Reason = fmt.Sprintf("%d increment(s) applied to %d counter(s): every critical section was an atomic read-then-write, no update lost",
			applied, len(res.Keys))
		if a.outside > 0 {
			// Counted all the same (a write's section follows its
			// client, not its lease), and named: the lock did not
			// guard these.
			res.Reason += fmt.Sprintf(", %d of the writes made outside their client's lease", a.outside)
		}
	}
	if res.Verdict != verdict.Invalid {
		return res, nil
	}
	timeout := cfg.Timeout
	return res, func(faults []paired.FaultWindow) *search.Window {
		stale := make([]Write, len(res.Lost))
		for i, l := range res.Lost {
			stale[i] = l.Write
		}
		return failingWindow(model, pieces, func(p []porcupine.Operation) bool { return holdsStale(p, stale) }, faults, timeout)
	}
}

func counterReason(res *CounterResult, outcome porcupine.CheckResult) string {
	if res.LostUpdates == 0 && len(res.Lost) == 0 {
		return "lost update: porcupine found no order of the critical sections in which each read-then-write was atomic " +
			"and the storage applied the writes in the order of their seqs"
	}
	var parts []string
	for i, l := range res.Lost {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(res.Lost)-3))
			break
		}
		parts = append(parts, l.Text)
	}
	s := fmt.Sprintf("%d update(s) lost: %s", res.LostUpdates, strings.Join(parts, "; "))
	if outcome != porcupine.Illegal {
		s += fmt.Sprintf(" (porcupine: %s)", strings.ToLower(string(outcome)))
	}
	return s
}

// counterReplay applies the applied writes in the storage's order and finds
// the stale ones: a write whose read differs from the value it replaced
// undid every write applied since the one it read. A gap in the seqs is a
// write of unknown outcome that landed before the next applied write
// returned: what it wrote is known when every such write not yet placed
// wrote the same value; else the next write is not judged (porcupine, which
// tries every placement, still does). The replay only names what is
// certain: a write judged stale here is one.
func counterReplay(a *analysis, r *resource, init int64) []LostUpdate {
	type step struct {
		w     *writeOp
		value int64
	}
	applied, unknown, ok := r.replayable()
	if !ok {
		return nil
	}
	value := func(ev *history.Event) (int64, bool) {
		var v int64
		return v, json.Unmarshal(ev.Value, &v) == nil
	}
	readOf := func(w *writeOp) (int64, bool) {
		if w.read == nil {
			return 0, false
		}
		return value(w.read.done)
	}
	var lost []LostUpdate
	var done []step
	state, certain := init, false
	var seq int64
	for _, w := range applied {
		if w == r.init {
			state, certain, seq = init, true, w.ack.Seq
			done = append(done, step{w, init})
			continue
		}
		wDone := w.op.done.Time
		for seq+1 < w.ack.Seq && certain {
			// A write of unknown outcome landed here.
			cands, agree := landedIn(unknown, wDone, func(x, y *writeOp) bool {
				xv, ok1 := value(x.ev)
				yv, ok2 := value(y.ev)
				return ok1 && ok2 && xv == yv
			})
			if !agree {
				certain = false
				break
			}
			v, _ := value(unknown[cands[0]].ev)
			st := step{value: v}
			if len(cands) == 1 {
				st.w = unknown[cands[0]]
			}
			unknown = append(unknown[:cands[0]], unknown[cands[0]+1:]...)
			state = v
			done = append(done, st)
			seq++
		}
		seq = w.ack.Seq
		wv, ok := value(w.ev)
		if !ok {
			certain = false
			continue
		}
		if rv, hasRead := readOf(w); certain && hasRead && rv != state {
			l := LostUpdate{Key: r.key, Write: a.writeRef(w), Read: rv}
			from := -1
			for i := len(done) - 1; i >= 0; i-- {
				if done[i].value == rv {
					from = i
					break
				}
			}
			var names []string
			for _, s := range done[from+1:] {
				if s.w == r.init {
					continue
				}
				l.Count++
				if s.w == nil {
					// One of several writes of unknown outcome, all of
					// the same value: which one landed is not known.
					if len(names) < 10 {
						names = append(names, fmt.Sprintf("a write of %d of unknown outcome", s.value))
					}
					continue
				}
				if len(l.Overwrote) < 10 {
					l.Overwrote = append(l.Overwrote, a.writeRef(s.w))
					names = append(names, fmt.Sprintf("%s's %s at %s", s.w.ev.Process, s.w.ev.Value, paired.Seconds(l.Overwrote[len(l.Overwrote)-1].End)))
				}
			}
			if from < 0 {
				l.Text = fmt.Sprintf("%s wrote %d computed from a read of %d, a value no applied write had left; the counter was %d",
					l.Write.Label(), wv, rv, state)
			} else {
				l.Text = fmt.Sprintf("%s was computed from a read of %d, but the counter was %d by then: it undid %d update(s) (%s)",
					l.Write.Label(), rv, state, l.Count, strings.Join(names, ", "))
			}
			lost = append(lost, l)
		}
		state, certain = wv, true
		done = append(done, step{w, wv})
	}
	return lost
}

// failingWindow visualizes the pieces holding a stale write (holds), or if
// none those porcupine rejects, with their times halved back.
func failingWindow(model porcupine.Model, pieces [][]porcupine.Operation, holds func([]porcupine.Operation) bool, faults []paired.FaultWindow, timeout time.Duration) *search.Window {
	var failing [][]porcupine.Operation
	for _, p := range pieces {
		if holds(p) {
			failing = append(failing, p)
		}
	}
	if len(failing) == 0 {
		for _, p := range pieces {
			if porcupine.CheckOperationsTimeout(model, p, timeout) == porcupine.Illegal {
				failing = append(failing, p)
			}
		}
	}
	var picked []porcupine.Operation
	for _, p := range failing {
		if len(picked) > search.MaxWindowOps {
			break
		}
		for _, op := range p {
			op.Call, op.Return = op.Call/2, op.Return/2
			picked = append(picked, op)
		}
	}
	if len(picked) == 0 {
		return nil
	}
	from, to := picked[0].Call, picked[0].Return
	dense := map[int]int{}
	for i, op := range picked {
		from, to = min(from, op.Call), max(to, op.Return)
		if _, ok := dense[op.ClientId]; !ok {
			dense[op.ClientId] = len(dense)
		}
		picked[i].ClientId = dense[op.ClientId]
	}
	return &search.Window{Model: model, Ops: picked, Annotations: search.FaultAnnotations(faults, from, to), Timeout: timeout}
}

// resourceClients numbers the clients for porcupine's resource models, the
// harness's final reads last.
func (a *analysis) resourceClients() map[string]int {
	clients := map[string]int{}
	for i, c := range a.clients {
		clients[c] = i
	}
	clients[history.ProcessFinal] = len(a.clients)
	return clients
}

// spansWrite reports whether the piece p spans one of writes: whether the
// time from its first call to its last return meets the write's (porcupine
// times are twice the history's, see the pieces).
func spansWrite(p []porcupine.Operation, writes iter.Seq[Write]) bool {
	if len(p) == 0 {
		return false
	}
	from, to := p[0].Call, p[0].Return
	for _, op := range p {
		from, to = min(from, op.Call), max(to, op.Return)
	}
	for w := range writes {
		if 2*w.End >= from && 2*w.Invoke <= to {
			return true
		}
	}
	return false
}

func counterProperty(c *CounterResult, window func([]paired.FaultWindow) *search.Window, faults []paired.FaultWindow) verdict.Property {
	p := verdict.Property{Name: Counter, Verdict: c.Verdict, Reason: c.Reason, Decides: true}
	p.Numbers = verdict.Count(nil, c.LostUpdates, "lost update", "lost updates", true)
	var applied, rejected, unknown int
	for _, k := range c.Keys {
		applied, rejected, unknown = applied+k.Applied, rejected+k.Rejected, unknown+k.Unknown
	}
	p.Numbers = writeCounts(p.Numbers, applied, rejected, unknown)
	if window != nil {
		p.Window = func() *search.Window { return window(faults) }
	}
	return p
}

// writeCounts appends the counts of writes by outcome.
func writeCounts(numbers []string, applied, rejected, unknown int) []string {
	numbers = verdict.Count(numbers, applied, "applied write", "applied writes", false)
	numbers = verdict.Count(numbers, rejected, "rejected write", "rejected writes", rejected > 0)
	return verdict.Count(numbers, unknown, "write of unknown outcome", "writes of unknown outcome", unknown > 0)
}
