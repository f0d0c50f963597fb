package checker_test

// The reference check: a deliberately simple, brute-force judge of lease
// exclusion (P1) and of the counter (no lost update), written apart from
// the checker (this is package checker_test: it sees only Check), run
// against checker.Check on many small random histories. The two must agree
// on every one; a disagreement prints the history.
//
// The judge works from the rules of DESIGN.md and issue 14 straight:
//
//   - A lease's belief runs from its grant's OK to the earliest of its
//     validity deadline (pushed by extends that came back before it), the
//     invoke of a release naming it, and the OK of a newer grant to the
//     same client on the key (c1.2 is c1 after two unknown outcomes,
//     holding what c1 held). An extend that came back at or after the
//     deadline starts a new belief of the same lease. A grant whose
//     deadline had passed by its OK (or was at it) carries no belief. Two
//     clients' beliefs on one key must not share an instant that lies
//     inside either of them (touching ends are fine); the judge looks at
//     every instant the history names and every midpoint between two.
//   - A history with a deadline before its invoke, or later than its OK +
//     TTL + drift allowance, is inconsistent: unknown.
//   - The counter: every read and write belongs to the lease it names (or,
//     naming none, to the lease its process holds; or to the process's run
//     of operations outside any lease); a write is computed from the last
//     read before it in that section. The history is free of lost updates
//     if some order of the sections' read-then-writes and the harness's
//     final reads respects real time and the storage's order of applied
//     writes (each applied write's seq; writes of unknown outcome applied
//     or not), with every read seeing the current value. The judge tries
//     every order.
//
// make test runs 2000 histories here (about 1 s; 3 s under -race) and the
// full count in `make fuzz` (10 000 other seeds, about 2 s); by hand:
// go test ./checker -run TestReferenceCheck -reference.n 10000 -v
// (-reference.seed N starts elsewhere; -v prints what the histories hit).

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
)

var (
	referenceN    = flag.Int("reference.n", 2000, "random histories the reference check compares")
	referenceSeed = flag.Uint64("reference.seed", 1, "first seed of the reference check")
)

const (
	ms     = int64(time.Millisecond)
	refTTL = 10 * ms
)

func refDrift(ttl int64) int64 { return ttl/100 + 2*ms }

// ---- the generator -------------------------------------------------------

// refGen simulates 2–4 workload clients on 1–2 keys against a lock that is
// sometimes wrong (it grants a held key) and a storage that is a plain
// register applying each write at its completion, with every outcome the
// workload records: unknown acquires, extends, releases and writes (the
// client continues as a new process), refused extends, late extensions,
// releases that fail, grants that had lapsed by their OK, and now and then
// a write made after its lease's release or with none.
type refGen struct {
	r       *rand.Rand
	now     int64
	events  []history.Event
	named   bool // resource operations name their lease (else: an older history)
	ttl     bool // acquires and extends record the TTL
	odd     int  // 0: all deadlines plausible; else which edge one grant sits on
	keys    []string
	clients []*refClient
	live    map[string]map[string]int64 // key → value → expiry, as the lock sees it
	// tokens: the lock hands out fencing tokens, mostly increasing per
	// key (lastToken), now and then one equal to the last or below it.
	tokens    bool
	lastToken map[string]int64
	store     map[string]*refStore
	values    int
	feats     map[string]bool
}

type refStore struct{ value, seq int64 }

type refClient struct {
	name, process string
	restart       int
	leases        map[string]*refLease // what it believes it holds, by key
	old           map[string]*refLease // the last lease it held, by key
	read          map[string]int64     // the last value it read, by key
	pend          *refPend
}

type refLease struct {
	key, value, process string
	deadline            int64
	fresh               bool // the client read under it
}

type refPend struct {
	f     history.Func
	key   string
	inv   int64
	lease *refLease
	value int64
}

func (g *refGen) emit(e history.Event) {
	e.Index, e.Time = int64(len(g.events)), g.now
	g.events = append(g.events, e)
}

func (g *refGen) pct(p int) bool { return g.r.IntN(100) < p }

func newRefGen(seed uint64) *refGen {
	r := rand.New(rand.NewPCG(seed, 0x7e1))
	g := &refGen{r: r, named: r.IntN(4) > 0, ttl: r.IntN(4) > 0, live: map[string]map[string]int64{},
		store: map[string]*refStore{}, feats: map[string]bool{}, tokens: r.IntN(2) > 0, lastToken: map[string]int64{}}
	if g.pct(6) {
		g.odd = 1 + r.IntN(4)
	}
	for i := range 1 + r.IntN(2) {
		g.keys = append(g.keys, fmt.Sprintf("k%d", i+1))
	}
	for i := range 2 + r.IntN(3) {
		name := fmt.Sprintf("c%d", i+1)
		g.clients = append(g.clients, &refClient{name: name, process: name, leases: map[string]*refLease{},
			old: map[string]*refLease{}, read: map[string]int64{}})
	}
	return g
}

func (g *refGen) history() []history.Event {
	for _, k := range g.keys {
		g.live[k] = map[string]int64{}
		g.store[k] = &refStore{value: 0, seq: 1}
		g.emit(history.Event{Process: history.ProcessInit, Type: history.Invoke, F: history.Write, Key: k, Value: history.MustValue(0)})
		g.emit(history.Event{Process: history.ProcessInit, Type: history.OK, F: history.Write, Key: k, Value: history.MustValue(history.Ack{Seq: 1})})
	}
	steps := 6 + g.r.IntN(22)
	for range steps {
		// Steps of 0 make ties: events at one instant, deadlines at an OK.
		g.now += int64(g.r.IntN(3)) * ms
		c := g.clients[g.r.IntN(len(g.clients))]
		if c.pend != nil {
			g.complete(c)
		} else {
			g.start(c)
		}
	}
	leavePending := g.pct(50)
	for _, c := range g.clients {
		if c.pend == nil {
			continue
		}
		if leavePending {
			g.feats["pending"] = true
			if c.pend.f == history.Write && g.pct(50) {
				// It landed, unseen.
				g.store[c.pend.key].value = c.pend.value
				g.apply(c.pend.key)
			}
			continue
		}
		g.now += int64(g.r.IntN(2)) * ms
		g.complete(c)
	}
	g.now += ms
	for _, k := range g.keys {
		g.emit(history.Event{Process: history.ProcessFinal, Type: history.Invoke, F: history.Read, Key: k})
		g.emit(history.Event{Process: history.ProcessFinal, Type: history.OK, F: history.Read, Key: k, Value: history.MustValue(g.store[k].value)})
	}
	return g.events
}

func (g *refGen) apply(key string) int64 {
	s := g.store[key]
	s.seq++
	return s.seq
}

func (g *refGen) start(c *refClient) {
	key := g.keys[g.r.IntN(len(g.keys))]
	// In key order: ranging over the map would draw in Go's random map
	// order, and the same seed would not give the same history.
	for _, k := range slices.Sorted(maps.Keys(c.leases)) {
		if g.pct(70) {
			key = k
		}
	}
	l := c.leases[key]
	p := &refPend{key: key, inv: g.now, lease: l}
	// Under a lease mostly read, then write what was read plus one.
	read, write, extend, release := 6, 12, 0, 0
	switch {
	case l != nil && !l.fresh:
		read, write, extend, release = 55, 65, 75, 92
	case l != nil:
		read, write, extend, release = 8, 60, 70, 93
	}
	switch roll := g.r.IntN(100); {
	case roll < read:
		p.f = history.Read
	case roll < write:
		p.f = history.Write
		p.value = 1
		if v, ok := c.read[key]; ok {
			p.value = v + 1
		}
	case roll < extend:
		p.f = history.Extend
	case roll < release:
		p.f = history.Release
	default:
		p.f = history.Acquire
	}
	e := history.Event{Process: c.process, Type: history.Invoke, F: p.f, Key: key}
	switch p.f {
	case history.Acquire, history.Extend:
		if g.ttl {
			e.TTL = refTTL
		}
		if p.f == history.Extend {
			e.Value = history.MustValue(l.value)
		}
	case history.Release:
		// The workload drops the lease before it releases.
		delete(c.leases, key)
		e.Value = history.MustValue(l.value)
	case history.Read, history.Write:
		named := l
		if l == nil {
			g.feats["outside a lease"] = true
			if c.old[key] != nil && g.pct(70) {
				// A buggy client: it writes under a lease it released.
				named = c.old[key]
				g.feats["after its release"] = true
			}
		}
		if g.named && named != nil {
			e.Lease = named.value
		}
		if p.f == history.Write {
			e.Value = history.MustValue(p.value)
		}
	}
	g.emit(e)
	c.pend = p
}

// token draws a grant's fencing token: above the key's last, or now and
// then equal to it or below it (a lock whose counter was lost).
func (g *refGen) token(key string) *int64 {
	last := g.lastToken[key]
	t := last + 1 + g.r.Int64N(3)
	switch {
	case last > 0 && g.pct(6):
		t = last
		g.feats["equal token"] = true
	case last > 1 && g.pct(6):
		t = max(1, last-1-g.r.Int64N(3))
		g.feats["decreasing token"] = true
	}
	g.lastToken[key] = max(last, t)
	return &t
}

// unknown records an unknown outcome: the client continues as a new
// process, as the workload does.
func (g *refGen) unknown(c *refClient, e history.Event) {
	e.Type, e.Err = history.Info, "i/o timeout"
	g.emit(e)
	c.restart++
	c.process = fmt.Sprintf("%s.%d", c.name, c.restart)
	g.feats["unknown "+string(e.F)] = true
}

// deadline picks a grant's deadline: mostly what Redlock gives (the TTL
// less drift from an instant between invoke and OK), often on the
// millisecond grid around the OK (lapsed, at the OK, just after), and in
// an odd history once at or past an edge of what is plausible.
func (g *refGen) deadline(inv int64) int64 {
	if g.odd > 0 {
		odd := g.odd
		g.odd = 0
		g.feats[fmt.Sprintf("edge %d", odd)] = true
		upper := g.now + refTTL + refDrift(refTTL)
		switch odd {
		case 1:
			return inv - 1 // before the invoke: implausible
		case 2:
			return inv // at the invoke: plausible, lapsed
		case 3:
			if g.ttl {
				return upper + 1 // implausible
			}
			return upper + refTTL // no TTL recorded: no upper bound
		default:
			return upper // plausible
		}
	}
	if g.pct(30) {
		d := max(inv, g.now+int64(g.r.IntN(5)-2)*ms)
		if d <= g.now {
			g.feats["lapsed grant"] = true
		}
		return d
	}
	start := inv
	if g.now > inv {
		start += g.r.Int64N(g.now - inv + 1)
	}
	return start + refTTL - refDrift(refTTL)
}

func (g *refGen) complete(c *refClient) {
	p := c.pend
	c.pend = nil
	e := history.Event{Process: c.process, F: p.f, Key: p.key}
	switch p.f {
	case history.Acquire:
		free := true
		for _, exp := range g.live[p.key] {
			if exp > g.now {
				free = false
			}
		}
		switch {
		case g.pct(12):
			if g.pct(40) {
				// It took the lock; the client never learns so.
				g.values++
				g.live[p.key][fmt.Sprintf("lost%d", g.values)] = g.now + refTTL
			}
			g.unknown(c, e)
		case free || g.pct(15):
			if !free {
				g.feats["granted while held"] = true
			}
			g.values++
			l := &refLease{key: p.key, value: fmt.Sprintf("v%d", g.values), process: c.process, deadline: g.deadline(p.inv)}
			if old := c.leases[p.key]; old != nil {
				g.feats["replaced"] = true
				if old.process != c.process {
					g.feats["replaced under a new process"] = true
				}
				c.old[p.key] = old
			}
			c.leases[p.key] = l
			g.live[p.key][l.value] = l.deadline
			d := l.deadline
			e.Type, e.Value, e.Deadline = history.OK, history.MustValue(l.value), &d
			if g.tokens {
				e.Token = g.token(p.key)
			}
			if g.pct(3) {
				// A lock that names no deadline: held until released.
				g.feats["no deadline"] = true
				e.Deadline = nil
				l.deadline = math.MaxInt64
				g.live[p.key][l.value] = math.MaxInt64
			}
			g.emit(e)
		default:
			e.Type, e.Err = history.Fail, "not acquired"
			g.emit(e)
		}
	case history.Extend:
		l := p.lease
		e.Value = history.MustValue(l.value)
		switch {
		case g.pct(10):
			g.unknown(c, e)
		case g.now <= l.deadline && g.pct(75), g.now > l.deadline && g.pct(40):
			if g.now > l.deadline {
				g.feats["late extension"] = true
			}
			l.deadline = g.deadline(p.inv)
			if _, ok := g.live[p.key][l.value]; ok {
				g.live[p.key][l.value] = l.deadline
			}
			d := l.deadline
			e.Type, e.Deadline = history.OK, &d
			g.emit(e)
		default:
			e.Type, e.Err = history.Fail, "not extended"
			g.emit(e)
		}
	case history.Release:
		l := p.lease
		c.old[p.key] = l
		e.Value = history.MustValue(l.value)
		exp, held := g.live[p.key][l.value]
		delete(g.live[p.key], l.value)
		switch {
		case g.pct(10):
			g.unknown(c, e)
		case held && exp > g.now && !g.pct(10):
			e.Type = history.OK
			g.emit(e)
		default:
			g.feats["release failed"] = true
			e.Type, e.Err = history.Fail, "not held"
			g.emit(e)
		}
	case history.Read:
		if g.pct(8) {
			e.Type, e.Err = history.Fail, "connection refused"
			g.emit(e)
			return
		}
		v := g.store[p.key].value
		c.read[p.key] = v
		if p.lease != nil {
			p.lease.fresh = true
		}
		e.Type, e.Value = history.OK, history.MustValue(v)
		g.emit(e)
	case history.Write:
		switch roll := g.r.IntN(100); {
		case roll < 75:
			g.store[p.key].value = p.value
			e.Type, e.Value = history.OK, history.MustValue(history.Ack{Seq: g.apply(p.key)})
			g.emit(e)
		case roll < 82:
			hi := int64(9)
			e.Type, e.Value, e.Err = history.Fail, history.MustValue(history.Ack{Highest: &hi}), "rejected"
			g.emit(e)
		default:
			if g.pct(50) {
				g.store[p.key].value = p.value
				g.apply(p.key)
			}
			g.unknown(c, e)
		}
	}
}

// ---- the judge -------------------------------------------------------------

type refOp struct {
	inv, done *history.Event // done is nil while pending
}

// refPair pairs each process's invokes with their completions.
func refPair(events []history.Event) []refOp {
	var ops []refOp
	open := map[string]int{}
	for i := range events {
		e := &events[i]
		if e.Type == history.Invoke {
			open[e.Process] = len(ops)
			ops = append(ops, refOp{inv: e})
			continue
		}
		if j, ok := open[e.Process]; ok {
			ops[j].done = e
			delete(open, e.Process)
		}
	}
	return ops
}

func refValue(e *history.Event) string {
	if e == nil || len(e.Value) == 0 {
		return ""
	}
	return e.StringValue()
}

// refBelief is one belief interval; end is math.MaxInt64 when nothing ended
// it.
type refBelief struct {
	process, key, value string
	client              string // the process without its ".N": one client
	start, end          int64
	deadline            *int64
	lapsed              bool
	ended               bool // by a release or a replacement
	// from and to are the indexes of the events that began and ended it
	// (for the counter's process rule, which goes by the history's order:
	// events at one instant are still in order).
	from, to int64
}

func (b *refBelief) close(at, index int64) {
	if b.ended {
		return
	}
	b.ended, b.to = true, index
	b.end = at
	if b.deadline != nil && *b.deadline < at {
		b.end = *b.deadline
	}
}

type refResult struct {
	p1, counter checker.Verdict
	// tokens is the order of the lock's tokens; "" when no grant had one.
	tokens checker.Verdict
	why    string
}

func refJudge(events []history.Event) refResult {
	ops := refPair(events)
	for _, o := range ops {
		if o.done == nil || o.done.Type != history.OK || o.done.Deadline == nil {
			continue
		}
		if o.inv.F != history.Acquire && o.inv.F != history.Extend {
			continue
		}
		d := *o.done.Deadline
		if d < o.inv.Time || o.inv.TTL > 0 && d > o.done.Time+o.inv.TTL+refDrift(o.inv.TTL) {
			return refResult{p1: checker.Unknown, counter: checker.Unknown, why: "inconsistent"}
		}
	}
	beliefs := refBeliefs(events)
	p1, why := refExclusion(events, beliefs)
	return refResult{p1: p1, counter: refCounter(events, ops, beliefs), tokens: refTokens(ops), why: why}
}

// refTokens judges the lock's tokens pair by pair: two grants (acquires
// that returned OK with a token) of one key must not share a token, and a
// grant invoked after another's OK must carry a higher one.
func refTokens(ops []refOp) checker.Verdict {
	var grants []refOp
	for _, o := range ops {
		if o.inv.F == history.Acquire && o.done != nil && o.done.Type == history.OK && o.done.Token != nil {
			grants = append(grants, o)
		}
	}
	if len(grants) == 0 {
		return ""
	}
	for i, a := range grants {
		for j, b := range grants {
			if i == j || a.inv.Key != b.inv.Key {
				continue
			}
			if *a.done.Token == *b.done.Token || a.done.Time < b.inv.Time && *b.done.Token < *a.done.Token {
				return checker.Invalid
			}
		}
	}
	return checker.Valid
}

// refBeliefs replays the history in order and returns every belief, ended.
func refBeliefs(events []history.Event) []*refBelief {
	var all []*refBelief
	open := func(match func(*refBelief) bool) *refBelief {
		for i := len(all) - 1; i >= 0; i-- {
			if b := all[i]; !b.ended && match(b) {
				return b
			}
		}
		return nil
	}
	begin := func(p, key, value string, at, index int64, d *int64) {
		b := &refBelief{process: p, client: clientOf(p), key: key, value: value, start: at, end: math.MaxInt64, deadline: d, from: index}
		if d != nil {
			b.end = *d
			b.lapsed = *d <= at
		}
		all = append(all, b)
	}
	pendingF := map[string]*history.Event{}
	for i := range events {
		e := &events[i]
		if e.Type == history.Invoke {
			pendingF[e.Process] = e
			if e.F == history.Release {
				v := refValue(e)
				b := open(func(b *refBelief) bool {
					return b.key == e.Key && (v != "" && b.value == v || v == "" && b.process == e.Process)
				})
				if b != nil {
					b.close(e.Time, e.Index)
				}
			}
			continue
		}
		inv := pendingF[e.Process]
		delete(pendingF, e.Process)
		if inv == nil || e.Type != history.OK {
			continue
		}
		switch inv.F {
		case history.Acquire:
			// A client holds one lease per key: a new grant replaces the
			// one it holds, under whatever process it got that one.
			if b := open(func(b *refBelief) bool { return b.key == inv.Key && b.client == clientOf(e.Process) }); b != nil {
				b.close(e.Time, e.Index)
			}
			begin(e.Process, inv.Key, refValue(e), e.Time, e.Index, e.Deadline)
		case history.Extend:
			if e.Deadline == nil {
				continue
			}
			v := refValue(inv)
			b := open(func(b *refBelief) bool { return b.key == inv.Key && b.value == v })
			// In time only before the deadline: at it, the validity has
			// ended (as a grant with its deadline at its OK has lapsed).
			if b != nil && (b.deadline == nil || e.Time < *b.deadline) {
				if b.deadline == nil || *e.Deadline > *b.deadline {
					d := *e.Deadline
					b.deadline = &d
					b.end = d
				}
				continue
			}
			if b != nil {
				// Lapsed before the extend came back: that belief ended
				// at its deadline; the lease is believed again from here.
				b.ended, b.to = true, e.Index
			}
			if o := open(func(o *refBelief) bool { return o.key == inv.Key && o.client == clientOf(e.Process) }); o != nil {
				o.close(e.Time, e.Index)
			}
			begin(e.Process, inv.Key, v, e.Time, e.Index, e.Deadline)
		}
	}
	return all
}

// clientOf is the client a process is: c1.2 is c1 after two unknown
// outcomes, holding the leases c1 held.
func clientOf(p string) string {
	c, _, _ := strings.Cut(p, ".")
	return c
}

// refExclusion checks every pair of beliefs of two clients on one key at
// every instant the history names and every midpoint between two.
func refExclusion(events []history.Event, beliefs []*refBelief) (checker.Verdict, string) {
	var ts []int64
	counted := 0
	for _, b := range beliefs {
		if b.lapsed {
			continue
		}
		counted++
		ts = append(ts, 2*b.start)
		if b.end != math.MaxInt64 {
			ts = append(ts, 2*b.end)
		}
	}
	if counted == 0 {
		return checker.Unknown, "no belief to check"
	}
	for _, e := range events {
		ts = append(ts, 2*e.Time)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	samples := append([]int64(nil), ts...)
	for i := 1; i < len(ts); i++ {
		samples = append(samples, (ts[i-1]+ts[i])/2)
	}
	samples = append(samples, ts[len(ts)-1]+1)
	inside := func(b *refBelief, t int64) bool {
		return 2*b.start < t && (b.end == math.MaxInt64 || t < 2*b.end)
	}
	within := func(b *refBelief, t int64) bool {
		return 2*b.start <= t && (b.end == math.MaxInt64 || t <= 2*b.end)
	}
	for i, x := range beliefs {
		for _, y := range beliefs[i+1:] {
			if x.lapsed || y.lapsed || x.key != y.key || x.client == y.client {
				continue
			}
			for _, t := range samples {
				if inside(x, t) && within(y, t) || inside(y, t) && within(x, t) {
					return checker.Invalid, fmt.Sprintf("%s (%s) and %s (%s) on %s at %d", x.process, x.value, y.process, y.value, x.key, t/2)
				}
			}
		}
	}
	return checker.Valid, ""
}

// refSection collects one section's operations.
type refSection struct{ ops []refOp }

// refCounter judges every counter: it builds each key's critical sections
// and searches every order of them.
func refCounter(events []history.Event, ops []refOp, beliefs []*refBelief) checker.Verdict {
	verdict := checker.Valid
	for _, k := range refKeys(events) {
		if !refCounterKey(events, ops, beliefs, k) {
			verdict = checker.Invalid
		}
	}
	return verdict
}

func refKeys(events []history.Event) []string {
	var out []string
	for _, e := range events {
		if e.Process == history.ProcessInit && e.Type == history.Invoke {
			out = append(out, e.Key)
		}
	}
	return out
}

// refHeld finds the lease a resource operation belongs to: the one it
// names, or the one its process held (granted, not released or replaced)
// when it was invoked. It returns the lease's key and value, or "".
func refHeld(e *history.Event, events []history.Event, beliefs []*refBelief) string {
	if e.Lease != "" {
		for _, g := range events {
			if g.Time > e.Time || g.Index > e.Index {
				break
			}
			if g.Type == history.OK && g.F == history.Acquire && g.Key == e.Key && refValue(&g) == e.Lease {
				return e.Lease
			}
		}
		return ""
	}
	var found *refBelief
	for _, b := range beliefs {
		if b.process == e.Process && b.key == e.Key && b.from < e.Index && (!b.ended || b.to > e.Index) {
			found = b
		}
	}
	if found == nil {
		return ""
	}
	return found.value
}

// refCS is one critical section as the register sees it.
type refCS struct {
	call, ret int64 // ret MaxInt64: a write of unknown outcome
	read      *int64
	write     *int64
	seq       int64 // the applied write's seq; 0 when unknown
	maybe     bool  // the write's outcome is unknown
	final     bool
}

func refCounterKey(events []history.Event, ops []refOp, beliefs []*refBelief, key string) bool {
	var init *refOp
	sections := map[string]*refSection{}
	var order []string
	cur := map[string]string{} // client → its section not yet closed by a write
	runs := 0
	var finals []refOp
	for _, o := range ops {
		e := o.inv
		if e.Key != key || (e.F != history.Read && e.F != history.Write) {
			continue
		}
		switch e.Process {
		case history.ProcessInit:
			o := o
			init = &o
			continue
		case history.ProcessFinal:
			if o.done != nil && o.done.Type == history.OK {
				finals = append(finals, o)
			}
			continue
		}
		// A write is computed from its client's last read before it,
		// whatever leases began or ended between them: a client's
		// section runs from the first read after its previous write to
		// its next write (a new process after an unknown outcome is the
		// same client).
		c := clientOf(e.Process)
		if cur[c] == "" {
			runs++
			cur[c] = fmt.Sprintf("run %d", runs)
		}
		id := cur[c]
		if e.F == history.Write {
			delete(cur, c)
		}
		s := sections[id]
		if s == nil {
			s = &refSection{}
			sections[id] = s
			order = append(order, id)
		}
		s.ops = append(s.ops, o)
	}
	num := func(e *history.Event) int64 {
		var v int64
		if err := e.Decode(&v); err != nil {
			panic(err)
		}
		return v
	}
	var css []refCS
	for _, id := range order {
		var read *refOp
		flush := func() {
			if read != nil {
				v := num(read.done)
				css = append(css, refCS{call: read.inv.Time, ret: read.done.Time, read: &v})
			}
			read = nil
		}
		for _, o := range sections[id].ops {
			if o.inv.F == history.Read {
				if o.done != nil && o.done.Type == history.OK {
					flush()
					o := o
					read = &o
				}
				continue
			}
			w := num(o.inv)
			cs := refCS{call: o.inv.Time, ret: math.MaxInt64, write: &w}
			switch {
			case o.done != nil && o.done.Type == history.Fail:
				flush()
				continue
			case o.done != nil && o.done.Type == history.OK:
				cs.ret = o.done.Time
				var ack history.Ack
				if err := o.done.Decode(&ack); err != nil {
					panic(err)
				}
				cs.seq = ack.Seq
			default:
				cs.maybe = true
			}
			if read != nil {
				v := num(read.done)
				cs.read, cs.call = &v, read.inv.Time
			}
			read = nil
			css = append(css, cs)
		}
		flush()
	}
	for _, o := range finals {
		v := num(o.done)
		css = append(css, refCS{call: o.inv.Time, ret: o.done.Time, read: &v, final: true})
	}
	var initV, initSeq int64
	if init != nil {
		initV = num(init.inv)
		var ack history.Ack
		if err := init.done.Decode(&ack); err != nil {
			panic(err)
		}
		initSeq = ack.Seq
	}
	return refLinearizable(css, initV, initSeq)
}

// refLinearizable tries every order of the critical sections that respects
// real time (a section whose end came before another's start goes first)
// and the storage's order of applied writes (the write with seq s is the
// s-th applied; writes of unknown outcome fill the gaps, or were not
// applied), with every read seeing the current value.
func refLinearizable(css []refCS, initV, initSeq int64) bool {
	n := len(css)
	if n > 62 {
		panic("too many critical sections for the reference judge")
	}
	known := map[int64]bool{}
	for _, c := range css {
		if c.seq > 0 {
			known[c.seq] = true
		}
	}
	type state struct {
		done     uint64
		value    int64
		appliedN int64
	}
	seen := map[state]bool{}
	var search func(s state) bool
	search = func(s state) bool {
		if s.done == 1<<n-1 {
			return true
		}
		if seen[s] {
			return false
		}
		seen[s] = true
		// The earliest end among the sections not yet placed: a section
		// that starts after it cannot come next.
		minRet := int64(math.MaxInt64)
		for i, c := range css {
			if s.done&(1<<i) == 0 && c.ret < minRet {
				minRet = c.ret
			}
		}
		for i, c := range css {
			if s.done&(1<<i) != 0 || c.call > minRet {
				continue
			}
			if c.read != nil && *c.read != s.value {
				continue
			}
			next := state{done: s.done | 1<<i, value: s.value, appliedN: s.appliedN}
			if c.write == nil {
				if search(next) {
					return true
				}
				continue
			}
			if c.maybe {
				if search(next) { // not applied
					return true
				}
				if known[s.appliedN+1] {
					continue
				}
			} else if c.seq != s.appliedN+1 {
				continue
			}
			next.value, next.appliedN = *c.write, s.appliedN+1
			if search(next) {
				return true
			}
		}
		return false
	}
	return search(state{value: initV, appliedN: initSeq})
}

// ---- the comparison --------------------------------------------------------

func TestReferenceCheck(t *testing.T) {
	n := *referenceN
	if testing.Short() {
		n = min(n, 300)
	}
	started := time.Now()
	tally := map[string]int{}
	feats := map[string]int{}
	disagreements := 0
	for i := range n {
		seed := *referenceSeed + uint64(i)
		g := newRefGen(seed)
		events := g.history()
		for f := range g.feats {
			feats[f]++
		}
		ref := refJudge(events)
		res := checker.Check(events, checker.WithTimeout(time.Minute))
		// An inconsistent history has no properties: its verdict is
		// unknown for both.
		got := refResult{p1: res.Verdict, counter: res.Verdict, why: res.Reason}
		if ref.why == "inconsistent" && !strings.Contains(res.Reason, "inconsistent") {
			got.why = "not called inconsistent"
		}
		for _, p := range res.Properties {
			switch p.Name {
			case checker.PropLeaseLock:
				got.p1 = p.Verdict
			case checker.PropCounter:
				got.counter = p.Verdict
			case checker.PropTokens:
				got.tokens = p.Verdict
			}
		}
		tally[fmt.Sprintf("P1 %s", ref.p1)]++
		tally[fmt.Sprintf("counter %s", ref.counter)]++
		if ref.tokens != "" {
			tally[fmt.Sprintf("tokens %s", ref.tokens)]++
		}
		if got.p1 == ref.p1 && got.counter == ref.counter && got.tokens == ref.tokens && got.why != "not called inconsistent" {
			continue
		}
		disagreements++
		if disagreements <= 5 {
			t.Errorf("seed %d: checker says P1 %s, counter %s, tokens %q (%s); the reference says P1 %s, counter %s, tokens %q (%s)\n%s",
				seed, got.p1, got.counter, got.tokens, res.Reason, ref.p1, ref.counter, ref.tokens, ref.why, refDump(events))
		}
	}
	if disagreements > 0 {
		t.Errorf("%d of %d histories judged differently", disagreements, n)
	}
	t.Logf("%d histories in %v: %v; features: %v", n, time.Since(started).Round(time.Millisecond), tally, feats)
}

func refDump(events []history.Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "  %3d %6.3fms %-6s %-6s %-8s %-3s", e.Index, float64(e.Time)/float64(ms), e.Process, e.Type, e.F, e.Key)
		if len(e.Value) > 0 {
			fmt.Fprintf(&b, " value=%s", e.Value)
		}
		if e.Deadline != nil {
			fmt.Fprintf(&b, " deadline=%.3fms", float64(*e.Deadline)/float64(ms))
		}
		if e.TTL != 0 {
			fmt.Fprintf(&b, " ttl=%dms", e.TTL/ms)
		}
		if e.Lease != "" {
			fmt.Fprintf(&b, " lease=%s", e.Lease)
		}
		if e.Token != nil {
			fmt.Fprintf(&b, " token=%d", *e.Token)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
