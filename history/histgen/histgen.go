// Package histgen writes long synthetic lease-lock histories of a known
// shape, without Redis, for measuring the path a user takes on a long run:
// `splitbrain check` reading, checking and reporting a history of millions
// of events. The histories are what the workload records (same processes,
// fields and outcomes), made up by a simulation instead of a cluster.
package histgen

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"

	"splitbrain/history"
)

// Mutex describes a history of Clients contending for Keys locks: each
// client loops over acquire of a key drawn at random, as the workload
// draws it (granted when the key is free, refused otherwise, and
// now and then of unknown outcome), a hold in which it may extend its lease
// (extends too can fail or be unknown), and a release. A client whose
// operation had an unknown outcome continues under a new process id
// (c1.1, c1.2, ...), as the workload does. A few network cuts come and go.
// Ops counts operations (an invoke and its completion, as in Jepsen).
type Mutex struct {
	Clients int
	// Keys is the number of locks; 0 or 1 is one, named Key, and more
	// are named Key-1 … Key-N, as a scenario's workload.keys names them.
	Keys int
	Ops  int
	Seed uint64
	// ViolateAt > 0 grants the first acquire completing after operation
	// ViolateAt while another client holds the lock: one overlap of two
	// beliefs, which the checker must find.
	ViolateAt int
}

// Key is the lock the generated clients contend for (the prefix of the
// keys' names when there are several).
const Key = "lock"

// KeyNames names the keys of a history of Keys locks.
func (m Mutex) KeyNames() []string {
	if m.Keys <= 1 {
		return []string{Key}
	}
	out := make([]string, m.Keys)
	for i := range out {
		out[i] = Key + "-" + strconv.Itoa(i+1)
	}
	return out
}

// TTL is the lease time of the generated acquires and extends.
const TTL = 200 * ms

// Nodes are the nodes the generated grants name.
var Nodes = []string{"n1", "n2", "n3", "n4", "n5"}

const (
	ms = int64(1_000_000)
	// drift is what the lock takes off a lease's validity: 1 % of the
	// TTL plus 2 ms, as Redlock does.
	drift = TTL/100 + 2*ms
	// Probabilities, in per mille.
	unknownPerMille = 15
	extendPerMille  = 300
	// A network cut starts every faultEvery operations and lasts
	// faultFor.
	faultEvery = 20_000
	faultFor   = 300 * ms
)

type client struct {
	name    string
	process string
	restart int
	next    int64 // when the client acts next
	idx     int
	key     string // the key of the acquire in flight or the hold

	// state
	pending  history.Func // the operation in flight, "" when none
	invoked  int64
	holding  bool
	value    string
	deadline int64
	extends  int // extends left in this hold
}

type clients []*client

func (h clients) Len() int { return len(h) }
func (h clients) Less(i, j int) bool {
	if h[i].next != h[j].next {
		return h[i].next < h[j].next
	}
	return h[i].idx < h[j].idx
}
func (h clients) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *clients) Push(x any)   { *h = append(*h, x.(*client)) }
func (h *clients) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Write writes the history as JSON Lines to w, streaming: it never holds
// more than one event. It ends with the harness's end-of-run event, so the
// history reads as a run that finished.
func (m Mutex) Write(w io.Writer) error {
	if m.Clients < 1 || m.Ops < 1 {
		return fmt.Errorf("histgen: want at least one client and one operation, got %d clients and %d operations", m.Clients, m.Ops)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	g := gen{w: bw, r: rand.New(rand.NewPCG(m.Seed, 0x5b)), m: m}
	g.run()
	if g.err != nil {
		return g.err
	}
	return bw.Flush()
}

type gen struct {
	w     *bufio.Writer
	r     *rand.Rand
	m     Mutex
	index int64
	last  int64
	err   error
	buf   []byte

	keys     []string
	holders  map[string]lease // value → every lease the lock granted and nobody released
	faultID  int
	faultEnd int64 // when the open cut heals; 0 when none is open
	injected bool
}

func (g *gen) emit(e history.Event) {
	if g.err != nil {
		return
	}
	e.Index = g.index
	g.index++
	e.Time = max(e.Time, g.last)
	g.last = e.Time
	b, err := json.Marshal(e)
	if err == nil {
		g.buf = append(append(g.buf[:0], b...), '\n')
		_, err = g.w.Write(g.buf)
	}
	if err != nil {
		g.err = fmt.Errorf("histgen: writing event %d: %w", e.Index, err)
	}
}

type lease struct {
	key      string
	deadline int64
}

// held reports whether a lease on key is valid at t.
func (g *gen) held(key string, t int64) bool {
	for _, l := range g.holders {
		if l.key == key && l.deadline > t {
			return true
		}
	}
	return false
}

func (g *gen) fault(at int64, phase string) {
	f := history.Fault{ID: g.faultID, Kind: "cut", Phase: phase}
	if phase == history.PhaseStart {
		c := 1 + g.r.IntN(g.m.Clients)
		f.Links = []history.Link{{Client: "c" + strconv.Itoa(c), Node: "n4"}, {Client: "c" + strconv.Itoa(c), Node: "n5"}}
		f.Detail = fmt.Sprintf("c%d cut from n4 and n5", c)
	}
	g.emit(history.Event{Process: history.ProcessNemesis, Type: history.Info, F: history.Nemesis,
		Value: history.MustValue(f), Time: at})
}

func (g *gen) run() {
	g.holders = map[string]lease{}
	g.keys = g.m.KeyNames()
	var h clients
	for i := range g.m.Clients {
		name := "c" + strconv.Itoa(i+1)
		h = append(h, &client{name: name, process: name, next: int64(i) * ms / 10, idx: i})
	}
	heap.Init(&h)
	ops, acquires := 0, 0
	for ops < g.m.Ops && g.err == nil {
		c := h[0]
		now := c.next
		if g.faultEnd != 0 && now >= g.faultEnd {
			g.fault(g.faultEnd, history.PhaseStop)
			g.faultEnd = 0
		}
		if g.faultEnd == 0 && ops/faultEvery > g.faultID && ops > 0 {
			g.faultID++
			g.fault(now, history.PhaseStart)
			g.faultEnd = now + faultFor
		}
		switch {
		case c.pending == "" && !c.holding:
			c.pending, c.invoked = history.Acquire, now
			c.key = g.keys[0]
			if len(g.keys) > 1 {
				// One key draws nothing: its histories stay those of
				// the one-lock generator, byte for byte.
				c.key = g.keys[g.r.IntN(len(g.keys))]
			}
			g.emit(history.Event{Process: c.process, Type: history.Invoke, F: history.Acquire, Key: c.key, Time: now, TTL: TTL})
			c.next = now + ms + g.r.Int64N(2*ms)
		case c.pending == history.Acquire:
			ops++
			acquires++
			inject := !g.injected && g.m.ViolateAt > 0 && ops >= g.m.ViolateAt && g.held(c.key, now)
			switch {
			case !inject && g.r.IntN(1000) < unknownPerMille:
				g.emit(history.Event{Process: c.process, Type: history.Info, F: history.Acquire, Key: c.key, Time: now,
					Err: "context deadline exceeded: no reply from 3 of 5 nodes"})
				g.restart(c)
				c.next = now + 5*ms + g.r.Int64N(20*ms)
			case inject || !g.held(c.key, c.invoked) && !g.held(c.key, now):
				g.injected = g.injected || inject
				c.value = c.name + "-" + strconv.Itoa(acquires)
				c.deadline = c.invoked + TTL - drift
				c.holding, c.extends = true, 0
				if g.r.IntN(1000) < extendPerMille {
					c.extends = 1 + g.r.IntN(3)
				}
				g.holders[c.value] = lease{c.key, c.deadline}
				d := c.deadline
				g.emit(history.Event{Process: c.process, Type: history.OK, F: history.Acquire, Key: c.key, Time: now,
					Value: history.MustValue(c.value), Deadline: &d, Nodes: Nodes[:3+g.r.IntN(3)]})
				c.next = now + 5*ms + g.r.Int64N(40*ms)
			default:
				g.emit(history.Event{Process: c.process, Type: history.Fail, F: history.Acquire, Key: c.key, Time: now,
					Err: "not acquired: quorum not reached"})
				c.next = now + 5*ms + g.r.Int64N(20*ms)
			}
			c.pending = ""
		case c.holding && c.pending == "" && c.extends > 0:
			c.extends--
			c.pending, c.invoked = history.Extend, now
			g.emit(history.Event{Process: c.process, Type: history.Invoke, F: history.Extend, Key: c.key, Time: now,
				Value: history.MustValue(c.value), TTL: TTL})
			c.next = now + ms + g.r.Int64N(2*ms)
		case c.pending == history.Extend:
			ops++
			switch {
			case g.r.IntN(1000) < unknownPerMille:
				// The client keeps relying on its lease until the old
				// deadline, under a new process id.
				g.emit(history.Event{Process: c.process, Type: history.Info, F: history.Extend, Key: c.key, Time: now,
					Value: history.MustValue(c.value), Err: "i/o timeout"})
				g.restart(c)
			case now < c.deadline:
				c.deadline = c.invoked + TTL - drift
				g.holders[c.value] = lease{c.key, c.deadline}
				d := c.deadline
				g.emit(history.Event{Process: c.process, Type: history.OK, F: history.Extend, Key: c.key, Time: now,
					Value: history.MustValue(c.value), Deadline: &d, Nodes: Nodes[:3]})
			default:
				g.emit(history.Event{Process: c.process, Type: history.Fail, F: history.Extend, Key: c.key, Time: now,
					Value: history.MustValue(c.value), Err: "not extended: the lease was lost"})
			}
			c.pending = ""
			c.next = now + 5*ms + g.r.Int64N(40*ms)
		case c.holding && c.pending == "":
			c.pending = history.Release
			delete(g.holders, c.value)
			g.emit(history.Event{Process: c.process, Type: history.Invoke, F: history.Release, Key: c.key, Time: now,
				Value: history.MustValue(c.value)})
			c.next = now + ms/2 + g.r.Int64N(ms)
		case c.pending == history.Release:
			ops++
			typ, msg := history.OK, ""
			if now > c.deadline {
				typ, msg = history.Fail, "not released: the lease was lost"
			}
			g.emit(history.Event{Process: c.process, Type: typ, F: history.Release, Key: c.key, Time: now,
				Value: history.MustValue(c.value), Err: msg})
			c.pending, c.holding = "", false
			c.next = now + g.r.Int64N(2*ms)
		}
		heap.Fix(&h, 0)
	}
	// Operations still in flight stay pending, as in a run that ended while
	// they waited; the open cut is healed and the run ends.
	end := g.last + ms
	if g.faultEnd != 0 {
		g.fault(end, history.PhaseStop)
	}
	g.emit(history.Event{Process: history.ProcessHarness, Type: history.Info, F: history.End, Time: end})
}

// restart gives c a new process id after an unknown outcome.
func (g *gen) restart(c *client) {
	c.restart++
	c.process = c.name + "." + strconv.Itoa(c.restart)
}
