package pages

// What the timeline shows of faults: node lanes (clock offsets, pauses,
// kills), the network lane and the nemesis lane.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"splitbrain/checker"
)

// nodeFaults draws what happened to each node: its clock offset as a line
// with a marker at each jump (a step) or change of rate (a slope), pauses,
// and kills or restarts.
func nodeFaults(tl *timeline, ls *laneSet, faults []checker.FaultWindow, sc scale) {
	// change is a jump of the offset by delta at at, and a change of
	// its slope (ns of offset per ns of real time) from then on.
	type change struct {
		at    int64
		delta int64
		slope float64
	}
	clock := map[int][]change{}
	for _, f := range faults {
		title := faultTitle(f)
		for _, n := range f.Nodes {
			li, ok := ls.of["node:"+n]
			if !ok {
				li = ls.of["client:"+n]
			}
			ln := tl.Lanes[li]
			switch faultClass(f.Kind) {
			case "clock":
				tl.Under = append(tl.Under, sc.bar("fault-node fault-clock", f.Start, f.End, ln.Y+2, ln.H-4, title))
				if f.Rate != 0 {
					// The offset grows from the start and steps back to
					// where it was at the heal.
					slope := f.Rate - 1
					tl.Over = append(tl.Over, mark(f.Start, ln.Y+1, ln.Y+ln.H-1, "clock-jump", n+" ×"+strconv.FormatFloat(f.Rate, 'g', -1, 64), 5, ln.TextY, title, sc))
					clock[li] = append(clock[li], change{at: f.Start, slope: slope})
					if f.Healed {
						clock[li] = append(clock[li], change{at: f.End, delta: -int64(slope * float64(f.End-f.Start)), slope: -slope})
					}
					break
				}
				tl.Over = append(tl.Over, mark(f.Start, ln.Y+1, ln.Y+ln.H-1, "clock-jump", n+" "+offsetText(f.Offset), 5, ln.TextY, title, sc))
				clock[li] = append(clock[li], change{at: f.Start, delta: f.Offset})
				if f.Healed {
					clock[li] = append(clock[li], change{at: f.End, delta: -f.Offset})
				}
			default:
				cls := "fault-node fault-" + faultClass(f.Kind) + " fault-" + cssIdent(f.Kind)
				if strings.HasPrefix(ln.Class, "lane-client") {
					cls += " fault-on-client"
				}
				tl.Under = append(tl.Under, sc.bar(cls, f.Start, f.End, ln.Y+2, ln.H-4, title))
				if sc.x(f.End)-sc.x(f.Start) > 30 || !strings.HasPrefix(ln.Class, "lane-client") {
					tl.Over = append(tl.Over, textAt(f.Start, 4, ln.Y+ln.H-6, f.Kind, "bar-label fault-label", sc))
				}
			}
		}
	}
	// Each lane's offset is a polyline: at each change, the offset the
	// slope led to (reached), then the offset after its jump (off).
	type point struct {
		at           int64
		reached, off int64
	}
	var maxAbs int64 = 1
	lines := map[int][]point{}
	var lanes []int
	for li, cs := range clock {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].at < cs[j].at })
		var off, last int64
		var slope float64
		pts := []point{{0, 0, 0}}
		for _, c := range cs {
			reached := off + int64(slope*float64(c.at-last))
			off = reached + c.delta
			slope += c.slope
			if math.Abs(slope) < 1e-12 {
				slope = 0 // what the float sums leave of a rate that ended
			}
			last = c.at
			pts = append(pts, point{c.at, reached, off})
			maxAbs = max(maxAbs, abs(reached), abs(off))
		}
		end := off + int64(slope*float64(sc.span-last))
		pts = append(pts, point{max(sc.span, last), end, end})
		maxAbs = max(maxAbs, abs(end))
		lines[li] = pts
		lanes = append(lanes, li)
	}
	sort.Ints(lanes)
	for _, li := range lanes {
		ln := tl.Lanes[li]
		mid := ln.Y + ln.H/2
		y := func(off int64) float64 { return mid - float64(off)/float64(maxAbs)*(ln.H/2-4) }
		var d strings.Builder
		pts := lines[li]
		fmt.Fprintf(&d, "M%s %s", coord(sc.x(0)), coord(y(0)))
		for i, p := range pts[1:] {
			if p.reached == pts[i].off {
				fmt.Fprintf(&d, "H%s", coord(sc.x(p.at)))
			} else {
				fmt.Fprintf(&d, "L%s %s", coord(sc.x(p.at)), coord(y(p.reached)))
			}
			if p.off != p.reached {
				fmt.Fprintf(&d, "V%s", coord(y(p.off)))
			}
		}
		tl.ClockZero = append(tl.ClockZero, mid)
		tl.Paths = append(tl.Paths, svgPath{Class: "clock-offset", D: d.String(),
			Title: fmt.Sprintf("%s's clock offset over time (scale: lane half-height = %s)", ln.Label, offsetText(maxAbs))})
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func offsetText(ns int64) string {
	switch {
	case ns > 0:
		return "+" + time.Duration(ns).String()
	case ns < 0:
		return time.Duration(ns).String()
	}
	return "±0"
}

// faultClass sorts fault kinds, which scenario files and the nemesis name
// freely, into what a node lane can show.
func faultClass(kind string) string {
	k := strings.ToLower(kind)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(k, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("clock", "strobe"):
		return "clock"
	case has("pause", "freeze", "sigstop"):
		return "paused"
	case has("kill", "crash", "restart", "stop", "down", "amnesia", "failover", "shutdown"):
		return "down"
	}
	return "other"
}

// packRows stacks network faults that overlap (label included) on separate
// rows of the network lane; past maxNetRows they share the last row.
func packRows(faults []checker.FaultWindow, sc scale) []int {
	rows := make([]int, len(faults))
	var rowEnd []float64
	for i, f := range faults {
		x1 := sc.x(f.Start)
		x2 := math.Max(sc.x(f.End), x1+6.5*float64(len([]rune(f.Label())))) // rough label width
		placed := false
		for r, end := range rowEnd {
			if end < x1 {
				rows[i], rowEnd[r], placed = r, x2, true
				break
			}
		}
		if !placed && len(rowEnd) < maxNetRows {
			rows[i] = len(rowEnd)
			rowEnd = append(rowEnd, x2)
		} else if !placed {
			rows[i] = maxNetRows - 1
		}
	}
	return rows
}

func rowCount(rows []int) int {
	n := 1
	for _, r := range rows {
		n = max(n, r+1)
	}
	return n
}

// netFaultBars draws each network fault as a band across the timeline and
// a labelled bar on its row (from packRows) of the network lane.
func netFaultBars(tl *timeline, faults []checker.FaultWindow, rows []int, li int, sc scale) {
	for i, f := range faults {
		title := faultTitle(f)
		tl.Bands = append(tl.Bands, sc.bar("fault-band fault-"+cssIdent(f.Kind), f.Start, f.End, tl.Top, tl.Bottom-tl.Top, title))
		ln := tl.Lanes[li]
		ry := ln.Y + 4 + float64(rows[i])*netRow
		tl.Under = append(tl.Under, sc.bar("fault-net fault-"+cssIdent(f.Kind), f.Start, f.End, ry, netRow-3, title))
		tl.Over = append(tl.Over, textAt(f.Start, 3, ry+netRow-7, f.Label(), "bar-label", sc))
	}
}

// otherFaultBars draws the faults on neither nodes nor links as labelled
// bars on the nemesis lane.
func otherFaultBars(tl *timeline, faults []checker.FaultWindow, li int, sc scale) {
	for _, f := range faults {
		ln := tl.Lanes[li]
		tl.Under = append(tl.Under, sc.bar("fault-node fault-"+cssIdent(f.Kind), f.Start, f.End, ln.Y+3, ln.H-6, faultTitle(f)))
		tl.Over = append(tl.Over, textAt(f.Start, 4, ln.TextY, f.Label(), "bar-label", sc))
	}
}

// stallBars draws the moments the harness stood still (checker.Stall) on
// lane li.
func stallBars(tl *timeline, stalls []checker.Stall, li int, sc scale) {
	for _, st := range stalls {
		ln := tl.Lanes[li]
		what := "starved of the CPU or stopped, its in-process clients, their timers and the nemesis with it"
		if st.Process != "" {
			what = "its process starved of the CPU, the client's timers and renewals with it"
		}
		title := fmt.Sprintf("%s stood still for %s until %s: %s", st.Who(), checker.Seconds(st.For), checker.Seconds(st.End), what)
		tl.Under = append(tl.Under, sc.bar("fault-node fault-paused fault-stall", st.End-st.For, st.End, ln.Y+3, ln.H-6, title))
	}
}
