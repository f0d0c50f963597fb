package liveness_test

// The reference check: a deliberately simple judge of the two liveness
// promises, written apart from the package from its rules (the package
// comment) straight, run against liveness.Judge on many small random
// histories. The two must agree on every one; a disagreement prints the
// history.
//
// Every time in these histories is a whole tick (a millisecond), so two
// stretches with ends on ticks share an instant other than an end exactly
// when they share a half tick: the judge asks every question ("could the
// client reach the nodes?", "could anything hold the lock?", "was a
// fault on its path?") at each half tick of the stretch it is about, by
// going through every fault and every operation of the history, with no
// intervals, no merging and no search. It is slow and plain on purpose.
//
// go test runs 2000 histories (about 2 s); make fuzz 10 000 others (about
// 8 s). By hand: go test ./checker/liveness -run TestReferenceCheck
// -liveref.n 10000 -v (-liveref.seed N starts elsewhere; -v prints how
// often each verdict came up).

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"splitbrain/checker/liveness"
	"splitbrain/checker/paired"
	"splitbrain/checker/verdict"
	"splitbrain/history"
)

var (
	refN    = flag.Int("liveref.n", 2000, "random histories the liveness reference check compares")
	refSeed = flag.Uint64("liveref.seed", 1, "first seed of the liveness reference check")
)

func TestReferenceCheck(t *testing.T) {
	t.Parallel()
	hit := map[string]int{}
	for i := range *refN {
		seed := *refSeed + uint64(i)
		events, setup := genHistory(seed)
		h := paired.Analyze(events)
		if len(h.Problems) > 0 {
			t.Fatalf("seed %d: the generator wrote an inconsistent history: %v\n%s", seed, h.Problems, dump(events))
		}
		got, _ := liveness.Judge(events, h)
		want := refJudge(events, setup)
		for _, c := range []struct {
			name      string
			got, want liveness.Promise
		}{{"deadlock freedom", got.DeadlockFreedom, want.df}, {"fault tolerance", got.FaultTolerance, want.ft}} {
			g, w := c.got, c.want
			if g.Verdict != w.Verdict || g.Judged != w.Judged || g.Met != w.Met || g.Unknown != w.Unknown || g.ViolationCount != w.ViolationCount {
				t.Fatalf("seed %d: %s: checker %s (judged %d, met %d, unknown %d, refused %d), reference %s (%d, %d, %d, %d)\n%s\nsetup %+v\n%s",
					seed, c.name, g.Verdict, g.Judged, g.Met, g.Unknown, g.ViolationCount,
					w.Verdict, w.Judged, w.Met, w.Unknown, w.ViolationCount, g.Reason, setup, dump(events))
			}
			hit[c.name+" "+string(g.Verdict)]++
		}
	}
	t.Logf("%d histories: %v", *refN, hit)
	// The comparison means something only if both sides of both
	// promises came up.
	for _, k := range []string{"deadlock freedom valid", "deadlock freedom invalid", "deadlock freedom unknown",
		"fault tolerance valid", "fault tolerance invalid", "fault tolerance unknown"} {
		if hit[k] == 0 && *refN >= 1000 {
			t.Errorf("no history came out %s", k)
		}
	}
}

func dump(events []history.Event) string {
	var sb strings.Builder
	for _, e := range events {
		v := string(e.Value)
		fmt.Fprintf(&sb, "%4d %6dms %-8s %-7s %-8s %-3s %s\n", e.Index, e.Time/ms, e.Process, e.Type, e.F, e.Key, v)
	}
	return sb.String()
}

// ---- the generator -------------------------------------------------------

// genHistory writes a random history of 2–3 clients on one or two keys of
// a lock of a random shape under a few random faults. The lock's answers
// are random too (a free lock refused, a held one granted): the promises
// are judged whatever the lock did.
func genHistory(seed uint64) ([]history.Event, history.LockSetup) {
	r := rand.New(rand.NewPCG(seed, 0x11fe))
	var s history.LockSetup
	switch r.IntN(4) {
	case 0:
		n := 3 + 2*r.IntN(2)
		for i := range n {
			s.Nodes = append(s.Nodes, fmt.Sprintf("n%d", i+1))
		}
		s.Kind, s.Quorum = "redlock", n/2+1
	case 1:
		s.Kind, s.Nodes, s.Quorum = "single", []string{"n1"}, 1
	case 2:
		s.Kind, s.Nodes, s.Quorum, s.Peers = "zookeeper", []string{"n1", "n2", "n3"}, 2, true
	default:
		s.Kind, s.Nodes, s.Quorum, s.Replicas = "wait-replicas", []string{"n1"}, 1, []string{"r1"}
	}
	s.Renewed = r.IntN(3) == 0
	s.AsyncRelease = r.IntN(4) == 0
	s.Expiry = int64(2+r.IntN(6)) * ms
	s.Retry = int64(r.IntN(4)) * ms
	s.Reconnect = int64(r.IntN(3)) * ms
	for i := range 2 + r.IntN(2) {
		s.Clients = append(s.Clients, fmt.Sprintf("c%d", i+1))
	}
	keys := []string{"k1", "k2"}[:1+r.IntN(2)]
	span := int64(30 + r.IntN(40))

	var ev []history.Event
	add := func(at int64, e history.Event) {
		e.Time = at * ms
		ev = append(ev, e)
	}
	add(0, history.Event{Process: history.ProcessHarness, Type: history.Info, F: history.Setup, Value: history.MustValue(s)})

	// Faults.
	nodes := append(append([]string{"storage", "s1"}, s.Nodes...), s.Replicas...)
	pick := func(from []string) string { return from[r.IntN(len(from))] }
	linkEnds := append(slices.Clone(s.Clients), "n1", "r1", "s1")
	for id := 1; id <= r.IntN(5); id++ {
		f := history.Fault{ID: id}
		switch k := r.IntN(12); k {
		case 0, 1, 2:
			f.Kind, f.Nodes = pick([]string{"kill", "stop", "pause"}), []string{pick(nodes)}
			if r.IntN(3) == 0 {
				f.Nodes = append(f.Nodes, pick(nodes))
			}
		case 3, 4, 5, 6:
			f.Kind = pick([]string{"cut", "cut", "partition", "reset", "refuse", "delay"})
			for range 1 + r.IntN(4) {
				f.Links = append(f.Links, history.Link{Client: pick(linkEnds), Node: pick(nodes)})
			}
			if s.Peers && r.IntN(2) == 0 {
				f.Links = append(f.Links, history.Link{Client: pick(s.Nodes), Node: pick(s.Nodes) + pick([]string{"", ":election"})})
			}
		case 7, 8:
			f.Kind, f.Nodes = pick([]string{"clock-jump", "clock-strobe"}), []string{pick(nodes)}
			f.Offset = int64(r.IntN(9)-4) * ms
		case 9, 10:
			f.Kind, f.Nodes = pick([]string{"client-pause", "client-pause-held"}), []string{pick(s.Clients)}
			if f.Kind == "client-pause-held" && r.IntN(2) == 0 {
				f.Point = "after-acquire"
			}
		default:
			f.Kind, f.Nodes = "promote", []string{"r1"}
		}
		start := int64(r.IntN(int(span)))
		began := max(0, start-int64(r.IntN(3)))
		f.Phase, f.Began = history.PhaseStart, began*ms
		add(start, history.Event{Process: history.ProcessNemesis, Type: history.Info, F: history.Nemesis, Value: history.MustValue(f)})
		if r.IntN(7) > 0 {
			f.Phase, f.Began = history.PhaseStop, 0
			add(start+int64(r.IntN(15)), history.Event{Process: history.ProcessNemesis, Type: history.Info, F: history.Nemesis, Value: history.MustValue(f)})
		}
	}

	// The harness standing still now and then (history.Stall), recorded
	// when it ran again; or a client's driver.
	for range r.IntN(3) {
		if r.IntN(2) == 0 {
			d := int64(1 + r.IntN(6))
			who := history.ProcessHarness
			if r.IntN(2) == 0 {
				who = s.Clients[r.IntN(len(s.Clients))]
			}
			add(d+int64(r.IntN(int(span))), history.Event{Process: who, Type: history.Info, F: history.Stall,
				Value: history.MustValue(history.StallValue{For: d * ms})})
		}
	}

	// Each client's operations, one after another.
	values := 0
	end := span + 20
	for _, c := range s.Clients {
		proc, restarts := c, 0
		op := func(f history.Func, key, value string, at, dur int64, typ history.Type) {
			v := history.MustValue(value)
			add(at, history.Event{Process: proc, Type: history.Invoke, F: f, Key: key, Value: v})
			if typ == "" {
				return
			}
			done := history.Event{Process: proc, Type: typ, F: f, Key: key, Value: v}
			if f == history.Acquire && typ == history.Fail && r.IntN(4) == 0 {
				// A refusal whose rollback went unanswered on a node:
				// its key may stay there an expiry.
				done.Nodes = []string{pick(s.Nodes)}
			}
			add(at+dur, done)
			if typ == history.Info {
				restarts++
				proc = fmt.Sprintf("%s.%d", c, restarts)
			}
		}
		outcome := func(ok, fail, info int) history.Type {
			switch n := r.IntN(ok + fail + info); {
			case n < ok:
				return history.OK
			case n < ok+fail:
				return history.Fail
			}
			return history.Info
		}
		for t := int64(r.IntN(5)); t < span; {
			key := pick(keys)
			values++
			value := fmt.Sprintf("v%d", values)
			dur := int64(1 + r.IntN(4))
			if r.IntN(40) == 0 {
				// Still pending when the history ends.
				op(history.Acquire, key, value, t, 0, "")
				break
			}
			typ := outcome(45, 40, 15)
			op(history.Acquire, key, value, t, dur, typ)
			t += dur + int64(r.IntN(4))
			if typ != history.OK {
				continue
			}
			if r.IntN(3) == 0 {
				d := int64(1 + r.IntN(2))
				op(history.Extend, key, value, t, d, outcome(5, 2, 2))
				t += d + int64(r.IntN(3))
			}
			if r.IntN(5) > 0 {
				t += int64(r.IntN(8))
				d := int64(1 + r.IntN(2))
				op(history.Release, key, value, t, d, outcome(7, 2, 2))
				t += d + int64(r.IntN(3))
			}
		}
	}
	add(end, history.Event{Process: history.ProcessHarness, Type: history.Info, F: history.End})
	slices.SortStableFunc(ev, func(x, y history.Event) int {
		switch {
		case x.Time < y.Time:
			return -1
		case x.Time > y.Time:
			return 1
		}
		return 0
	})
	for i := range ev {
		ev[i].Index = int64(i)
	}
	return ev, s
}

// ---- the judge -----------------------------------------------------------

// Times below are in half ticks: 2·t for the tick t, an odd number for
// the instant halfway between two ticks.

type refOp struct {
	client, key, value string
	f                  history.Func
	inv, end           int64 // ticks; end is the history's end while pending
	typ                history.Type
	remain             bool // a refusal that names nodes its key may stay on
}

type refFault struct {
	history.Fault
	from, to int64 // ticks: when it began to act, its heal (or the history's end)
}

type refResult struct{ df, ft liveness.Promise }

func tick(ns int64) int64 { return ns / ms }

// refJudge judges both promises of a history from its rules.
func refJudge(events []history.Event, s history.LockSetup) refResult {
	end := tick(events[len(events)-1].Time)
	var ops []*refOp
	pending := map[string]*refOp{}
	var faults []*refFault
	open := map[int]*refFault{}
	for _, e := range events {
		switch e.F {
		case history.Nemesis:
			f, _ := e.Fault()
			if f.Phase == history.PhaseStart {
				from := tick(e.Time)
				if f.Began > 0 && tick(f.Began) < from {
					from = tick(f.Began)
				}
				rf := &refFault{Fault: f, from: from, to: end}
				faults = append(faults, rf)
				open[f.ID] = rf
			} else {
				open[f.ID].to = tick(e.Time)
			}
		case history.Acquire, history.Extend, history.Release:
			if e.Type == history.Invoke {
				o := &refOp{client: history.ClientOf(e.Process), key: e.Key, value: e.StringValue(), f: e.F, inv: tick(e.Time), end: end}
				ops = append(ops, o)
				pending[e.Process] = o
				continue
			}
			o := pending[e.Process]
			o.end, o.typ = tick(e.Time), e.Type
			o.remain = e.Type == history.Fail && len(e.Nodes) > 0
		case history.Stall:
			// The harness stood still: every client, and what it runs
			// in the background, held for as long (a "stall", below);
			// a client's driver: that client.
			var v history.StallValue
			if err := e.Decode(&v); err != nil {
				panic(err)
			}
			held := s.Clients
			if e.Process != history.ProcessHarness {
				held = []string{e.Process}
			}
			faults = append(faults, &refFault{Fault: history.Fault{Kind: "stall", Nodes: held},
				from: tick(e.Time - v.For), to: tick(e.Time)})
		}
	}
	j := &refJudgeState{s: s, ops: ops, faults: faults, end: end, freedAt: map[*refOp]int64{}, quorums: map[refAt]refQuorum{}}
	var res refResult
	for _, a := range ops {
		if a.f != history.Acquire {
			continue
		}
		promised, free, maybe, stalled := true, true, false, false
		for _, x := range halves(min(a.inv, a.end-tick(s.Retry)-tick(s.Reconnect)), a.end) {
			promised = promised && j.reaches(a.client, x)
			stalled = stalled || paused(j.active(x), a.client, "stall")
		}
		for _, x := range halves(a.inv, a.end) {
			for _, o := range ops {
				if o == a || o.f != history.Acquire || o.key != a.key {
					continue
				}
				if j.certainly(o, x) {
					free = false
				}
				if j.maybe(o, x) {
					maybe = true
				}
			}
		}
		// A refusal counts only on a lock free all along; a grant
		// counts whenever the client could reach the lock.
		if !promised || !free && a.typ != history.OK {
			continue
		}
		// A refusal while the harness stood still is owed nothing; a
		// grant then still shows the lock live.
		if stalled && a.typ != history.OK {
			continue
		}
		p := &res.df
		for _, x := range halves(a.end-tick(s.Bound()), a.end) {
			for _, f := range faults {
				if f.onPath(a.client, s.Clients) && 2*f.from < x && x < 2*(f.to+f.grace()) {
					p = &res.ft
				}
			}
		}
		p.Judged++
		switch {
		case a.typ == history.OK:
			p.Met++
		case a.typ == history.Fail && !maybe:
			p.ViolationCount++
		default:
			p.Unknown++
		}
	}
	for _, p := range []*liveness.Promise{&res.df, &res.ft} {
		switch {
		case p.ViolationCount > 0:
			p.Verdict = verdict.Invalid
		case p.Unknown > 0 || p.Met == 0:
			p.Verdict = verdict.Unknown
		default:
			p.Verdict = verdict.Valid
		}
	}
	return res
}

// halves are the half ticks strictly inside (a, b).
func halves(a, b int64) []int64 {
	var out []int64
	for x := 2*a + 1; x < 2*b; x += 2 {
		out = append(out, x)
	}
	return out
}

type refJudgeState struct {
	s      history.LockSetup
	ops    []*refOp
	faults []*refFault
	end    int64
	// Answers already worked out, kept so that the judge, which asks
	// the same questions again and again, ends in seconds.
	freedAt map[*refOp]int64
	quorums map[refAt]refQuorum
}

type refAt struct {
	c string
	x int64
}

type refQuorum struct {
	ok, all bool
	active  []*refFault
}

func (j *refJudgeState) active(x int64) []*refFault {
	var out []*refFault
	for _, f := range j.faults {
		if 2*f.from < x && x < 2*f.to {
			out = append(out, f)
		}
	}
	return out
}

func base(s string) string { b, _, _ := strings.Cut(s, ":"); return b }

// cutBetween reports whether a fault active at x faults the link between
// a and b, in either direction.
func cutBetween(active []*refFault, a, b string) bool {
	for _, f := range active {
		if !slices.Contains([]string{"cut", "partition", "reset", "refuse", "delay"}, f.Kind) {
			continue
		}
		for _, l := range f.Links {
			if base(l.Client) == a && base(l.Node) == b || base(l.Client) == b && base(l.Node) == a {
				return true
			}
		}
	}
	return false
}

func known(kind string) bool {
	return slices.Contains([]string{"cut", "partition", "reset", "refuse", "delay", "kill", "stop", "pause",
		"clock-jump", "clock-strobe", "clock-reset", "client-pause", "client-pause-held", "stall"}, kind)
}

// quorum reports whether client c reaches a quorum of the lock's nodes
// at x (that reaches itself, for an ensemble), whether it reaches every
// node, and the active faults.
func (j *refJudgeState) quorum(c string, x int64) (bool, bool, []*refFault) {
	if q, ok := j.quorums[refAt{c, x}]; ok {
		return q.ok, q.all, q.active
	}
	ok, all, active := j.quorumOf(c, x)
	j.quorums[refAt{c, x}] = refQuorum{ok, all, active}
	return ok, all, active
}

func (j *refJudgeState) quorumOf(c string, x int64) (bool, bool, []*refFault) {
	active := j.active(x)
	down := func(n string) bool {
		for _, f := range active {
			if slices.Contains([]string{"kill", "stop", "pause"}, f.Kind) && slices.Contains(f.Nodes, n) {
				return true
			}
		}
		return false
	}
	var up []string
	for _, n := range j.s.Nodes {
		if !down(n) && !cutBetween(active, c, n) {
			up = append(up, n)
		}
	}
	ok := len(up) >= j.s.Quorum
	if ok && j.s.Peers {
		ok = false
		for m := range 1 << len(up) {
			var set []string
			for i, n := range up {
				if m&(1<<i) != 0 {
					set = append(set, n)
				}
			}
			good := len(set) >= j.s.Quorum
			for _, a := range set {
				for _, b := range set {
					if a != b && cutBetween(active, a, b) {
						good = false
					}
				}
			}
			ok = ok || good
		}
	}
	return ok, len(up) == len(j.s.Nodes), active
}

// replicasUp: every replica runs and reaches the master at x.
func (j *refJudgeState) replicasUp(active []*refFault) bool {
	for _, r := range j.s.Replicas {
		if cutBetween(active, r, j.s.Nodes[0]) {
			return false
		}
		for _, f := range active {
			if slices.Contains([]string{"kill", "stop", "pause"}, f.Kind) && slices.Contains(f.Nodes, r) {
				return false
			}
		}
	}
	return true
}

func paused(active []*refFault, c string, kinds ...string) bool {
	for _, f := range active {
		if slices.Contains(kinds, f.Kind) && slices.Contains(f.Nodes, c) {
			return true
		}
	}
	return false
}

func anyUnknown(active []*refFault) bool {
	return slices.ContainsFunc(active, func(f *refFault) bool { return !known(f.Kind) })
}

// reaches: c reaches what the lock needs, no clock of the lock's moved, c
// not stopped, no fault the checker does not know.
func (j *refJudgeState) reaches(c string, x int64) bool {
	ok, _, active := j.quorum(c, x)
	for _, f := range active {
		if strings.HasPrefix(f.Kind, "clock") && slices.ContainsFunc(f.Nodes, func(n string) bool {
			return slices.Contains(j.s.Nodes, n) || slices.Contains(j.s.Replicas, n)
		}) {
			ok = false
		}
	}
	return ok && j.replicasUp(active) && !paused(active, c, "client-pause", "client-pause-held") && !anyUnknown(active) && !j.electing(x)
}

// electing: an ensemble's member went down or was cut from another
// member, or came back, less than a retry interval before x.
func (j *refJudgeState) electing(x int64) bool {
	if !j.s.Peers {
		return false
	}
	R := tick(j.s.Retry) + tick(j.s.Reconnect)
	for _, f := range j.faults {
		splits := slices.Contains([]string{"kill", "stop", "pause"}, f.Kind) && slices.ContainsFunc(f.Nodes, func(n string) bool { return slices.Contains(j.s.Nodes, n) })
		if slices.Contains([]string{"cut", "partition", "reset", "refuse", "delay"}, f.Kind) {
			for _, l := range f.Links {
				splits = splits || slices.Contains(j.s.Nodes, base(l.Client)) && slices.Contains(j.s.Nodes, base(l.Node))
			}
		}
		if splits && (2*f.from < x && x < 2*(f.from+R) || 2*f.to < x && x < 2*(f.to+R)) {
			return true
		}
	}
	return false
}

// renews: a holder c keeps a renewed lock alive at x.
func (j *refJudgeState) renews(c string, x int64) bool {
	ok, _, active := j.quorum(c, x)
	return ok && !paused(active, c, "client-pause-held", "stall") && !anyUnknown(active)
}

// lostAt: node n was down or cut from c at x (or a fault the checker
// does not know was active).
func (j *refJudgeState) lostAt(c, n string, x int64) bool {
	active := j.active(x)
	if anyUnknown(active) || cutBetween(active, c, n) {
		return true
	}
	for _, f := range active {
		if slices.Contains([]string{"kill", "stop", "pause"}, f.Kind) && slices.Contains(f.Nodes, n) {
			return true
		}
	}
	return false
}

// missed: some node of the lock that c reached at a half tick of (a0, b0)
// was out of its reach at a half tick of (a, b).
func (j *refJudgeState) missed(c string, a0, b0, a, b int64) bool {
	for _, n := range j.s.Nodes {
		reached, lost := false, false
		for _, x := range halves(a0, b0) {
			reached = reached || !j.lostAt(c, n, x)
		}
		for _, x := range halves(a, b) {
			lost = lost || j.lostAt(c, n, x)
		}
		if reached && lost {
			return true
		}
	}
	return false
}

func (j *refJudgeState) lease(o *refOp, f history.Func) []*refOp {
	var out []*refOp
	for _, p := range j.ops {
		if p.f == f && p.key == o.key && p.value == o.value {
			out = append(out, p)
		}
	}
	return out
}

// freed is when a grant's lock is free again: at its release's ok (from
// every node, for independent masters; a retry interval later for a lock
// that releases in the background), else a retry interval after it
// expires.
func (j *refJudgeState) freed(g *refOp) int64 {
	if t, ok := j.freedAt[g]; ok {
		return t
	}
	t := j.freedOf(g)
	j.freedAt[g] = t
	return t
}

func (j *refJudgeState) freedOf(g *refOp) int64 {
	E, R := tick(j.s.Expiry), tick(j.s.Retry)
	var release *refOp
	if rs := j.lease(g, history.Release); len(rs) > 0 {
		release = rs[0]
	}
	var expires int64
	if j.s.Renewed {
		stop := int64(1 << 40)
		if release != nil {
			stop = release.inv
		}
		renewing := func(x int64) bool { return x < 2*stop && j.renews(g.client, x) }
		expires = 1 << 40
		// A release is invoked within the history: past its end, with
		// the faults gone, a holder that still renews does so for good.
		// A stop at the after-acquire point during the acquire came
		// after the grant: its silence counts from the stop's start.
		first := g.end
		for _, f := range j.faults {
			if f.Kind == "client-pause-held" && f.Point == "after-acquire" && slices.Contains(f.Nodes, g.client) &&
				g.inv <= f.from && f.from <= g.end {
				first = min(first, f.from)
			}
		}
		for t := first; t <= j.end+E+1; t++ {
			silent := true
			for x := 2*t + 1; x < 2*(t+E); x += 2 {
				silent = silent && !renewing(x)
			}
			if silent {
				expires = t + E
				break
			}
		}
	} else {
		last := g.end
		for _, e := range j.lease(g, history.Extend) {
			if e.typ == history.OK {
				last = max(last, e.end)
			}
		}
		expires = last + E
	}
	expires += R
	if release == nil || release.typ != history.OK {
		return expires
	}
	if !j.s.Peers && j.s.Quorum < len(j.s.Nodes) && j.missed(g.client, g.inv, g.end, release.inv, release.end) {
		return expires
	}
	if j.s.AsyncRelease {
		return min(expires, release.end+R)
	}
	return min(expires, release.end)
}

// certainly: acquire o kept the lock taken at x.
func (j *refJudgeState) certainly(o *refOp, x int64) bool {
	switch o.typ {
	case history.OK:
		return 2*o.inv < x && x < 2*j.freed(o)
	case history.Fail:
		to := o.end
		if o.remain || j.missed(o.client, o.inv, o.end, o.inv, o.end) {
			to = o.end + tick(j.s.Expiry) + tick(j.s.Retry)
		}
		return 2*o.inv < x && x < 2*to
	}
	return false
}

// maybe: acquire o, or an extension of its lease, may have kept the lock
// taken at x (an outcome unknown).
func (j *refJudgeState) maybe(o *refOp, x int64) bool {
	E := tick(j.s.Expiry) + tick(j.s.Retry)
	if o.typ != history.OK && o.typ != history.Fail {
		return 2*o.inv < x && x < 2*(o.end+E)
	}
	if o.typ == history.OK {
		for _, e := range j.lease(o, history.Extend) {
			if e.typ != history.OK && e.typ != history.Fail && 2*e.inv < x && x < 2*(e.end+E) {
				return true
			}
		}
	}
	return false
}

// onPath: the fault acts on the lock's servers (not the storage alone), on
// c's own links to them, on links between servers, or on c itself; a
// stall of the harness is on no one's path.
func (f *refFault) onPath(c string, clients []string) bool {
	switch {
	case slices.Contains([]string{"cut", "partition", "reset", "refuse", "delay"}, f.Kind):
		for _, l := range f.Links {
			if base(l.Node) == "storage" || base(l.Client) == "storage" {
				continue
			}
			if l.Client == c || !slices.Contains(clients, l.Client) {
				return true
			}
		}
		return false
	case slices.Contains([]string{"kill", "stop", "pause"}, f.Kind) || strings.HasPrefix(f.Kind, "clock"):
		return slices.ContainsFunc(f.Nodes, func(n string) bool { return n != "storage" })
	case strings.HasPrefix(f.Kind, "client-pause"):
		return slices.Contains(f.Nodes, c)
	case f.Kind == "stall":
		// The harness ran again; nothing of the lock's was faulted.
		return false
	}
	return true
}

func (f *refFault) grace() int64 {
	if strings.HasPrefix(f.Kind, "clock") {
		return tick(max(f.Offset, -f.Offset))
	}
	return 0
}
