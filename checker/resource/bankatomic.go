package resource

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/shopspring/decimal"

	"splitbrain/checker/paired"
	"splitbrain/checker/search"
	"splitbrain/history"
)

// The bank's critical sections, as the counter's: each is a read of every
// balance, then a write of the two new balances it computed, and under a
// lock the pair is atomic. Conservation alone misses a stale transfer
// whenever the two transfers involved share both accounts or none (with two
// accounts it never sees one), so the sections are checked as atomic
// read-then-writes with porcupine, and the storage's order of applied writes
// names the transfers a stale one undid.

// LostTransfer is an applied transfer computed from stale balances: between
// its read and its write the storage applied other transfers to one of its
// accounts, and writing absolute balances undid them.
type LostTransfer struct {
	Key      string `json:"key"`
	Transfer Write  `json:"transfer"`
	// Stale lists its accounts whose balance changed between its read and
	// its write.
	Stale []StaleBalance `json:"stale"`
	// Undid lists the applied transfers it undid (at most 10); Count has
	// them all.
	Undid []Write `json:"undid,omitempty"`
	Count int     `json:"count"`
	Text  string  `json:"text"`
}

// StaleBalance is an account a stale transfer wrote: what it read, and what
// the storage held when the transfer was applied.
type StaleBalance struct {
	Account string `json:"account"`
	Read    string `json:"read"`
	Then    string `json:"then"`
}

// bankState is every balance of a bank, in account order, as 8-byte
// integers in units of the bank's smallest decimal place: a string, so
// that porcupine can compare and hash it and steps never share memory.
type bankState string

func (s bankState) get(i int) int64 {
	return int64(binary.LittleEndian.Uint64([]byte(s[8*i : 8*i+8])))
}

// with returns s with the accounts set to vals.
func (s bankState) with(accts []int, vals []int64) bankState {
	b := []byte(s)
	for j, i := range accts {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(vals[j]))
	}
	return bankState(b)
}

// matches reports whether s holds vals on accts.
func (s bankState) matches(accts []int, vals []int64) bool {
	for j, i := range accts {
		if 8*i+8 > len(s) || s.get(i) != vals[j] {
			return false
		}
	}
	return true
}

// BankInput is one porcupine operation of the bank check.
type BankInput struct {
	Op csOp
	// State is the whole bank: read (csRead) or set (csStart).
	State bankState
	// Accts are the accounts a transfer wrote (indexes in account order),
	// R the balances it read there, W those it wrote.
	Accts []int
	R, W  []int64
	// Seq is an applied transfer's place in the storage's order.
	Seq    int64
	Client string
	Key    string
	Desc   string
}

// BankModel is a bank over critical sections taken as atomic read-then-write
// operations: a transfer applies only if the accounts it writes still hold
// what it read, and in the storage's order (csStep). Nondeterministic only
// for transfers of unknown outcome.
func BankModel() porcupine.Model {
	m := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{csState[bankState]{}} },
		Step: func(state, input, _ interface{}) []interface{} {
			st, ok1 := state.(csState[bankState])
			in, ok2 := input.(BankInput)
			if !ok1 || !ok2 {
				return nil
			}
			return csStep(st, in.Op, in.Seq, in.State,
				func(s bankState) bool {
					if in.Op == csRead {
						return s == in.State
					}
					return s.matches(in.Accts, in.R)
				},
				func(s bankState) (bankState, bool) {
					if len(s) < 8*(maxIndex(in.Accts)+1) {
						return s, false
					}
					return s.with(in.Accts, in.W), true
				})
		},
		Equal: func(a, b interface{}) bool { return a == b },
		Hash: func(s interface{}) uint64 {
			v, _ := s.(csState[bankState])
			h := fnv.New64a()
			_, _ = h.Write([]byte(v.V))
			return h.Sum64() ^ uint64(v.N)
		},
		DescribeOperation: func(input, _ interface{}) string {
			if in, ok := input.(BankInput); ok {
				return in.Desc
			}
			return fmt.Sprintf("%v", input)
		},
		DescribeState: func(s interface{}) string {
			if v, ok := s.(csState[bankState]); ok {
				return fmt.Sprintf("%x (seq %d)", string(v.V), v.N)
			}
			return fmt.Sprintf("%x", s)
		},
		DescribeOperationMetadata: search.DescribeMeta,
	}
	return m.ToModel()
}

func maxIndex(xs []int) int {
	m := -1
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// bankCodec turns one bank's balances into bankStates and back.
type bankCodec struct {
	accounts []string
	index    map[string]int
	// scale is the number of decimal places of the unit.
	scale int32
}

// newBankCodec takes the accounts from the initial balances and the unit
// from the finest decimal the key's history holds.
func newBankCodec(init balances, seen []decimal.Decimal) (*bankCodec, error) {
	c := &bankCodec{index: map[string]int{}}
	for _, a := range sortedAccounts(init) {
		c.index[a] = len(c.accounts)
		c.accounts = append(c.accounts, a)
	}
	for _, d := range append(seen, valuesOf(init)...) {
		c.scale = max(c.scale, -d.Exponent())
	}
	if c.scale > 18 {
		return nil, fmt.Errorf("balances with %d decimal places are too fine to check", c.scale)
	}
	return c, nil
}

func valuesOf(b balances) []decimal.Decimal {
	out := make([]decimal.Decimal, 0, len(b))
	for _, v := range b {
		out = append(out, v)
	}
	return out
}

func (c *bankCodec) units(d decimal.Decimal) (int64, error) {
	s := d.Shift(c.scale)
	if !s.IsInteger() || !s.BigInt().IsInt64() {
		return 0, fmt.Errorf("balance %s does not fit the check's arithmetic", d)
	}
	return s.IntPart(), nil
}

func (c *bankCodec) show(v int64) string {
	return decimal.New(v, -c.scale).StringFixed(max(c.scale, 2))
}

// state encodes a read of every balance.
func (c *bankCodec) state(b balances) (bankState, error) {
	if len(b) != len(c.accounts) {
		return "", fmt.Errorf("%d account(s), not the %d the bank started with", len(b), len(c.accounts))
	}
	vals := make([]int64, len(c.accounts))
	accts := make([]int, len(c.accounts))
	for a, v := range b {
		i, ok := c.index[a]
		if !ok {
			return "", fmt.Errorf("account %s is not one the bank started with", a)
		}
		u, err := c.units(v)
		if err != nil {
			return "", err
		}
		accts[i], vals[i] = i, u
	}
	return bankState(make([]byte, 8*len(c.accounts))).with(accts, vals), nil
}

// part encodes some accounts' balances, in account order.
func (c *bankCodec) part(b balances) ([]int, []int64, error) {
	var accts []int
	for a := range b {
		i, ok := c.index[a]
		if !ok {
			return nil, nil, fmt.Errorf("account %s is not one the bank started with", a)
		}
		accts = append(accts, i)
	}
	sort.Ints(accts)
	vals := make([]int64, len(accts))
	for j, i := range accts {
		u, err := c.units(b[c.accounts[i]])
		if err != nil {
			return nil, nil, err
		}
		vals[j] = u
	}
	return accts, vals, nil
}

func (c *bankCodec) describe(accts []int, vals []int64) string {
	parts := make([]string, len(accts))
	for j, i := range accts {
		parts[j] = c.accounts[i] + "=" + c.show(vals[j])
	}
	return strings.Join(parts, " ")
}

// bankEvents is what one bank's history decodes to: every read's state and
// every transfer's accounts, or the error that keeps the bank from being
// checked as critical sections.
type bankEvents struct {
	codec *bankCodec
	init  bankState
	reads map[*history.Event]bankState // by the read's completion position
	xfers map[*writeOp]bankXfer
}

type bankXfer struct {
	accts []int
	w     []int64
}

func decodeBank(a *analysis, r *resource, init balances) (*bankEvents, error) {
	var seen []decimal.Decimal
	readB := map[*history.Event]balances{}
	for _, op := range r.reads {
		done := op.done
		var rb history.Balances
		if err := done.Decode(&rb); err != nil {
			return nil, err
		}
		b, err := parseBalances(rb)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", done.Index, err)
		}
		readB[op.done] = b
		seen = append(seen, valuesOf(b)...)
	}
	xferB := map[*writeOp]balances{}
	for _, w := range r.writes {
		if w == r.init || w.ev.F != history.Transfer {
			if w != r.init && w.ev.Process != history.ProcessInit {
				return nil, fmt.Errorf("event %d: a %s on bank %q", w.ev.Index, w.ev.F, r.key)
			}
			continue
		}
		var t history.TransferValue
		if err := w.ev.Decode(&t); err != nil {
			return nil, err
		}
		b, err := parseBalances(t.Balances)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", w.ev.Index, err)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("event %d: a transfer that writes no balance", w.ev.Index)
		}
		xferB[w] = b
		seen = append(seen, valuesOf(b)...)
	}
	c, err := newBankCodec(init, seen)
	if err != nil {
		return nil, err
	}
	be := &bankEvents{codec: c, reads: map[*history.Event]bankState{}, xfers: map[*writeOp]bankXfer{}}
	if be.init, err = c.state(init); err != nil {
		return nil, fmt.Errorf("initial balances: %w", err)
	}
	for pos, b := range readB {
		if be.reads[pos], err = c.state(b); err != nil {
			return nil, fmt.Errorf("event %d: read %w", pos.Index, err)
		}
	}
	for w, b := range xferB {
		accts, vals, err := c.part(b)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", w.ev.Index, err)
		}
		be.xfers[w] = bankXfer{accts, vals}
	}
	return be, nil
}

// bankOps builds the porcupine operations of one bank, as counterOps does
// for a counter (csOps).
func bankOps(a *analysis, r *resource, be *bankEvents, clients map[string]int) []porcupine.Operation {
	var ops []porcupine.Operation
	c := be.codec
	add := func(in BankInput, call, ret int64, meta string) {
		in.Key = r.key
		ops = append(ops, porcupine.Operation{ClientId: clients[in.Client], Input: in, Call: call, Return: ret, Metadata: meta})
	}
	readOp := func(op *resourceOp, what string) {
		ev, done := op.inv, op.done
		s := be.reads[op.done]
		add(BankInput{Op: csRead, State: s, Client: ev.Process, Desc: ev.Process + " read " + c.describe(allIndexes(c), statesOf(s, c))},
			ev.Time, done.Time, fmt.Sprintf("%s: %s (events %d→%d)", ev.Process, what, ev.Index, done.Index))
	}
	// Every read decoded (decodeBank); a transfer only if its balances
	// did.
	usable := func(op *resourceOp) bool {
		if op.write == nil {
			return true
		}
		_, ok := be.xfers[op.write]
		return ok
	}
	csOps(a, r, history.Transfer, usable, func(op csOp, read, write *resourceOp, call, ret int64) {
		if write == nil {
			readOp(read, "read")
			return
		}
		ev := write.inv
		w := write.write
		x := be.xfers[w]
		in := BankInput{Op: op, Accts: x.accts, W: x.w, Client: ev.Process, Seq: w.ack.Seq}
		ref := a.writeRef(w)
		unknown := ""
		if op == csMaybe || op == csMaybeBlind {
			unknown = "?"
		}
		in.Desc = fmt.Sprintf("%s wrote %s%s", ev.Process, c.describe(x.accts, x.w), unknown)
		if read != nil {
			in.R = pick(be.reads[read.done], x.accts)
			in.Desc = fmt.Sprintf("%s %s → %s%s", ev.Process, c.describe(x.accts, in.R), c.describe(x.accts, x.w), unknown)
		}
		add(in, call, ret, fmt.Sprintf("%s: transfer of %s (event %d)", ev.Process, ref.Value, ev.Index))
	})
	for _, op := range r.finals {
		readOp(op, "final read")
	}
	return ops
}

func allIndexes(c *bankCodec) []int {
	out := make([]int, len(c.accounts))
	for i := range out {
		out[i] = i
	}
	return out
}

func statesOf(s bankState, c *bankCodec) []int64 {
	out := make([]int64, len(c.accounts))
	for i := range out {
		out[i] = s.get(i)
	}
	return out
}

// bankAfter replays the applied transfers in the storage's order: the bank
// after each seq, as far as the seqs run without a gap (a gap is a transfer
// of unknown outcome that landed, whose place is not known).
func bankAfter(r *resource, be *bankEvents) map[int64]bankState {
	seq := r.init.ack.Seq
	state := be.init
	out := map[int64]bankState{seq: state}
	for _, w := range r.applied() {
		if w == r.init {
			continue
		}
		x, ok := be.xfers[w]
		if !ok || w.ack.Seq != seq+1 {
			break
		}
		seq = w.ack.Seq
		state = state.with(x.accts, x.w)
		out[seq] = state
	}
	return out
}

// bankPieces splits one bank's operations at quiescent points whose bank
// is known from the storage's order: every applied transfer before the
// point holds a seq, and they run from the initial write without a gap. A
// piece starts from that bank (csStart) and must end in the next point's
// (a read), so pieces join into one history: the storage's real order is
// a linearization of each piece whenever every section was atomic. Times
// are doubled so both fit strictly between two pieces.
func bankPieces(ops []porcupine.Operation, after map[int64]bankState, initSeq int64, key string) [][]porcupine.Operation {
	for i := range ops {
		ops[i].Call, ops[i].Return = 2*ops[i].Call, 2*ops[i].Return
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var out [][]porcupine.Operation
	state := after[initSeq]
	start := 0
	maxRet := int64(math.MinInt64)
	applied, maxSeq := int64(0), initSeq
	// from is the number of transfers applied at the start of the piece.
	from := initSeq
	mark := func(op csOp, s bankState, seq, at int64, desc string) porcupine.Operation {
		return porcupine.Operation{Input: BankInput{Op: op, State: s, Seq: seq, Key: key, Desc: desc}, Call: at, Return: at, Metadata: desc}
	}
	emit := func(to int, end *bankState) {
		piece := make([]porcupine.Operation, 0, to-start+2)
		piece = append(piece, mark(csStart, state, from, ops[start].Call-1, "the bank at the start of this window"))
		piece = append(piece, ops[start:to]...)
		if end != nil {
			piece = append(piece, mark(csRead, *end, 0, ops[to].Call-1, "the bank at the end of this window, by the storage's order"))
		}
		out = append(out, piece)
	}
	for i := range ops {
		if i > start && maxRet < ops[i].Call && maxSeq == initSeq+applied {
			if s, ok := after[maxSeq]; ok {
				emit(i, &s)
				state, from, start, maxRet = s, maxSeq, i, math.MinInt64
			}
		}
		if in, _ := ops[i].Input.(BankInput); in.Op == csRW || in.Op == csBlind {
			applied++
			maxSeq = max(maxSeq, in.Seq)
		}
		maxRet = max(maxRet, ops[i].Return)
	}
	if start < len(ops) {
		emit(len(ops), nil)
	}
	return out
}

// bankReplay applies the applied transfers in the storage's order and finds
// the stale ones: a transfer whose accounts no longer held what it read
// undid every transfer applied to them since the bank it read. A gap in the
// seqs is a transfer of unknown outcome that landed before the next applied
// one returned: what it wrote is known when every such transfer not yet
// placed wrote the same balances; else the accounts they may have written
// are not judged until written again (porcupine, which tries every
// placement, still judges them). The replay only names what is certain.
func bankReplay(a *analysis, r *resource, be *bankEvents) []LostTransfer {
	c := be.codec
	applied, unknown, ok := r.replayable()
	if !ok {
		return nil
	}
	readOf := func(w *writeOp) (bankState, bool) {
		if w.read == nil {
			return "", false
		}
		s, ok := be.reads[w.read.done]
		return s, ok
	}
	var done []bankStep
	state := be.init
	uncertain := map[int]bool{}
	// lastAt: the last step after which the bank was this state, while
	// every account was certain.
	lastAt := map[bankState]int{state: -1}
	seq := r.init.ack.Seq
	var lost []LostTransfer
	apply := func(w *writeOp, x bankXfer) {
		state = state.with(x.accts, x.w)
		for _, i := range x.accts {
			delete(uncertain, i)
		}
		done = append(done, bankStep{w, x.accts})
		if len(uncertain) == 0 {
			lastAt[state] = len(done) - 1
		}
	}
	for _, w := range applied {
		if w == r.init {
			continue
		}
		wDone := w.op.done.Time
		for seq+1 < w.ack.Seq {
			// A transfer of unknown outcome landed here.
			cands, agree := landedIn(unknown, wDone, func(x, y *writeOp) bool {
				xx, ok1 := be.xfers[x]
				yx, ok2 := be.xfers[y]
				return ok1 && ok2 && sameXfer(xx, yx)
			})
			switch {
			case agree:
				u := unknown[cands[0]]
				unknown = append(unknown[:cands[0]], unknown[cands[0]+1:]...)
				x := be.xfers[u]
				if len(cands) > 1 {
					u = nil // not known which: the explanation names none
				}
				apply(u, x)
			case len(cands) == 0:
				for i := range c.accounts {
					uncertain[i] = true
				}
			default:
				for _, k := range cands {
					for _, i := range be.xfers[unknown[k]].accts {
						uncertain[i] = true
					}
				}
			}
			seq++
		}
		seq = w.ack.Seq
		x, ok := be.xfers[w]
		if !ok {
			continue
		}
		rs, hasRead := readOf(w)
		if hasRead && !anyUncertain(uncertain, x.accts) && !state.matches(x.accts, pick(rs, x.accts)) {
			lost = append(lost, lostTransfer(a, r, c, w, x, rs, state, done, lastAt))
		}
		apply(w, x)
	}
	return lost
}

// sameXfer reports whether two transfers write the same balances.
func sameXfer(x, y bankXfer) bool {
	if len(x.accts) != len(y.accts) {
		return false
	}
	for j := range x.accts {
		if x.accts[j] != y.accts[j] || x.w[j] != y.w[j] {
			return false
		}
	}
	return true
}

// bankStep is an applied transfer in the replay, and the accounts it wrote;
// w is nil for one of several transfers of unknown outcome that wrote the
// same balances, when which one landed is not known.
type bankStep struct {
	w     *writeOp
	accts []int
}

func anyUncertain(u map[int]bool, accts []int) bool {
	for _, i := range accts {
		if u[i] {
			return true
		}
	}
	return false
}

func pick(s bankState, accts []int) []int64 {
	out := make([]int64, len(accts))
	for j, i := range accts {
		out[j] = s.get(i)
	}
	return out
}

// lostTransfer explains a stale transfer: the accounts that changed since
// its read, and the transfers applied to them since the bank it read (or,
// when no applied transfer left that bank, the last writer of each).
func lostTransfer(a *analysis, r *resource, c *bankCodec, w *writeOp, x bankXfer, read, now bankState, done []bankStep, lastAt map[bankState]int) LostTransfer {
	l := LostTransfer{Key: r.key, Transfer: a.writeRef(w)}
	mine := map[int]bool{}
	var stale []string
	for _, i := range x.accts {
		mine[i] = true
		if read.get(i) != now.get(i) {
			sb := StaleBalance{Account: c.accounts[i], Read: c.show(read.get(i)), Then: c.show(now.get(i))}
			l.Stale = append(l.Stale, sb)
			stale = append(stale, fmt.Sprintf("%s was %s when read but %s by then", sb.Account, sb.Read, sb.Then))
		}
	}
	var undid []int
	if from, ok := lastAt[read]; ok {
		for k := from + 1; k < len(done); k++ {
			for _, i := range done[k].accts {
				if mine[i] {
					undid = append(undid, k)
					break
				}
			}
		}
	} else {
		seen := map[int]bool{}
		for _, sb := range l.Stale {
			i := c.index[sb.Account]
			for k := len(done) - 1; k >= 0; k-- {
				if containsInt(done[k].accts, i) {
					if !seen[k] {
						seen[k] = true
						undid = append(undid, k)
					}
					break
				}
			}
		}
		sort.Ints(undid)
	}
	var names []string
	for _, k := range undid {
		l.Count++
		if done[k].w == nil {
			if len(names) < 10 {
				names = append(names, "a transfer of unknown outcome")
			}
			continue
		}
		if len(l.Undid) < 10 {
			ref := a.writeRef(done[k].w)
			l.Undid = append(l.Undid, ref)
			names = append(names, fmt.Sprintf("%s's %s at %s", ref.Client, ref.Value, paired.Seconds(ref.End)))
		}
	}
	l.Text = fmt.Sprintf("%s was computed from stale balances (%s): it undid %d transfer(s)",
		l.Transfer.Label(), strings.Join(stale, "; "), l.Count)
	if len(names) > 0 {
		l.Text += " (" + strings.Join(names, ", ") + ")"
	}
	return l
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
