package runstore

import (
	"sort"

	"splitbrain/checker"
	"splitbrain/history"
)

// result.json is a summary: it stays small however long the run (a run of a
// million operations once wrote 293 MB listing every belief and attempt).
// What is bulky — every belief interval and failed acquire — is derived
// again from history.jsonl whenever it is needed (`splitbrain check`
// rebuilds it, and the report is drawn from it when the run is judged);
// result.json keeps the verdicts, the properties, the counts, and each
// listed violation with its window and the operations in it.

// Window is one listed violation of an interval property (P1 or P2) with
// what explains it: the two beliefs that overlapped and the history's
// events around it.
type Window struct {
	// Property is checker.PropLeaseLock or checker.PropCriticalSection.
	Property string    `json:"property"`
	Key      string    `json:"key"`
	Clients  [2]string `json:"clients"`
	// From and To bound the window: from the earlier of the two acquires'
	// invokes to the end of the overlap.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Beliefs are the two overlapping beliefs (fewer if one is not found,
	// as in a result of an older checker).
	Beliefs []checker.Belief `json:"beliefs"`
	// Events are the history's events on Key and the nemesis events in
	// [From, To], the acquires of the two beliefs among them; at most
	// MaxWindowEvents, and only for the first WindowsWithEvents windows
	// of each property. MoreEvents counts those left out.
	Events     []history.Event `json:"events,omitempty"`
	MoreEvents int             `json:"more_events,omitempty"`
}

// Bounds of result.json's windows: with checker.MaxViolations windows per
// property the file stays well under a megabyte.
const (
	WindowsWithEvents = 5
	MaxWindowEvents   = 64
)

// summary is res as result.json carries it: each key's counts without its
// beliefs and attempts, and the clients without the numbered processes
// they continued as after unknown outcomes (c1.1, c1.2, ... are c1's; a
// long run has thousands).
func summary(res checker.Result) checker.Result {
	out := res
	out.Keys = make([]checker.KeyInfo, len(res.Keys))
	for i, k := range res.Keys {
		k.Beliefs, k.Attempts = nil, nil
		out.Keys[i] = k
	}
	out.Clients = nil
	seen := map[string]bool{}
	for _, c := range res.Clients {
		base := history.ClientOf(c)
		if !seen[base] {
			seen[base] = true
			out.Clients = append(out.Clients, base)
		}
	}
	return out
}

// windows explains each listed violation of P1 and P2.
func windows(res checker.Result, events []history.Event) []Window {
	var out []Window
	add := func(prop string, vs []checker.Violation, cs bool) {
		for i, v := range vs {
			w := Window{Property: prop, Key: v.Key, Clients: v.Clients, From: v.From, To: v.To}
			for _, c := range v.Clients {
				if b, ok := coveringBelief(res, v, c, cs); ok {
					w.Beliefs = append(w.Beliefs, b)
					w.From = min(w.From, b.Invoke)
				}
			}
			if i < WindowsWithEvents {
				w.Events, w.MoreEvents = windowEvents(events, v.Key, w.From, w.To)
			}
			out = append(out, w)
		}
	}
	add(checker.PropLeaseLock, res.Violations, false)
	if res.CriticalSection != nil {
		add(checker.PropCriticalSection, res.CriticalSection.Violations, true)
	}
	return out
}

// coveringBelief finds client's belief on v.Key that covers the overlap
// [v.From, v.To] (its critical section, for P2).
func coveringBelief(res checker.Result, v checker.Violation, client string, cs bool) (checker.Belief, bool) {
	for _, k := range res.Keys {
		if k.Key != v.Key {
			continue
		}
		bs := k.Beliefs // sorted by Start
		i := sort.Search(len(bs), func(i int) bool { return bs[i].Start > v.From })
		for i--; i >= 0; i-- {
			b := bs[i]
			end := b.End
			if cs {
				end = b.CSEnd
			}
			if b.Client == client && (end >= v.To || b.EndReason == checker.EndOpen) {
				return b, true
			}
		}
	}
	return checker.Belief{}, false
}

// windowEvents lists the events of key and the nemesis events in [from,
// to] in history order, at most MaxWindowEvents of them; more counts the
// rest. The events that opened the two beliefs are among them: an
// acquire's invoke is the window's start at the earliest.
func windowEvents(events []history.Event, key string, from, to int64) (list []history.Event, more int) {
	start := sort.Search(len(events), func(i int) bool { return events[i].Time >= from })
	for _, e := range events[start:] {
		if e.Time > to {
			break
		}
		if e.Key != key && e.F != history.Nemesis {
			continue
		}
		if len(list) < MaxWindowEvents {
			list = append(list, e)
		} else {
			more++
		}
	}
	return list, more
}
