package paired

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"splitbrain/history"
)

// How the checker and the reports write times, faults and client names.

// FaultLabel names a fault compactly, e.g. "clock-jump n3 +5s".
func FaultLabel(f history.Fault) string {
	parts := []string{f.Kind}
	if len(f.Nodes) > 0 {
		parts = append(parts, strings.Join(f.Nodes, ","))
	}
	if len(f.Links) > 0 {
		parts = append(parts, history.FormatLinks(f.Links, "→", " "))
	}
	if f.Offset != 0 {
		d := time.Duration(f.Offset).String()
		if f.Offset > 0 {
			d = "+" + d
		}
		parts = append(parts, d)
	}
	if f.Rate != 0 {
		parts = append(parts, "×"+strconv.FormatFloat(f.Rate, 'g', -1, 64))
	}
	return strings.Join(parts, " ")
}

// Seconds formats a time or duration in nanoseconds the way reports do:
// "2.31s", "0.740s", "3.2ms".
func Seconds(ns int64) string {
	d := time.Duration(ns)
	abs := d
	if abs < 0 {
		abs = -abs
	}
	switch {
	case d == 0:
		return "0s"
	case abs >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	case abs >= 10*time.Millisecond:
		return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + "s"
	default:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	}
}

// SortNatural sorts names so that "c2" comes before "c10".
func SortNatural(names []string) {
	sort.SliceStable(names, func(i, j int) bool { return naturalLess(names[i], names[j]) })
}

func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		ai, bi := digitRun(a), digitRun(b)
		if ai > 0 && bi > 0 {
			na, nb := strings.TrimLeft(a[:ai], "0"), strings.TrimLeft(b[:bi], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[ai:], b[bi:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// FaultWhen says when a fault was active: "clock-jump n3 +5s at 1.20s",
// "cut c1→n4 1.00s–2.50s".
func FaultWhen(f FaultWindow) string {
	switch {
	case f.End == f.Start:
		return fmt.Sprintf("%s at %s", f.Label(), Seconds(f.Start))
	case !f.Healed:
		return fmt.Sprintf("%s from %s, never healed", f.Label(), Seconds(f.Start))
	}
	return fmt.Sprintf("%s %s–%s", f.Label(), Seconds(f.Start), Seconds(f.End))
}

// FaultsDuring are the faults active at any time in [from, to], and their
// labels.
func FaultsDuring(faults []FaultWindow, from, to int64) ([]FaultWindow, []string) {
	var out []FaultWindow
	var labels []string
	for _, f := range faults {
		if f.Start <= to && f.End >= from {
			out = append(out, f)
			labels = append(labels, FaultWhen(f))
		}
	}
	return out, labels
}

// JoinFirst joins the first n items and says how many more there are.
func JoinFirst(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
}
