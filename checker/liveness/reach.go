package liveness

import (
	"cmp"
	"slices"
	"strings"

	"splitbrain/checker/paired"
	"splitbrain/history"
)

// Fault kinds as the nemesis records them (package fault, which the
// checker does not import: it reads histories, not the harness).
const (
	kindCut         = "cut"
	kindReset       = "reset"
	kindRefuse      = "refuse"
	kindDelay       = "delay"
	kindPartition   = "partition"
	kindClockJump   = "clock-jump"
	kindClockStrobe = "clock-strobe"
	kindClockReset  = "clock-reset"
	kindPause       = "pause"
	kindKill        = "kill"
	kindStop        = "stop"
	kindClientPause = "client-pause"
	kindClientHeld  = "client-pause-held"
	// kindStall is no nemesis fault but the harness standing still
	// (history.Stall): its in-process clients, their background renewals
	// and the links it relays stood still with it, so the checker reads
	// it as every client held (stalls).
	kindStall = "stall"
	// pointAfterAcquire is fault.AfterAcquire, where a held client has
	// its grant in hand.
	pointAfterAcquire = "after-acquire"
)

// storageNode is the protected storage's name in the history's links
// (spec.StorageNode): it is no node of the lock, and a fault on it keeps
// no client from the lock.
const storageNode = "storage"

// faultClass is what a fault does to the lock's clients.
type faultClass int

const (
	// classLink cuts, resets, refuses or delays the bytes of its links.
	classLink faultClass = iota
	// classNode takes its nodes down (killed, stopped, paused).
	classNode
	// classClock moves its nodes' clocks.
	classClock
	// classClient stops its clients (Nodes names them).
	classClient
	// classOther is anything else (a replica's promotion, a kind this
	// checker does not know): on every client's path, and it keeps every
	// client from the nodes while it lasts, so that nothing is judged of
	// a fault not understood.
	classOther
)

func classOf(kind string) faultClass {
	switch kind {
	case kindCut, kindReset, kindRefuse, kindDelay, kindPartition:
		return classLink
	case kindKill, kindStop, kindPause:
		return classNode
	case kindClockJump, kindClockStrobe, kindClockReset:
		return classClock
	case kindClientPause, kindClientHeld, kindStall:
		return classClient
	}
	return classOther
}

// fault is one nemesis fault as the liveness checks read it.
type fault struct {
	paired.FaultWindow
	class faultClass
	// from is when it began to act (Began, else its start event).
	from int64
}

func faultsOf(ws []paired.FaultWindow) []fault {
	out := make([]fault, len(ws))
	for i, w := range ws {
		from := w.Start
		if w.Began > 0 && w.Began < from {
			from = w.Began
		}
		out[i] = fault{FaultWindow: w, class: classOf(w.Kind), from: from}
	}
	return out
}

// stalls are the harness's stalls in events as faults that hold every
// one of clients for their length (a driver's stall, its own client): a
// refusal then is owed nothing (reach's stalled), and a holder that could
// not renew may have lost its lock.
// Without this a stall on a slow machine would be judged the lock's
// failure to serve; the checker notes each stall besides (package
// checker), so none goes unseen. A stall is on no client's path (reach's
// path): nothing of the lock's was faulted, so an attempt after it is
// judged by the promise it would be judged by without it.
func stalls(events []history.Event, clients []string) []fault {
	var out []fault
	for i := range events {
		e := &events[i]
		if e.F != history.Stall {
			continue
		}
		stood, err := e.Stood()
		if err != nil {
			// Noted by the checker; a stall of no known length holds
			// no one.
			continue
		}
		held := clients
		if e.Process != history.ProcessHarness {
			// A driver's process stood still: its client alone.
			held = []string{e.Process}
		}
		w := paired.FaultWindow{Fault: history.Fault{Kind: kindStall, Nodes: held}, Start: e.Time - stood, End: e.Time, Healed: true}
		out = append(out, fault{FaultWindow: w, class: classClient, from: w.Start})
	}
	return out
}

// endName is the node a link's end names: n2 for a member's election
// port, n2:election.
func endName(s string) string {
	name, _, _ := strings.Cut(s, ":")
	return name
}

// onPath reports whether f is on client c's path to the lock: it acts on
// the lock's servers (a node, a clock, a link between servers), on c's
// own links to them, or on c itself. A fault on the storage alone, or
// only on other clients, is not.
func (f fault) onPath(c string, clients map[string]bool) bool {
	switch f.class {
	case classLink:
		for _, l := range f.Links {
			if endName(l.Node) == storageNode || endName(l.Client) == storageNode {
				continue
			}
			if l.Client == c || !clients[l.Client] {
				// c's own link, or one between servers.
				return true
			}
		}
		return false
	case classNode, classClock:
		return slices.ContainsFunc(f.Nodes, func(n string) bool { return n != storageNode })
	case classClient:
		return slices.Contains(f.Nodes, c)
	}
	return true
}

// splitsEnsemble reports whether f takes a member of the ensemble down or
// cuts a link between two members: the ensemble may elect a new leader.
func (f fault) splitsEnsemble(s history.LockSetup) bool {
	switch f.class {
	case classNode:
		return slices.ContainsFunc(f.Nodes, func(n string) bool { return slices.Contains(s.Nodes, n) })
	case classLink:
		return slices.ContainsFunc(f.Links, func(l history.Link) bool {
			return slices.Contains(s.Nodes, endName(l.Client)) && slices.Contains(s.Nodes, endName(l.Node))
		})
	}
	return false
}

// grace is how long after its heal a fault still keeps the lock from
// behaving as its expiry says: a clock moved by an offset leaves keys set
// meanwhile expiring that much later or earlier.
func (f fault) grace() int64 {
	if f.class == classClock {
		return max(f.Offset, -f.Offset)
	}
	return 0
}

// reach is what the faults left of each client's way to the lock, over
// time, as stretches during which something was false of it.
type reach struct {
	// cannot: the client could not reach enough of the lock's nodes (a
	// majority of a quorum lock, the master of a single instance, and the
	// replicas Redisson's scheme waits for), a clock fault was active on
	// a node, or the client was stopped. The lock promises nothing there.
	cannot spans
	// noRenew: a holder could not keep its lock alive in the background:
	// it could not reach a quorum (a single instance's master), or it was
	// held at its gate.
	noRenew spans
	// lost are, for each node of the lock, the stretches during which it
	// was down or cut from the client: a key it holds is out of the
	// client's reach (its release or rollback misses it).
	lost map[string]spans
	// path: a fault was on the client's path (onPath), each until its heal
	// plus its grace.
	path spans
	// heldAfterGrant are the starts of the client's stops at its
	// after-acquire point: a grant the client was then holding had taken
	// effect before.
	heldAfterGrant []int64
	// stalled: the harness, or the client's driver, stood still
	// (history.Stall). A refusal then is owed nothing (the client could
	// not run); a grant still shows the lock live, so it is judged (a
	// slow machine's stalls would otherwise leave attempts unjudged: CI
	// saw minority-partition's ensemble judge none).
	stalled spans
}

// reaches works out each client's reach from the faults and the lock's
// setup: the faults' starts and heals cut time into stretches during each
// of which the same faults are active.
func reaches(s history.LockSetup, faults []fault, clientList []string) map[string]*reach {
	clients := map[string]bool{}
	for _, c := range clientList {
		clients[c] = true
	}
	out := map[string]*reach{}
	type raw struct {
		cannot, noRenew, path []span
		lost                  map[string][]span
	}
	acc := map[string]*raw{}
	for _, c := range clientList {
		acc[c] = &raw{lost: map[string][]span{}}
	}
	for _, f := range faults {
		for _, c := range clientList {
			if to := f.End + f.grace(); to > f.from && f.Kind != kindStall && f.onPath(c, clients) {
				// A fault that lasted no time was on no one's path.
				acc[c].path = append(acc[c].path, span{f.from, to})
			}
		}
		if s.Peers && f.splitsEnsemble(s) {
			// The ensemble may have lost its leader, or take a
			// member back: no one is served until it has settled
			// (an election) and the clients have found the leader
			// again, a retry interval and a reconnect after either.
			for _, c := range clientList {
				settle := s.Retry + s.Reconnect
				acc[c].cannot = append(acc[c].cannot, span{f.from, f.from + settle}, span{f.End, f.End + settle})
			}
		}
	}
	// The faults' starts and heals, in time order (a start before a heal
	// at the same instant: a fault of no length still begins and ends).
	type edge struct {
		at    int64
		start bool
		f     int
	}
	edges := make([]edge, 0, 2*len(faults))
	for i, f := range faults {
		edges = append(edges, edge{f.from, true, i}, edge{f.End, false, i})
	}
	slices.SortStableFunc(edges, func(x, y edge) int {
		if x.at != y.at {
			return cmp.Compare(x.at, y.at)
		}
		switch {
		case x.start == y.start:
			return 0
		case x.start:
			return -1
		}
		return 1
	})
	active := map[int]fault{}
	for i := 0; i < len(edges); {
		at := edges[i].at
		for ; i < len(edges) && edges[i].at == at; i++ {
			if e := edges[i]; e.start {
				active[e.f] = faults[e.f]
			} else {
				delete(active, e.f)
			}
		}
		if len(active) == 0 || i == len(edges) {
			continue
		}
		next := edges[i].at
		st := stateOf(s, active)
		for _, c := range clientList {
			r := acc[c]
			ok, renew := st.reach(s, c)
			if !ok {
				r.cannot = append(r.cannot, span{at, next})
			}
			if !renew {
				r.noRenew = append(r.noRenew, span{at, next})
			}
			for _, n := range s.Nodes {
				if st.lost(c, n) {
					r.lost[n] = append(r.lost[n], span{at, next})
				}
			}
		}
	}
	for c, r := range acc {
		lost := map[string]spans{}
		for n, ss := range r.lost {
			lost[n] = merged(ss)
		}
		out[c] = &reach{cannot: merged(r.cannot), noRenew: merged(r.noRenew), lost: lost, path: merged(r.path)}
	}
	// A stall holds the clients it names: every one for the harness's,
	// its own client for a driver's.
	stalled := map[string][]span{}
	for _, f := range faults {
		if f.Kind == kindStall {
			for _, c := range f.Nodes {
				stalled[c] = append(stalled[c], span{f.from, f.End})
			}
		}
	}
	for c, r := range out {
		r.stalled = merged(stalled[c])
	}
	for _, f := range faults {
		if f.Kind != kindClientHeld || f.Point != pointAfterAcquire {
			continue
		}
		for _, c := range f.Nodes {
			if r := out[c]; r != nil {
				r.heldAfterGrant = append(r.heldAfterGrant, f.from)
			}
		}
	}
	return out
}

// state is what a set of active faults does: the nodes down, the links
// faulted, the clients stopped.
type state struct {
	down    map[string]bool
	links   map[history.Link]bool // by their ends' names
	clock   bool
	stopped map[string]bool // client-pause: the client does nothing
	held    map[string]bool // client-pause-held: not even its background
	other   bool
}

func stateOf(s history.LockSetup, active map[int]fault) state {
	st := state{down: map[string]bool{}, links: map[history.Link]bool{}, stopped: map[string]bool{}, held: map[string]bool{}}
	lockNodes := map[string]bool{}
	for _, n := range s.Nodes {
		lockNodes[n] = true
	}
	for _, n := range s.Replicas {
		lockNodes[n] = true
	}
	for _, f := range active {
		switch f.class {
		case classLink:
			for _, l := range f.Links {
				st.links[history.Link{Client: endName(l.Client), Node: endName(l.Node)}] = true
			}
		case classNode:
			for _, n := range f.Nodes {
				st.down[n] = true
			}
		case classClock:
			for _, n := range f.Nodes {
				st.clock = st.clock || lockNodes[n]
			}
		case classClient:
			for _, c := range f.Nodes {
				// A stall stops nothing the lock could be blamed for
				// by itself (reach's stalled): its clients are held.
				st.stopped[c] = st.stopped[c] || f.Kind != kindStall
				if f.Kind == kindClientHeld || f.Kind == kindStall {
					st.held[c] = true
				}
			}
		default:
			st.other = true
		}
	}
	return st
}

// cut reports whether the link between a and b is faulted, in either
// direction.
func (st state) cut(a, b string) bool {
	return st.links[history.Link{Client: a, Node: b}] || st.links[history.Link{Client: b, Node: a}]
}

// lost reports whether node n is out of client c's reach under st: down,
// cut from it, or under a fault the checker does not know.
func (st state) lost(c, n string) bool { return st.down[n] || st.cut(c, n) || st.other }

// reach says, for client c under st, whether it can reach what the lock
// needs (ok), and whether it could keep a lock it holds alive (renew).
func (st state) reach(s history.LockSetup, c string) (ok, renew bool) {
	var up []string
	for _, n := range s.Nodes {
		if !st.lost(c, n) {
			up = append(up, n)
		}
	}
	quorum := len(up) >= s.Quorum
	if quorum && s.Peers {
		quorum = connected(st, up, s.Quorum)
	}
	renew = quorum && !st.held[c] && !st.other
	ok = quorum && !st.clock && !st.stopped[c] && !st.other
	if ok && len(s.Replicas) > 0 {
		for _, r := range s.Replicas {
			if st.down[r] || st.cut(r, s.Nodes[0]) {
				ok = false
			}
		}
	}
	return ok, renew
}

// missed reports whether client c may have left the lock's key on a node
// in (a, b), having set it there before: some node it reached at an
// instant of (a, b) (of set, for a grant's) was out of its reach at
// another of (a, b).
func (r *reach) missed(set span, a, b int64) bool {
	for _, l := range r.lost {
		if !l.covers(set.from, set.to) && l.overlaps(a, b) {
			return true
		}
	}
	return false
}

// connected reports whether q of the nodes reach each other: a quorum of
// an ensemble that can serve.
func connected(st state, nodes []string, q int) bool {
	if len(nodes) > 16 {
		// No ensemble is that large; claim nothing rather than try 2^n
		// subsets.
		return false
	}
	for m := 0; m < 1<<len(nodes); m++ {
		var set []string
		for i, n := range nodes {
			if m&(1<<i) != 0 {
				set = append(set, n)
			}
		}
		if len(set) < q {
			continue
		}
		ok := true
		for i := 0; i < len(set) && ok; i++ {
			for j := i + 1; j < len(set) && ok; j++ {
				ok = !st.cut(set[i], set[j])
			}
		}
		if ok {
			return true
		}
	}
	return false
}
