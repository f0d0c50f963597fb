package pages

import (
	"splitbrain/checker"
	"splitbrain/runstore"
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
// with the numbers it reports itself.
func propertyRows(res checker.Result) []propertyRow {
	out := make([]propertyRow, 0, len(res.Properties))
	for _, p := range res.Properties {
		out = append(out, propertyRow{
			Name:    p.Name,
			Verdict: runstore.ShownVerdict(p.Verdict),
			Decides: p.Decides,
			Reason:  p.Reason,
			Numbers: p.Numbers,
		})
	}
	return out
}
