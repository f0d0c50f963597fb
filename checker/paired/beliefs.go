// Package paired reads a history the way the checkers judge it: its
// operations paired once (history.Pair), lock operations turned into the
// intervals during which clients believed they held a lock, failed and
// unknown acquires into attempts, nemesis events into fault windows, and
// operations on the protected resource tied to the lease they ran under.
// It judges nothing: the checkers (package verdict's protocol) do.
package paired

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"splitbrain/history"
)

// How a belief interval ended.
const (
	EndDeadline  = "deadline"  // the lease's validity deadline passed
	EndRelease   = "release"   // the client began to release
	EndReacquire = "reacquire" // a new lease was granted to the client
	EndOpen      = "open"      // no deadline and no release: held to the end of the history
	// EndLastOp: no release; the critical section ended with the lease's
	// last resource operation, after the deadline (P2 only).
	EndLastOp = "last-op"
)

// Belief is an interval during which a client believed it held a lock: from
// the instant it saw its acquire succeed to min(validity deadline, invoke of
// its next release of the key) — property P1, what the lock promised — and,
// for property P2, to the end of its critical section: the invoke of its
// release, or without one the completion of its last resource operation
// (CSEnd). P2 outlasts P1 when a client kept using a lease past its validity,
// as after a pause.
type Belief struct {
	Client string `json:"client"`
	Key    string `json:"key"`
	// Value is the lock value the lease was granted with, if recorded.
	Value string `json:"value,omitempty"`
	// Invoke is when the acquire (or a lapsed lease's extend) was invoked.
	Invoke int64 `json:"invoke"`
	// Start is when the client saw it succeed.
	Start int64 `json:"start"`
	// End is when the belief ended; see EndReason.
	End       int64  `json:"end"`
	EndReason string `json:"end_reason"`
	// CSEnd is when the critical section ended (P2); see CSEndReason.
	CSEnd       int64    `json:"cs_end"`
	CSEndReason string   `json:"cs_end_reason"`
	Deadline    *int64   `json:"deadline,omitempty"`
	Nodes       []string `json:"nodes,omitempty"`
	Token       *int64   `json:"token,omitempty"`
	// Extended counts the extends that pushed the deadline.
	Extended int `json:"extended,omitempty"`
	// InvokeIndex and OKIndex are the history events that opened the
	// belief; EndIndex is the release that closed it, or -1.
	InvokeIndex int64 `json:"invoke_index"`
	OKIndex     int64 `json:"ok_index"`
	EndIndex    int64 `json:"end_index"`
	// ResourceOps counts the resource operations run under the lease.
	ResourceOps int `json:"resource_ops,omitempty"`

	// lastOp is when the lease's last resource operation completed.
	lastOp int64
	// root is the belief that began the lease: itself, or for a belief
	// begun by a late extension the belief of the lease it extended. The
	// lease's resource operations are one critical section across both.
	// nil when the history has no resource operations.
	root *Belief
	// grant: an acquire's OK began the belief (not a late extension).
	grant bool
}

// Grant reports whether an acquire's OK began the belief: a grant of the
// lock, where a late extension's belief continues one.
func (b *Belief) Grant() bool { return b.grant }

// Root is the belief that began b's lease: b itself, or for a belief begun
// by a late extension the belief of the lease it extended. The lease's
// resource operations are one critical section across both. It is nil in
// a history without resource operations, where no lease has any.
func (b *Belief) Root() *Belief { return b.root }

// Attempt is an acquire whose client did not see it succeed: failed,
// unknown (info), or still pending when the history ended. Attempts are not
// checked (the client never believed it held the lock) but are shown.
type Attempt struct {
	Client string `json:"client"`
	Key    string `json:"key"`
	Invoke int64  `json:"invoke"`
	// End is the completion time; for a pending attempt, the history's end.
	End int64 `json:"end"`
	// Outcome is "fail", "info" or "pending".
	Outcome     string `json:"outcome"`
	Err         string `json:"err,omitempty"`
	InvokeIndex int64  `json:"invoke_index"`
	EndIndex    int64  `json:"end_index"`
}

// OutcomePending marks an acquire invoked but never completed.
const OutcomePending = "pending"

// KeyInfo summarises one lock key.
type KeyInfo struct {
	Key      string    `json:"key"`
	Acquired int       `json:"acquired"`
	Failed   int       `json:"failed"`
	Unknown  int       `json:"unknown"`
	Pending  int       `json:"pending,omitempty"`
	Releases int       `json:"releases"`
	Beliefs  []Belief  `json:"beliefs,omitempty"`
	Attempts []Attempt `json:"attempts,omitempty"`
}

// FaultWindow is a nemesis fault with the times it started and stopped.
type FaultWindow struct {
	history.Fault
	Start int64 `json:"start"`
	// End is the stop time, or the history's end when never healed.
	End    int64 `json:"end"`
	Healed bool  `json:"healed"`
}

// Label names the fault compactly, e.g. "clock-jump n3 +5s" or
// "cut c1→n4,n5".
func (f FaultWindow) Label() string { return FaultLabel(f.Fault) }

// History is a history as the checkers read it.
type History struct {
	// Keys are the lock keys in key order, with their beliefs and
	// attempts.
	Keys []KeyInfo
	// Clients are the processes that ran operations, the harness's init
	// and final aside, in natural order.
	Clients []string
	// Faults are the nemesis faults, with their windows.
	Faults []FaultWindow
	// End is the time of the last event.
	End int64
	// Ops are the operations on the protected resource, in invoke order,
	// each tied to the lease it ran under.
	Ops []*ResourceOp
	// Problems are inconsistencies: a history with one cannot be judged.
	Problems []string
	// Notes are oddities that do not affect a verdict.
	Notes []string
	// OutsideLease are the applied writes outside their writer's lease.
	OutsideLease []OutsideWrite
}

// Analyze reads a history; see History.
func Analyze(events []history.Event) *History {
	a := analyze(events)
	h := &History{Clients: a.clients, Faults: a.faults, End: a.end, Ops: a.ops, Problems: a.problems, Notes: a.notes}
	for _, k := range sortedKeys(a.keys) {
		h.Keys = append(h.Keys, *a.keys[k])
	}
	h.OutsideLease = outsideWrites(a.ops, h.Keys)
	if a.lapsed > 0 {
		h.Notes = append(h.Notes, lapsedNote(a.lapsed, a.firstLapsed))
	}
	return h
}

// lapsedNote notes the n grants whose validity had ended by the time
// their client was told (deadline at or before the OK), first the
// earliest: the lock said yes with nothing left to hold, so the client
// held nothing (P1 counts no such belief) — yet a client that does not
// check the validity runs its critical section anyway (P2 counts it). A
// lock that measures its validity as the TTL less the time the attempt
// took, Redlock's rule, refuses instead; one that grants whenever the
// attempt took at most the key's TTL (malkusch/lock's PHPRedisMutex) does
// not. One note for the history.
func lapsedNote(n int, first *Belief) string {
	return fmt.Sprintf("%d grant(s) came with no validity left (the lease's deadline at or before its OK): the lock said yes, the client held nothing; first: acquire by %s on %q at event %d, valid until %s, told at %s (%s late)",
		n, first.Client, first.Key, first.OKIndex, Seconds(*first.Deadline), Seconds(first.Start), Seconds(first.Start-*first.Deadline))
}

func sortedKeys(m map[string]*KeyInfo) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// analysis is what one pass over a history yields.
type analysis struct {
	keys     map[string]*KeyInfo
	faults   []FaultWindow
	clients  []string
	end      int64
	ops      []*ResourceOp // resource operations, in invoke order
	problems []string      // inconsistencies: the history cannot be judged
	notes    []string      // oddities that do not affect the verdict
	// byValue is the latest belief of each lease, by key and lock value:
	// resource operations name their lease by its value. Kept only when the
	// history has resource operations (resources): for nothing else.
	byValue   map[leaseKey]*Belief
	resources bool
	// held is the one active belief of each client on each key (as a
	// procKey of the client's name): a new lease replaces it.
	held map[procKey]procKey
	// lapsed counts the grants whose deadline was at or before their OK,
	// firstLapsed the earliest (lapsedNote).
	lapsed      int
	firstLapsed *Belief
}

type procKey struct{ process, key string }

type leaseKey struct{ key, value string }

// ResourceOp is one operation on the protected resource: an invoke and its
// completion, and the lease it ran under.
type ResourceOp struct {
	Inv  *history.Event // the invoke
	Done *history.Event // the completion; nil while pending
	// Lease is the belief of the lease the op ran under (see leaseOf); nil
	// for the harness's initial writes and final reads, and for an
	// operation outside any lease.
	Lease *Belief
}

// Type is the completion's type; "" while pending.
func (o *ResourceOp) Type() history.Type {
	if o.Done == nil {
		return ""
	}
	return o.Done.Type
}

// isResource reports whether f acts on the protected resource.
func IsResource(f history.Func) bool {
	return f == history.Read || f == history.Write || f == history.Transfer || f == history.Add
}

// analyze walks the history's operations (paired once, by history.Pair) in
// the order of their events and turns lock operations into belief
// intervals and attempts, resource operations into resourceOps tied to
// their leases, and nemesis events into fault windows.
func analyze(events []history.Event) *analysis {
	a := &analysis{keys: map[string]*KeyInfo{}, byValue: map[leaseKey]*Belief{}, held: map[procKey]procKey{}}
	a.presize(events)
	pairing := history.Pair(events)
	// The time order and the pairing are two checks of one history; their
	// problems are told in history order.
	problems := pairing.Problems
	resOps := map[int]*ResourceOp{} // by index in pairing.Ops
	procs := map[string]bool{}
	active := map[procKey]*Belief{}
	openFaults := map[int]int{} // fault ID → index in a.faults
	var last int64
	for i := range events {
		e := &events[i]
		for len(problems) > 0 && problems[0].At < i {
			a.problem(problems[0].Text)
			problems = problems[1:]
		}
		if e.Time < last {
			a.problem(fmt.Sprintf("event %d at %s is earlier than the event before it (%s)", e.Index, Seconds(e.Time), Seconds(last)))
		}
		for len(problems) > 0 && problems[0].At == i {
			a.problem(problems[0].Text)
			problems = problems[1:]
		}
		last = max(last, e.Time)
		if i == 0 || e.Time > a.end {
			a.end = e.Time
		}
		if e.Harness() {
			// Whether the run was complete is the caller's to judge
			// (checker.Incomplete), the lock's setup the liveness
			// checks', a stall the checker's notes: none is an
			// operation.
			continue
		}
		if e.F == history.Nemesis || e.Process == history.ProcessNemesis {
			a.nemesis(*e, openFaults)
			continue
		}
		k := pairing.OpOf(i)
		if k < 0 {
			procs[e.Process] = true
			continue // a completion of nothing: a problem
		}
		if e.Type == history.Invoke {
			// A completion's process is its invoke's.
			procs[e.Process] = true
			if IsResource(e.F) {
				op := &ResourceOp{Inv: e, Lease: a.leaseOf(e, active)}
				if op.Lease != nil {
					op.Lease.ResourceOps++
				}
				a.ops = append(a.ops, op)
				resOps[k] = op
			}
			a.invoke(e, i, active)
			continue
		}
		if op := resOps[k]; IsResource(e.F) && op != nil {
			op.Done = e
			if op.Lease != nil {
				op.Lease.lastOp = max(op.Lease.lastOp, e.Time)
			}
			continue
		}
		inv := pairing.Ops[k].Invoke
		a.complete(inv, e, active)
	}
	for _, k := range pairing.Pending {
		if op := resOps[k]; op != nil && op.Lease != nil {
			// Still in flight when the history ended: the critical
			// section lasted at least that long.
			op.Lease.lastOp = max(op.Lease.lastOp, a.end)
		}
	}
	for _, k := range pairing.Pending {
		if inv := pairing.Ops[k].Invoke; inv.F == history.Acquire {
			k := a.key(inv.Key)
			k.Pending++
			k.Attempts = append(k.Attempts, Attempt{Client: inv.Process, Key: inv.Key, Invoke: inv.Time,
				End: a.end, Outcome: OutcomePending, InvokeIndex: inv.Index, EndIndex: -1})
		}
	}
	for _, pk := range sortedActive(active) {
		a.close(active, pk, a.end, -1, "")
	}
	for i := range a.faults {
		if !a.faults[i].Healed {
			a.faults[i].End = max(a.end, a.faults[i].Start)
		}
	}
	for c := range procs {
		if c != history.ProcessInit && c != history.ProcessFinal {
			a.clients = append(a.clients, c)
		}
	}
	SortNatural(a.clients)
	for _, k := range a.keys {
		slices.SortStableFunc(k.Beliefs, func(x, y Belief) int { return cmp.Compare(x.Start, y.Start) })
		slices.SortStableFunc(k.Attempts, func(x, y Attempt) int { return cmp.Compare(x.Invoke, y.Invoke) })
	}
	return a
}

// presize counts the acquire completions of each key so that its beliefs
// and attempts are allocated once: on a history of millions of events,
// growing them is most of the analysis's time and garbage.
func (a *analysis) presize(events []history.Event) {
	type count struct{ ok, other int }
	counts := map[string]*count{}
	for i := range events {
		e := &events[i]
		if IsResource(e.F) {
			a.resources = true
		}
		if e.F != history.Acquire || e.Type == history.Invoke {
			continue
		}
		c := counts[e.Key]
		if c == nil {
			c = &count{}
			counts[e.Key] = c
		}
		if e.Type == history.OK {
			c.ok++
		} else {
			c.other++
		}
	}
	for k, c := range counts {
		info := a.key(k)
		info.Beliefs = make([]Belief, 0, c.ok)
		info.Attempts = make([]Attempt, 0, c.other)
	}
}

func (a *analysis) problem(s string) { a.problems = append(a.problems, s) }

func (a *analysis) key(k string) *KeyInfo {
	info, ok := a.keys[k]
	if !ok {
		info = &KeyInfo{Key: k}
		a.keys[k] = info
	}
	return info
}

func (a *analysis) nemesis(e history.Event, open map[int]int) {
	f, err := e.Fault()
	if err != nil {
		a.notes = append(a.notes, fmt.Sprintf("nemesis event %d ignored: %v", e.Index, err))
		return
	}
	switch f.Phase {
	case history.PhaseStart:
		if _, dup := open[f.ID]; dup {
			a.notes = append(a.notes, fmt.Sprintf("fault %d started again at event %d before it stopped", f.ID, e.Index))
		}
		open[f.ID] = len(a.faults)
		a.faults = append(a.faults, FaultWindow{Fault: f, Start: e.Time, End: e.Time})
	case history.PhaseStop:
		i, ok := open[f.ID]
		if !ok {
			a.notes = append(a.notes, fmt.Sprintf("fault %d stopped at event %d without having started", f.ID, e.Index))
			return
		}
		delete(open, f.ID)
		a.faults[i].End = e.Time
		a.faults[i].Healed = true
	default:
		a.notes = append(a.notes, fmt.Sprintf("nemesis event %d has phase %q, want start or stop", e.Index, f.Phase))
	}
}

func (a *analysis) invoke(e *history.Event, pos int, active map[procKey]*Belief) {
	if e.F == history.Release {
		a.key(e.Key).Releases++
		a.close(active, holderOf(active, e), e.Time, e.Index, EndRelease)
	}
}

func (a *analysis) complete(inv, e *history.Event, active map[procKey]*Belief) {
	pk := procKey{inv.Process, inv.Key}
	switch inv.F {
	case history.Acquire:
		k := a.key(inv.Key)
		switch e.Type {
		case history.OK:
			a.plausible(inv, e)
			k.Acquired++
			// A lease ends at its deadline, its release or its
			// replacement by a granted lease — not at a new attempt:
			// the client keeps the lease it has until a new one is
			// granted (workload.Client replaces it only then), so a
			// refused or unknown re-acquire leaves the old belief whole.
			b := a.newBelief(inv, e)
			if b.Deadline != nil && *b.Deadline <= b.Start {
				if a.lapsed++; a.firstLapsed == nil {
					a.firstLapsed = b
				}
			}
			a.hold(active, pk, b, e.Index)
		case history.Fail, history.Info:
			if e.Type == history.Fail {
				k.Failed++
			} else {
				k.Unknown++
			}
			k.Attempts = append(k.Attempts, Attempt{Client: inv.Process, Key: inv.Key, Invoke: inv.Time,
				End: e.Time, Outcome: string(e.Type), Err: e.Err, InvokeIndex: inv.Index, EndIndex: e.Index})
		}
	case history.Extend:
		if e.Type != history.OK || e.Deadline == nil {
			return
		}
		a.plausible(inv, e)
		pk = holderOf(active, inv)
		b, ok := active[pk]
		switch {
		case ok && (b.Deadline == nil || e.Time < *b.Deadline):
			// In time: the validity ends at the deadline, so an OK at
			// the deadline comes too late, as a grant whose deadline is
			// at its OK has lapsed.
			if b.Deadline == nil || *e.Deadline > *b.Deadline {
				d := *e.Deadline
				b.Deadline = &d
			}
			b.Extended++
		default:
			// The lease had lapsed before the extend came back. Redlock
			// never re-acquires an expired key, but if the lock said yes,
			// the client believes again from here: that is a new claim.
			a.close(active, pk, e.Time, -1, "")
			a.key(inv.Key).Acquired++
			a.hold(active, procKey{inv.Process, inv.Key}, a.newBelief(inv, e), e.Index)
			a.notes = append(a.notes, fmt.Sprintf("extend by %s at event %d succeeded after its lease had lapsed", inv.Process, e.Index))
		}
	}
}

// driftAllowance is what Redlock takes off a lease's validity for clock
// drift (DESIGN.md): 1% of the TTL plus 2ms. Here it is slack: no lock
// grants more than the TTL from an instant before its OK.
func driftAllowance(ttl int64) int64 { return ttl/100 + int64(2*time.Millisecond) }

// plausible records as a problem a deadline that no lock could have granted
// on the harness's one clock: a lock measures the validity from an instant
// at or after the invoke and before the OK, and grants at most the TTL from
// there. So the deadline is neither before the invoke nor later than the
// OK + TTL + drift allowance (the TTL the invoke records; without it only
// the first bound is known). The bound counts from the OK, not the invoke:
// a lock set to retry begins its last attempt long after the invoke. Such
// a deadline is a broken history — a wrong clock or a bug of the lock's
// adapter — and a violation found from it would be made up.
func (a *analysis) plausible(inv, ok *history.Event) {
	if ok.Deadline == nil {
		return
	}
	d := *ok.Deadline
	switch {
	case d < inv.Time:
		a.problem(fmt.Sprintf("event %d: %s by %s granted a lease valid until %s, before the %s was invoked at %s (event %d)",
			ok.Index, ok.F, ok.Process, Seconds(d), inv.F, Seconds(inv.Time), inv.Index))
	case inv.TTL > 0 && d-inv.TTL-driftAllowance(inv.TTL) > ok.Time:
		a.problem(fmt.Sprintf("event %d: %s by %s granted a lease valid until %s, later than its OK at %s plus the TTL (%s) and the drift allowance (%s)",
			ok.Index, ok.F, ok.Process, Seconds(d), Seconds(ok.Time), Seconds(inv.TTL), Seconds(driftAllowance(inv.TTL))))
	}
}

// newBelief begins a belief at an acquire's (or a late extension's) OK. A
// belief of a lock value already granted on the key continues that lease
// (a late extension: the same lease, believed again).
func (a *analysis) newBelief(inv, ok *history.Event) *Belief {
	b := &Belief{Client: inv.Process, Key: inv.Key, Value: lockValue(inv, ok), Invoke: inv.Time, Start: ok.Time,
		Deadline: ok.Deadline, Nodes: ok.Nodes, Token: ok.Token,
		InvokeIndex: inv.Index, OKIndex: ok.Index, EndIndex: -1, grant: inv.F == history.Acquire}
	if !a.resources {
		// Nothing runs under a lease, so nothing asks for its root; a
		// root pointer would keep this belief alive beside the copy the
		// key keeps of it (close), some 70 MB of a million-operation
		// history of many keys.
		return b
	}
	b.root = b
	if b.Value == "" {
		return b
	}
	lk := leaseKey{b.Key, b.Value}
	if prev := a.byValue[lk]; prev != nil && inv.F == history.Extend {
		b.root = prev.root
	}
	a.byValue[lk] = b
	return b
}

// leaseOf finds the lease a resource operation ran under. The operation
// names it by its lock value (Event.Lease, what the client believed it
// held), which ties it to its lease wherever it was made: after the
// lease's deadline or release, or under the process id a client continues
// as after an unknown outcome. A history that does not record the value
// falls back to the process: the belief it holds on the key, if any.
func (a *analysis) leaseOf(e *history.Event, active map[procKey]*Belief) *Belief {
	if e.Lease == "" {
		return active[procKey{e.Process, e.Key}]
	}
	if b := a.byValue[leaseKey{e.Key, e.Lease}]; b != nil {
		return b
	}
	a.notes = append(a.notes, fmt.Sprintf("%s by %s on %q at event %d names lease %q, which no acquire of %q was granted",
		e.F, e.Process, e.Key, e.Index, e.Lease, e.Key))
	return nil
}

// close ends pk's belief at min(deadline, at) for P1 and its critical
// section at at for P2. reason says why the client stopped at at
// (EndRelease, EndReacquire); "" means nothing the client did ended it (the
// history ran out, or the lease lapsed), so only the deadline can end P1, and
// P2 ends with the lease's last resource operation if that came later.
func (a *analysis) close(active map[procKey]*Belief, pk procKey, at, index int64, reason string) {
	b := active[pk]
	delete(active, pk)
	if b == nil {
		return
	}
	if ck := (procKey{history.ClientOf(pk.process), pk.key}); a.held[ck] == pk {
		delete(a.held, ck)
	}
	switch {
	case b.Deadline != nil && (reason == "" || *b.Deadline <= at):
		b.End, b.EndReason = *b.Deadline, EndDeadline
	case reason == "":
		b.End, b.EndReason = at, EndOpen
	default:
		b.End, b.EndReason, b.EndIndex = at, reason, index
	}
	// A deadline that passed before the client even saw the grant leaves
	// an empty belief, not a negative one.
	if b.End < b.Start {
		b.End = b.Start
	}
	switch {
	case reason != "":
		b.CSEnd, b.CSEndReason = max(at, b.Start), reason
	case b.EndReason != EndOpen && b.lastOp > b.End:
		b.CSEnd, b.CSEndReason = b.lastOp, EndLastOp
	default:
		b.CSEnd, b.CSEndReason = b.End, b.EndReason
	}
	k := a.key(pk.key)
	k.Beliefs = append(k.Beliefs, *b)
}

// hold makes b, a new lease granted to pk's process at event index, the
// belief its client holds on the key, ending the one it held: a client
// holds one lease per key, whatever process it continues as after unknown
// outcomes (c1.2 is c1, holding what c1 held; workload.Client keeps its
// leases across them).
func (a *analysis) hold(active map[procKey]*Belief, pk procKey, b *Belief, index int64) {
	ck := procKey{history.ClientOf(pk.process), pk.key}
	if old, ok := a.held[ck]; ok {
		a.close(active, old, b.Start, index, EndReacquire)
	}
	active[pk] = b
	a.held[ck] = pk
}

// holderOf finds the belief a release or extend acts on. The lock value
// identifies the lease even when the client has since continued under a new
// process id (after an unknown outcome, as in Jepsen); without a value, the
// process and key do.
func holderOf(active map[procKey]*Belief, e *history.Event) procKey {
	pk := procKey{e.Process, e.Key}
	v := stringValue(e)
	if v == "" {
		return pk
	}
	if b := active[pk]; b != nil && b.Value == v {
		return pk
	}
	for k, b := range active {
		if b.Key == e.Key && b.Value == v {
			return k
		}
	}
	return pk
}

func lockValue(inv, ok *history.Event) string {
	if v := stringValue(ok); v != "" {
		return v
	}
	return stringValue(inv)
}

// stringValue is e.StringValue without the JSON decoder for the common case
// (a quoted string without escapes): it runs for every acquire and release
// of long histories.
func stringValue(e *history.Event) string {
	v := e.Value
	if len(v) == 0 {
		return ""
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && !bytes.ContainsAny(v[1:len(v)-1], `"\`) {
		return string(v[1 : len(v)-1])
	}
	return e.StringValue()
}

func sortedActive(m map[procKey]*Belief) []procKey {
	out := make([]procKey, 0, len(m))
	for pk := range m {
		out = append(out, pk)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].process != out[j].process {
			return out[i].process < out[j].process
		}
		return out[i].key < out[j].key
	})
	return out
}
