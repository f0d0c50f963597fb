// Package lease checks the lock's own promise over the belief intervals of
// package paired, with porcupine's mutex model:
//
//   - lease-lock (P1): no two clients believed they held the same lock at
//     once, a belief lasting from the acquire's ok to min(validity deadline,
//     release). Clock jumps, amnesia and failover break it.
//   - critical-section (P2): the same with a belief lasting until the
//     critical section actually ended (the release, or the lease's last
//     resource operation). A client pause breaks it, though the lock kept
//     its promise.
//
// P1 always decides. P2 decides unless the storage checked fencing tokens
// (verdict.Property.YieldsToFencing): a fenced resource stays correct though
// critical sections overlap, and P2 then explains.
package lease

import (
	"splitbrain/checker/paired"
	"splitbrain/checker/search"
	"splitbrain/checker/verdict"
)

// Property names.
const (
	LeaseLock       = "lease-lock (P1)"
	CriticalSection = "critical-section (P2)"
)

// Violation is one pair of clients that believed they held the same lock at
// the same time (P1), or were in their critical sections at once (P2).
type Violation struct {
	Key     string    `json:"key"`
	Clients [2]string `json:"clients"`
	// From and To bound the overlap of the two intervals (ns since the
	// run started).
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Faults are the nemesis faults active at any time from the first of
	// the two acquires to the end of the overlap: the fault that breaks
	// exclusion usually acts before the overlap starts (a clock jump
	// expires the first holder's key, then the second client acquires).
	Faults []paired.FaultWindow `json:"faults,omitempty"`
	Text   string               `json:"text"`
}

// IntervalResult is the outcome of an interval property.
type IntervalResult struct {
	Verdict        verdict.Verdict `json:"verdict"`
	Reason         string          `json:"reason"`
	Violations     []Violation     `json:"violations,omitempty"`
	ViolationCount int             `json:"violation_count"`
	Ops            int             `json:"ops"`
}

// Checkers are P1 and P2, to run in that order: P2 takes over P1's search
// where their intervals are the same (every critical section ended with its
// belief). Each stores its result where p1 and p2 point.
func Checkers(p1, p2 *IntervalResult) (verdict.Checker, verdict.Checker) {
	var first *intervalCheck
	leaseLock := verdict.Func(func(cfg search.Config, h *paired.History) verdict.Property {
		c := checkIntervals(cfg, h.Keys, h.Clients, h.Faults, false, nil)
		*p1 = c.res
		if sameIntervals(h.Keys) {
			first = &c
		}
		return c.property(LeaseLock)
	})
	criticalSection := verdict.Func(func(cfg search.Config, h *paired.History) verdict.Property {
		c := checkIntervals(cfg, h.Keys, h.Clients, h.Faults, true, first)
		*p2 = c.res
		p := c.property(CriticalSection)
		p.YieldsToFencing, p.Within, p.WindowLast = true, LeaseLock, true
		return p
	})
	return leaseLock, criticalSection
}

func (c intervalCheck) property(name string) verdict.Property {
	p := verdict.Property{Name: name, Verdict: c.res.Verdict, Reason: c.res.Reason, Decides: true,
		Numbers: verdict.Count(nil, c.res.ViolationCount, "overlap", "overlaps", true)}
	if c.cs {
		p.Numbers = verdict.Count(nil, c.res.ViolationCount, "overlapping critical section", "overlapping critical sections", true)
	}
	p.Numbers = verdict.Count(p.Numbers, c.res.Ops, "porcupine operation", "porcupine operations", false)
	if c.res.Verdict == verdict.Invalid {
		p.Window = c.window
	}
	return p
}
