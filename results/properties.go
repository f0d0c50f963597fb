package results

import (
	"fmt"

	"splitbrain/checker"
)

// propertyRow is one property the checker judged, as the report's
// Properties table shows it.
type propertyRow struct {
	Name    string
	Verdict string
	// Decides is false for a property that explains but does not decide
	// the verdict (P2 when fencing guards the resource).
	Decides bool
	Reason  string
	// Numbers are its key counts, in words: "1 lost update".
	Numbers []string
}

// propertyRows lists the properties of res in the checker's order, each
// with the numbers that say how much it found.
func propertyRows(res checker.Result) []propertyRow {
	out := make([]propertyRow, 0, len(res.Properties))
	for _, p := range res.Properties {
		out = append(out, propertyRow{
			Name:    p.Name,
			Verdict: shownVerdict(p.Verdict),
			Decides: p.Decides,
			Reason:  p.Reason,
			Numbers: propertyNumbers(res, p.Name),
		})
	}
	return out
}

func propertyNumbers(res checker.Result, name string) []string {
	var n numbers
	switch name {
	case checker.PropLeaseLock:
		n.add(res.ViolationCount, "overlap", "overlaps", true)
		n.add(res.Ops, "porcupine operation", "porcupine operations", false)
	case checker.PropCriticalSection:
		if cs := res.CriticalSection; cs != nil {
			n.add(cs.ViolationCount, "overlapping critical section", "overlapping critical sections", true)
			n.add(cs.Ops, "porcupine operation", "porcupine operations", false)
		}
	case checker.PropCounter:
		if c := res.Counter; c != nil {
			n.add(c.LostUpdates, "lost update", "lost updates", true)
			var applied, rejected, unknown int
			for _, k := range c.Keys {
				applied, rejected, unknown = applied+k.Applied, rejected+k.Rejected, unknown+k.Unknown
			}
			n.writes(applied, rejected, unknown)
		}
	case checker.PropBank:
		if b := res.Bank; b != nil {
			n.add(b.LostTransfers, "lost transfer", "lost transfers", true)
			n.add(b.BadReads, "read with a wrong total or a negative balance", "reads with a wrong total or a negative balance", b.BadReads > 0)
			var applied, rejected, unknown int
			for _, k := range b.Keys {
				applied, rejected, unknown = applied+k.Applied, rejected+k.Rejected, unknown+k.Unknown
			}
			n.writes(applied, rejected, unknown)
		}
	case checker.PropSet:
		if s := res.Set; s != nil {
			n.add(s.LostCount, "lost add", "lost adds", true)
			n.add(len(s.Unexpected), "element never added", "elements never added", len(s.Unexpected) > 0)
			n.add(len(s.Resurrected), "rejected add present", "rejected adds present", len(s.Resurrected) > 0)
			var acked, rejected, unknown int
			for _, k := range s.Keys {
				acked, rejected, unknown = acked+k.Acknowledged, rejected+k.Rejected, unknown+k.Unknown
			}
			n.add(acked, "acknowledged add", "acknowledged adds", false)
			n.add(rejected, "rejected add", "rejected adds", rejected > 0)
			n.add(unknown, "add of unknown outcome", "adds of unknown outcome", unknown > 0)
		}
	case checker.PropFencing:
		if f := res.Fencing; f != nil {
			n.add(len(f.Violations), "token regression", "token regressions", true)
			n.add(f.Rejected, "rejected write", "rejected writes", true)
			n.add(f.Accepted, "accepted write", "accepted writes", false)
			n.add(f.Untokened, "write without a token", "writes without a token", f.Untokened > 0)
		}
	}
	return n
}

// numbers collects counts in words.
type numbers []string

// add appends "n things"; a zero count only when always, since "0 lost
// updates" is news where a loss was looked for.
func (n *numbers) add(count int, one, many string, always bool) {
	if count == 0 && !always {
		return
	}
	word := many
	if count == 1 {
		word = one
	}
	*n = append(*n, fmt.Sprintf("%d %s", count, word))
}

func (n *numbers) writes(applied, rejected, unknown int) {
	n.add(applied, "applied write", "applied writes", false)
	n.add(rejected, "rejected write", "rejected writes", rejected > 0)
	n.add(unknown, "write of unknown outcome", "writes of unknown outcome", unknown > 0)
}
