package resource

import (
	"fmt"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/shopspring/decimal"

	"splitbrain/checker/paired"
	"splitbrain/checker/search"
	"splitbrain/checker/verdict"
	"splitbrain/history"
)

// BankResult is the outcome of the bank check: every critical section was
// an atomic read-then-write (no transfer computed from stale balances was
// applied), and the total is conserved and no balance is negative, in every
// read and after every applied transfer, in exact decimal arithmetic.
type BankResult struct {
	Verdict verdict.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
	Keys    []BankKey       `json:"keys"`
	// BadReads counts reads that saw a wrong total or a negative balance.
	BadReads int `json:"bad_reads"`
	// Violations lists the first transfer that broke each bank's total
	// and the bad reads (at most verdict.MaxViolations).
	Violations []BankViolation `json:"violations,omitempty"`
	// Ops is the number of porcupine operations checked.
	Ops int `json:"ops"`
	// LostTransfers counts the applied transfers that a stale transfer
	// undid; Lost lists the stale transfers (at most verdict.MaxViolations).
	LostTransfers int            `json:"lost_transfers"`
	Lost          []LostTransfer `json:"lost,omitempty"`
}

// BankKey summarises one bank.
type BankKey struct {
	Key      string `json:"key"`
	Accounts int    `json:"accounts"`
	// Total is the initial total, which every read should see.
	Total string `json:"total"`
	// Final is the last final read, if there was one.
	Final      history.Balances `json:"final,omitempty"`
	FinalTotal string           `json:"final_total,omitempty"`
	Applied    int              `json:"applied"`
	Rejected   int              `json:"rejected"`
	Unknown    int              `json:"unknown"`
}

// BankViolation is a read or a transfer that left the bank inconsistent.
type BankViolation struct {
	Key string `json:"key"`
	// Kind is "transfer" (the first applied transfer after which the
	// storage's state broke the invariant) or "read".
	Kind   string `json:"kind"`
	Client string `json:"client"`
	At     int64  `json:"at"`
	// Total is the total after the transfer or seen by the read.
	Total    string   `json:"total"`
	Negative []string `json:"negative,omitempty"`
	Write    *Write   `json:"write,omitempty"`
	Text     string   `json:"text"`
}

type balances map[string]decimal.Decimal

func parseBalances(b history.Balances) (balances, error) {
	out := make(balances, len(b))
	for a, v := range b {
		d, err := decimal.NewFromString(v)
		if err != nil {
			return nil, fmt.Errorf("account %s: %q is not a decimal", a, v)
		}
		out[a] = d
	}
	return out, nil
}

func (b balances) total() decimal.Decimal {
	t := decimal.Zero
	for _, v := range b {
		t = t.Add(v)
	}
	return t
}

func (b balances) negative() []string {
	var out []string
	for a, v := range b {
		if v.IsNegative() {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

func (b balances) show(accts ...string) string {
	parts := make([]string, len(accts))
	for i, a := range accts {
		parts[i] = a + "=" + b[a].StringFixed(2)
	}
	return strings.Join(parts, ", ")
}

func checkBank(a *analysis, rs []*resource, cfg search.Config) (*BankResult, func([]paired.FaultWindow) *search.Window) {
	res := &BankResult{}
	money, moneyUnknown, valid := eachKey(rs, func(r *resource) (verdict.Verdict, string) { return bankKey(a, r, res) })
	atomic, atomicUnknown, outcome, pieces := bankAtomic(a, rs, cfg, res)

	var invalid []string
	if atomic == verdict.Invalid {
		invalid = append(invalid, lostTransfersReason(res, outcome))
	}
	if money == verdict.Invalid {
		var texts []string
		for _, v := range res.Violations {
			if v.Kind == "transfer" {
				texts = append(texts, v.Text)
			}
		}
		if len(texts) == 0 {
			texts = append(texts, res.Violations[0].Text)
		}
		invalid = append(invalid, fmt.Sprintf("money not conserved (%d bad read(s)): %s", res.BadReads, paired.JoinFirst(texts, 2)))
	}
	res.Verdict = verdictOf(money, atomic)
	switch res.Verdict {
	case verdict.Invalid:
		res.Reason = strings.Join(invalid, "; ") + a.unguarded(rs)
	case verdict.Unknown:
		res.Reason = "the bank cannot be judged: " + paired.JoinFirst(append(moneyUnknown, atomicUnknown...), 3)
	default:
		res.Reason = strings.Join(valid, "; ") + "; every transfer was an atomic read-then-write, none lost"
	}
	if len(res.Violations) > verdict.MaxViolations {
		res.Violations = res.Violations[:verdict.MaxViolations]
	}
	if len(res.Lost) > verdict.MaxViolations {
		res.Lost = res.Lost[:verdict.MaxViolations]
	}
	if atomic != verdict.Invalid {
		return res, nil
	}
	timeout, lost := cfg.Timeout, res.Lost
	return res, func(faults []paired.FaultWindow) *search.Window {
		stale := make([]Write, len(lost))
		for i, l := range lost {
			stale[i] = l.Transfer
		}
		return failingWindow(BankModel(), pieces, func(p []porcupine.Operation) bool { return holdsStale(p, stale) }, faults, timeout)
	}
}

// bankAtomic checks every bank's critical sections with porcupine and finds
// the stale transfers in the storage's order; it returns the verdict, why
// it is unknown, porcupine's outcome and the pieces it checked.
func bankAtomic(a *analysis, rs []*resource, cfg search.Config, res *BankResult) (verdict.Verdict, []string, porcupine.CheckResult, [][]porcupine.Operation) {
	clients := a.resourceClients()
	var pieces, batches [][]porcupine.Operation
	var problems []string
	for _, r := range rs {
		var ib history.Balances
		if r.init.ev.Decode(&ib) != nil {
			continue // bankKey says why
		}
		init, err := parseBalances(ib)
		if err != nil {
			continue
		}
		be, err := decodeBank(a, r, init)
		if err != nil {
			problems = append(problems, fmt.Sprintf("bank %q: its critical sections cannot be checked: %v", r.key, err))
			continue
		}
		ops := bankOps(a, r, be, clients)
		res.Ops += len(ops)
		kp := bankPieces(ops, bankAfter(r, be), r.init.ack.Seq, r.key)
		pieces = append(pieces, kp...)
		// Pieces of different banks overlap in time: batch per key.
		batches = append(batches, search.Batch(kp, search.BatchOps)...)
		lost := bankReplay(a, r, be)
		for _, l := range lost {
			res.LostTransfers += l.Count
		}
		res.Lost = append(res.Lost, lost...)
	}
	outcome := porcupine.Ok
	if len(pieces) > 0 {
		model := BankModel()
		model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return batches }
		outcome, _ = cfg.Run(model, nil, cfg.Timeout)
	}
	switch {
	case outcome == porcupine.Illegal || len(res.Lost) > 0:
		return verdict.Invalid, nil, outcome, pieces
	case len(problems) > 0:
		return verdict.Unknown, problems, outcome, pieces
	case outcome == porcupine.Unknown:
		return verdict.Unknown, []string{fmt.Sprintf("porcupine did not finish checking the bank's critical sections within %s", cfg.Timeout)}, outcome, pieces
	}
	return verdict.Valid, nil, outcome, pieces
}

func lostTransfersReason(res *BankResult, outcome porcupine.CheckResult) string {
	if len(res.Lost) == 0 {
		return "lost transfers: porcupine found no order of the critical sections in which each read-then-transfer was atomic"
	}
	texts := make([]string, len(res.Lost))
	for i, l := range res.Lost {
		texts[i] = l.Text
	}
	s := fmt.Sprintf("%d transfer(s) lost: %s", res.LostTransfers, paired.JoinFirst(texts, 3))
	if outcome != porcupine.Illegal {
		s += fmt.Sprintf(" (porcupine: %s)", strings.ToLower(string(outcome)))
	}
	return s
}

// bankKey checks one bank and adds its violations to res.
func bankKey(a *analysis, r *resource, res *BankResult) (verdict.Verdict, string) {
	k := BankKey{Key: r.key}
	defer func() { res.Keys = append(res.Keys, k) }()
	k.Applied, k.Rejected, k.Unknown = r.outcomes()
	var ib history.Balances
	if err := r.init.ev.Decode(&ib); err != nil {
		return verdict.Unknown, err.Error()
	}
	init, err := parseBalances(ib)
	if err != nil {
		return verdict.Unknown, fmt.Sprintf("bank %q initial balances: %v", r.key, err)
	}
	total := init.total()
	k.Accounts, k.Total = len(init), total.StringFixed(2)
	kv := verdict.Valid

	// Every read must see the whole total and no negative balance.
	for _, op := range r.reads {
		ev, done := op.inv, op.done
		var rb history.Balances
		if err := done.Decode(&rb); err != nil {
			a.notes = append(a.notes, err.Error())
			continue
		}
		b, err := parseBalances(rb)
		if err != nil {
			a.notes = append(a.notes, fmt.Sprintf("event %d: %v", done.Index, err))
			continue
		}
		if op == r.lastFinal() {
			k.Final, k.FinalTotal = rb, b.total().StringFixed(2)
		}
		t, neg := b.total(), b.negative()
		if t.Equal(total) && len(neg) == 0 {
			continue
		}
		kv = verdict.Invalid
		res.BadReads++
		text := fmt.Sprintf("%s read bank %q at %s: total %s, not %s", ev.Process, r.key, paired.Seconds(done.Time), t.StringFixed(2), total.StringFixed(2))
		if len(neg) > 0 {
			text += "; negative: " + b.show(neg...)
		}
		res.Violations = append(res.Violations, BankViolation{Key: r.key, Kind: "read", Client: ev.Process, At: done.Time,
			Total: t.StringFixed(2), Negative: neg, Text: text})
	}

	if v := firstBrokenTransfer(a, r, init, total); v != nil {
		kv = verdict.Invalid
		// The transfer comes first: it is the cause, the reads the effect.
		res.Violations = append([]BankViolation{*v}, res.Violations...)
	}
	if kv == verdict.Invalid {
		return verdict.Invalid, ""
	}
	if r.lastFinal() == nil {
		return verdict.Valid, fmt.Sprintf("bank %q: %d transfer(s) applied, total %s conserved in every read (no final read)", r.key, k.Applied, k.Total)
	}
	return verdict.Valid, fmt.Sprintf("bank %q: %d transfer(s) applied, total %s conserved, no negative balance", r.key, k.Applied, k.Total)
}

// firstBrokenTransfer applies the applied transfers in the storage's order
// and returns the first after which the total differs or a balance is
// negative, explained by the balances it was computed from. A gap in the
// seqs (a transfer of unknown outcome landed) ends the replay: what it wrote
// is not known for sure.
func firstBrokenTransfer(a *analysis, r *resource, init balances, total decimal.Decimal) *BankViolation {
	state := make(balances, len(init))
	for acct, v := range init {
		state[acct] = v
	}
	lastWriter := map[string]*writeOp{}
	seq := r.init.ack.Seq
	for _, w := range r.applied() {
		if w == r.init {
			continue
		}
		if w.ack.Seq != seq+1 {
			return nil
		}
		seq = w.ack.Seq
		var t history.TransferValue
		if err := w.ev.Decode(&t); err != nil {
			a.notes = append(a.notes, err.Error())
			return nil
		}
		nb, err := parseBalances(t.Balances)
		if err != nil {
			a.notes = append(a.notes, fmt.Sprintf("event %d: %v", w.ev.Index, err))
			return nil
		}
		before := make(balances, len(nb))
		for acct, v := range nb {
			before[acct] = state[acct]
			state[acct] = v
		}
		tot, neg := state.total(), state.negative()
		if tot.Equal(total) && len(neg) == 0 {
			for acct := range nb {
				lastWriter[acct] = w
			}
			continue
		}
		ref := a.writeRef(w)
		var b strings.Builder
		fmt.Fprintf(&b, "%s broke bank %q: ", ref.Label(), r.key)
		if rb := readBalances(a, w); rb != nil {
			var stale []string
			for _, acct := range sortedAccounts(nb) {
				if !rb[acct].Equal(before[acct]) {
					who := "an earlier transfer"
					if lw := lastWriter[acct]; lw != nil {
						who = fmt.Sprintf("%s's transfer at %s", lw.ev.Process, paired.Seconds(a.writeRef(lw).End))
					}
					stale = append(stale, fmt.Sprintf("%s was %s when read but %s by then (%s)",
						acct, rb[acct].StringFixed(2), before[acct].StringFixed(2), who))
				}
			}
			if len(stale) > 0 {
				fmt.Fprintf(&b, "it was computed from stale balances (%s); ", strings.Join(stale, "; "))
			}
		}
		fmt.Fprintf(&b, "the total became %s instead of %s", tot.StringFixed(2), total.StringFixed(2))
		if len(neg) > 0 {
			fmt.Fprintf(&b, "; negative: %s", state.show(neg...))
		}
		return &BankViolation{Key: r.key, Kind: "transfer", Client: w.ev.Process, At: ref.End,
			Total: tot.StringFixed(2), Negative: neg, Write: &ref, Text: b.String()}
	}
	return nil
}

// readBalances are the balances a transfer was computed from.
func readBalances(a *analysis, w *writeOp) balances {
	if w.read == nil {
		return nil
	}
	var rb history.Balances
	if w.read.done.Decode(&rb) != nil {
		return nil
	}
	b, err := parseBalances(rb)
	if err != nil {
		return nil
	}
	return b
}

func sortedAccounts(b balances) []string {
	out := make([]string, 0, len(b))
	for a := range b {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

func bankProperty(b *BankResult, window func([]paired.FaultWindow) *search.Window, faults []paired.FaultWindow) verdict.Property {
	p := verdict.Property{Name: Bank, Verdict: b.Verdict, Reason: b.Reason, Decides: true}
	p.Numbers = verdict.Count(nil, b.LostTransfers, "lost transfer", "lost transfers", true)
	p.Numbers = verdict.Count(p.Numbers, b.BadReads, "read with a wrong total or a negative balance", "reads with a wrong total or a negative balance", b.BadReads > 0)
	var applied, rejected, unknown int
	for _, k := range b.Keys {
		applied, rejected, unknown = applied+k.Applied, rejected+k.Rejected, unknown+k.Unknown
	}
	p.Numbers = writeCounts(p.Numbers, applied, rejected, unknown)
	if window != nil {
		p.Window = func() *search.Window { return window(faults) }
	}
	return p
}
