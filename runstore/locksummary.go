package runstore

import (
	"fmt"
	"slices"
	"strings"

	"splitbrain/checker"
)

// A matrix answers, per lock, the question its user asks: under which of
// the faults tried did it keep each of its promises, and what did its
// liveness cost. The page's summary and the terminal's are both read
// from Summary, so they cannot disagree.

// The promises a lock's summary counts, as the page and the terminal name
// them.
const (
	PromiseSafety          = "safety"
	PromiseResource        = "resource"
	PromiseDeadlockFreedom = "deadlock freedom"
	PromiseFaultTolerance  = "fault tolerance"
)

// PromiseTally is how one lock fared on one promise across the matrix's
// rows. A row counts when its cell was played and at least one play
// answered the promise: n/a and unplayed cells, and plays without the
// answer (no resource; a result judged before liveness was), are left
// out. A row is broken when one play broke the promise, unknown when
// none did and one could not tell, kept when every answering play kept
// it. Unknown is never kept.
type PromiseTally struct {
	Promise string   `json:"promise"`
	Rows    int      `json:"rows"`
	Kept    int      `json:"kept"`
	Broken  []string `json:"broken,omitempty"`
	Unknown []string `json:"unknown,omitempty"`
}

// LockSummary is one lock's column summed up.
type LockSummary struct {
	Lock string `json:"lock"`
	// Played counts the rows whose cell was played; NA the n/a rows.
	Played int `json:"played"`
	NA     int `json:"na"`
	// Safety is the lock's own promise (P1 and its tokens), Resource the
	// guarded resource's checks, then the two liveness promises.
	Safety          PromiseTally `json:"safety"`
	Resource        PromiseTally `json:"resource"`
	DeadlockFreedom PromiseTally `json:"deadlock_freedom"`
	FaultTolerance  PromiseTally `json:"fault_tolerance"`
	// KeptAll lists the rows under which the lock kept every promise its
	// plays answered (MatrixCell.KeptAll).
	KeptAll []string `json:"kept_all,omitempty"`
	// The price, from the availability figures of the rows that had
	// them (AvailRows): the worst share of attempts granted of any row
	// (a cell's median), the longest stretch with nothing granted and
	// the longest time from a heal to the next grant, each with its row.
	AvailRows          int     `json:"availability_rows,omitempty"`
	ShareRows          int     `json:"share_rows,omitempty"`
	WorstShare         float64 `json:"worst_share_granted,omitempty"`
	WorstShareRow      string  `json:"worst_share_row,omitempty"`
	LongestUnavailable int64   `json:"longest_unavailable_ns,omitempty"`
	LongestRow         string  `json:"longest_unavailable_row,omitempty"`
	MaxHealDelay       int64   `json:"max_heal_delay_ns,omitempty"`
	MaxHealRow         string  `json:"max_heal_delay_row,omitempty"`
	Expiry             int64   `json:"expiry_ns,omitempty"`
}

// Promises are the four tallies in the order the page and the terminal
// show them.
func (s LockSummary) Promises() []PromiseTally {
	return []PromiseTally{s.Safety, s.Resource, s.DeadlockFreedom, s.FaultTolerance}
}

// KeptAll reports whether the cell was played and no play broke, or
// could not tell, any promise it answered, nor had an invalid or unknown
// verdict: the lock keeps everything under this row as far as the plays
// show.
func (c MatrixCell) KeptAll() bool {
	if c.NA != "" || c.Runs == 0 {
		return false
	}
	return c.Invalid+c.Unknown+c.LockBroken+c.LockUnknown+c.ResourceHarmed+c.ResourceUnknown+
		c.DeadlockBroken+c.DeadlockUnknown+c.FaultBroken+c.FaultUnknown == 0
}

// add counts one row (a played cell) of a promise whose answering plays
// number runs, of which broken broke it and unknown could not tell.
func (t *PromiseTally) add(row string, runs, broken, unknown int) {
	switch {
	case runs == 0:
		return
	case broken > 0:
		t.Broken = append(t.Broken, row)
	case unknown > 0:
		t.Unknown = append(t.Unknown, row)
	default:
		t.Kept++
	}
	t.Rows++
}

// Summary sums up each lock's column, in the matrix's column order. The
// cells must be tallied (Prepare, or a matrix read back from
// matrix.json).
func (m Matrix) Summary() []LockSummary {
	byLock := map[string]*LockSummary{}
	var out []*LockSummary
	get := func(l string) *LockSummary {
		if s := byLock[l]; s != nil {
			return s
		}
		s := &LockSummary{Lock: l, Safety: PromiseTally{Promise: PromiseSafety}, Resource: PromiseTally{Promise: PromiseResource},
			DeadlockFreedom: PromiseTally{Promise: PromiseDeadlockFreedom}, FaultTolerance: PromiseTally{Promise: PromiseFaultTolerance}}
		byLock[l] = s
		out = append(out, s)
		return s
	}
	for _, l := range m.Locks {
		get(l)
	}
	// Rows in the matrix's row order, whatever the cells' order.
	rank := map[string]int{}
	for i, r := range m.Scenarios {
		rank[r] = i + 1
	}
	cells := make([]MatrixCell, len(m.Cells))
	copy(cells, m.Cells)
	// Stable: rows the matrix does not list come last, in their order.
	slices.SortStableFunc(cells, func(a, b MatrixCell) int { return rowRank(rank, a.Scenario) - rowRank(rank, b.Scenario) })
	for _, c := range cells {
		s := get(c.Lock)
		switch {
		case c.NA != "":
			s.NA++
			continue
		case c.Runs == 0:
			continue
		}
		s.Played++
		s.Safety.add(c.Scenario, c.Runs, c.LockBroken, c.LockUnknown)
		s.Resource.add(c.Scenario, c.ResourceRuns, c.ResourceHarmed, c.ResourceUnknown)
		s.DeadlockFreedom.add(c.Scenario, c.DeadlockRuns, c.DeadlockBroken, c.DeadlockUnknown)
		s.FaultTolerance.add(c.Scenario, c.FaultRuns, c.FaultBroken, c.FaultUnknown)
		if c.KeptAll() {
			s.KeptAll = append(s.KeptAll, c.Scenario)
		}
		if c.AvailRuns == 0 {
			continue
		}
		s.AvailRows++
		if c.ShareRuns > 0 {
			if s.ShareRows == 0 || c.MedianShare < s.WorstShare {
				s.WorstShare, s.WorstShareRow = c.MedianShare, c.Scenario
			}
			s.ShareRows++
		}
		if c.LongestUnavailable > s.LongestUnavailable {
			s.LongestUnavailable, s.LongestRow = c.LongestUnavailable, c.Scenario
		}
		if c.MaxHealDelay > s.MaxHealDelay {
			s.MaxHealDelay, s.MaxHealRow = c.MaxHealDelay, c.Scenario
		}
		s.Expiry = max(s.Expiry, c.Expiry)
	}
	res := make([]LockSummary, len(out))
	for i, s := range out {
		res[i] = *s
	}
	return res
}

// rows is "1 row" or "n rows".
func rows(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

func rowRank(rank map[string]int, row string) int {
	if n := rank[row]; n > 0 {
		return n
	}
	return len(rank) + 1
}

// ListNames joins names, at most limit of them (0: all) and then how many
// more: "a, b, c and 4 more".
func ListNames(names []string, limit int) string {
	if limit <= 0 || len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}

// Text is the tally in words: "9/14 (broken by a, b; unknown in c)",
// listing at most limit names of each kind (0: all); "not answered" when
// no row answered it.
func (t PromiseTally) Text(limit int) string {
	if t.Rows == 0 {
		return "not answered"
	}
	s := fmt.Sprintf("%d/%d", t.Kept, t.Rows)
	var why []string
	if len(t.Broken) > 0 {
		why = append(why, "broken by "+ListNames(t.Broken, limit))
	}
	if len(t.Unknown) > 0 {
		why = append(why, "unknown in "+ListNames(t.Unknown, limit))
	}
	if len(why) > 0 {
		s += " (" + strings.Join(why, "; ") + ")"
	}
	return s
}

// Price is the lock's availability price in words, or "" without
// figures: "granted ≥ 40% of attempts in every row (worst: x);
// unavailable up to 1.2s (y); next grant ≤ 0.8s after a heal (z)".
func (s LockSummary) Price() string {
	if s.AvailRows == 0 {
		return ""
	}
	var parts []string
	if s.ShareRows > 0 {
		parts = append(parts, fmt.Sprintf("granted %.0f%% of attempts in its worst row (%s)", 100*s.WorstShare, s.WorstShareRow))
	}
	if s.LongestUnavailable > 0 {
		parts = append(parts, fmt.Sprintf("unavailable up to %s (%s)", checker.Seconds(s.LongestUnavailable), s.LongestRow))
	} else {
		parts = append(parts, "never unavailable while clients tried")
	}
	if s.MaxHealDelay > 0 {
		parts = append(parts, fmt.Sprintf("next grant ≤ %s after a heal (%s)", checker.Seconds(s.MaxHealDelay), s.MaxHealRow))
	}
	if s.Expiry > 0 {
		parts = append(parts, "expiry "+checker.Seconds(s.Expiry))
	}
	return strings.Join(parts, ", ")
}

// String is the lock's summary on one line, as the terminal prints it:
// "redlock: safety kept in 9 of 14 (broken by clock-jump, …); resource
// 5/6; deadlock freedom 14/14; fault tolerance 12/13 (unknown in x);
// unavailable up to 1.2s (partition); n/a in 2 rows". At most limit
// row names per list (0: all).
func (s LockSummary) String() string { return s.Line(5) }

// Line is String with at most limit row names per list (0: all).
func (s LockSummary) Line(limit int) string {
	if s.Played == 0 {
		if s.NA > 0 {
			return fmt.Sprintf("%s: nothing played (n/a in %s)", s.Lock, rows(s.NA))
		}
		return s.Lock + ": nothing played"
	}
	var parts []string
	for _, t := range s.Promises() {
		if t.Rows == 0 {
			continue
		}
		txt := t.Text(limit)
		if t.Promise == PromiseSafety {
			txt = fmt.Sprintf("kept in %d of %d", t.Kept, t.Rows) + strings.TrimPrefix(txt, fmt.Sprintf("%d/%d", t.Kept, t.Rows))
		}
		parts = append(parts, t.Promise+" "+txt)
	}
	if p := s.Price(); p != "" {
		parts = append(parts, p)
	}
	if s.NA > 0 {
		parts = append(parts, "n/a in "+rows(s.NA))
	}
	return s.Lock + ": " + strings.Join(parts, "; ")
}
