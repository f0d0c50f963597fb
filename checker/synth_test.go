package checker

import (
	"container/heap"
	"math/rand/v2"
	"strconv"

	"splitbrain/history"
)

// synthLock simulates clients contending for lease locks, without Redis, to
// give the checker long histories of a known shape: each client loops over
// acquire (granted when the key is free at the reply, failed otherwise),
// hold, release. Times are in nanoseconds; ops counts invoke/completion
// pairs. overlapAt > 0 makes the first acquire completing after op overlapAt
// succeed although the key is held: one injected violation.
type synthLock struct {
	clients, keys, ops, overlapAt int
	seed                          uint64
}

type synthClient struct {
	name    string
	next    int64 // when the client acts next
	key     string
	holding bool
	pending history.Func
	invoked int64
	idx     int
}

type clientHeap []*synthClient

func (h clientHeap) Len() int { return len(h) }
func (h clientHeap) Less(i, j int) bool {
	if h[i].next != h[j].next {
		return h[i].next < h[j].next
	}
	return h[i].idx < h[j].idx
}
func (h clientHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *clientHeap) Push(x any)   { *h = append(*h, x.(*synthClient)) }
func (h *clientHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (s synthLock) events() []history.Event {
	const (
		ms  = int64(1_000_000)
		ttl = 200 * ms
	)
	r := rand.New(rand.NewPCG(s.seed, 1))
	// holders[key][client] is the expiry of each lease on key; the
	// injected overlap makes two.
	holders := map[string]map[string]int64{}
	free := func(key string, at int64) bool {
		for _, exp := range holders[key] {
			if exp > at {
				return false
			}
		}
		return true
	}
	var h clientHeap
	for i := range s.clients {
		h = append(h, &synthClient{name: "c" + strconv.Itoa(i+1), next: int64(i) * ms / 10, idx: i})
	}
	heap.Init(&h)
	events := make([]history.Event, 0, 2*s.ops+2)
	add := func(e history.Event) {
		e.Index = int64(len(events))
		events = append(events, e)
	}
	ops := 0
	injected := false
	for ops < s.ops {
		c := h[0]
		now := c.next
		switch {
		case c.pending == "" && !c.holding:
			c.key = "k" + strconv.Itoa(r.IntN(s.keys))
			c.pending, c.invoked = history.Acquire, now
			add(history.Event{Process: c.name, Type: history.Invoke, F: history.Acquire, Key: c.key, Time: now})
			c.next = now + ms + r.Int64N(2*ms)
		case c.pending == history.Acquire:
			ops++
			ok := free(c.key, c.invoked)
			inject := !injected && s.overlapAt > 0 && ops >= s.overlapAt && !ok
			if ok || inject {
				injected = injected || inject
				if holders[c.key] == nil {
					holders[c.key] = map[string]int64{}
				}
				d := c.invoked + ttl
				holders[c.key][c.name] = d
				add(history.Event{Process: c.name, Type: history.OK, F: history.Acquire, Key: c.key, Time: now,
					Deadline: &d, Value: history.MustValue("v" + strconv.Itoa(ops))})
				c.holding = true
				c.next = now + 5*ms + r.Int64N(40*ms)
			} else {
				add(history.Event{Process: c.name, Type: history.Fail, F: history.Acquire, Key: c.key, Time: now, Err: "quorum not reached"})
				c.next = now + 5*ms + r.Int64N(20*ms)
			}
			c.pending = ""
		case c.holding && c.pending == "":
			c.pending = history.Release
			delete(holders[c.key], c.name)
			add(history.Event{Process: c.name, Type: history.Invoke, F: history.Release, Key: c.key, Time: now})
			c.next = now + ms/2 + r.Int64N(ms)
		case c.pending == history.Release:
			ops++
			add(history.Event{Process: c.name, Type: history.OK, F: history.Release, Key: c.key, Time: now})
			c.pending, c.holding = "", false
			c.next = now + r.Int64N(2*ms)
		}
		heap.Fix(&h, 0)
	}
	return events
}
