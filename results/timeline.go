package results

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
)

// Chart geometry, in SVG user units. Every chart maps run time to x the same
// way, so one view (the zoom) applies to all of them.
const (
	plotLeft    = 130.0
	plotWidth   = 900.0
	plotRight   = 24.0
	chartWidth  = plotLeft + plotWidth + plotRight
	axisHeight  = 28.0
	clientLaneH = 36.0
	nodeLaneH   = 30.0
	laneGap     = 4.0
	netRow      = 18.0
	maxNetRows  = 8
	minBarWidth = 1.5
)

// drawBudget bounds the operations the timeline draws one by one. A longer
// run's operations that lie close together on a lane are drawn as one bar;
// the page says so.
const drawBudget = 2500

// scale maps run time to x, to scale: equal durations are equal widths
// everywhere on the page.
type scale struct{ span int64 }

func newScale(res checker.Result, events []history.Event) scale {
	span := res.End
	if n := len(events); n > 0 {
		span = max(span, events[n-1].Time)
	}
	for _, k := range res.Keys {
		for _, b := range k.Beliefs {
			span = max(span, b.End)
			if b.Deadline != nil {
				span = max(span, *b.Deadline)
			}
		}
		for _, a := range k.Attempts {
			span = max(span, a.End)
		}
	}
	for _, f := range res.Faults {
		span = max(span, f.End)
	}
	return scale{span: max(span, int64(time.Millisecond))}
}

func (s scale) x(t int64) float64 {
	return plotLeft + float64(t)/float64(s.span)*plotWidth
}

// width keeps an instant visible.
func (s scale) width(from, to int64) float64 {
	return math.Max(s.x(to)-s.x(from), minBarWidth)
}

// window is the view that shows [from, to] with some room on each side.
func (s scale) window(from, to int64) (int64, int64) {
	pad := max((to-from)/6, s.span/100)
	return max(0, from-pad), min(s.span, to+pad)
}

type tick struct {
	X     float64
	Label string
}

// ticks picks a 1-2-5 step giving about eight labelled ticks over the whole
// run; report.js does the same for a zoomed view.
func (s scale) ticks() []tick {
	step := tickStep(float64(s.span))
	var out []tick
	for t := 0.0; t <= float64(s.span)+1; t += step {
		out = append(out, tick{X: s.x(int64(t)), Label: tickLabel(t, step)})
	}
	return out
}

func tickStep(span float64) float64 {
	raw := span / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// tickLabel prints t (ns) in seconds with as many decimals as the step needs.
func tickLabel(t, step float64) string {
	decimals := max(0, int(math.Ceil(-math.Log10(step/1e9)-1e-6)))
	return strconv.FormatFloat(t/1e9, 'f', decimals, 64) + "s"
}

type lane struct {
	Label, Class string
	Y, H, TextY  float64
}

// shape is one drawn element. A and B are the run times it covers (ns); the
// page's script re-places shapes from them when the view zooms, so X and W
// are only the whole-run positions.
type shape struct {
	// Kind is rect, mark (a vertical line with an optional label, placed
	// by a translate), text or circle.
	Kind  string
	Class string
	A, B  int64
	X, Y  float64
	W, H  float64
	// DX is a text's offset from A's x.
	DX     float64
	Label  string
	LX, LY float64
	Title  string
}

// svgPath is a line drawn in whole-run coordinates and stretched as a whole
// when the view zooms (clock offsets, throughput).
type svgPath struct {
	Class, D, Title string
}

// chartFrame is what every chart shares: its size and the time axis.
type chartFrame struct {
	Width, Height float64
	Left, Plot    float64
	Span          int64
	// Top and Bottom bound the plot area (grid lines); AxisY is where
	// tick labels sit.
	Top, Bottom, AxisY float64
	Ticks              []tick
}

func newFrame(sc scale) chartFrame {
	return chartFrame{Width: chartWidth, Left: plotLeft, Plot: plotWidth, Span: sc.span, Ticks: sc.ticks()}
}

type timeline struct {
	chartFrame
	Lanes    []lane
	Bands    []shape
	Under    []shape
	Paths    []svgPath
	Overlaps []shape
	Over     []shape
	// ClockZero are the zero lines of node lanes with a clock offset.
	ClockZero []float64
	// ViewA and ViewB are the initial view: the first violation's window,
	// or the whole run.
	ViewA, ViewB int64
	Zoomed       bool
	// Note says how the timeline was thinned out, when it had to be.
	Note string
}

// item is one operation that may be drawn on its own or merged with its
// neighbours on the lane.
type item struct {
	lane  int
	kind  string
	noun  string
	a, b  int64
	y, h  float64
	build func() (under, over []shape)
}

type laneSet struct {
	tl *timeline
	y  float64
	of map[string]int
}

func (ls *laneSet) add(key, label, class string, h float64) int {
	ls.tl.Lanes = append(ls.tl.Lanes, lane{Label: label, Class: class, Y: ls.y, H: h, TextY: ls.y + h/2 + 4})
	ls.y += h + laneGap
	ls.of[key] = len(ls.tl.Lanes) - 1
	return ls.of[key]
}

func buildTimeline(meta Meta, res checker.Result, events map[int64]history.Event, resOps []resourceOp, sc scale) *timeline {
	tl := &timeline{chartFrame: newFrame(sc), ViewA: 0, ViewB: sc.span}
	tl.Top, tl.AxisY = axisHeight, axisHeight-8
	ls := &laneSet{tl: tl, y: axisHeight, of: map[string]int{}}

	seen := append([]string(nil), res.Clients...)
	for _, k := range res.Keys {
		for _, b := range k.Beliefs {
			seen = append(seen, b.Client)
		}
		for _, a := range k.Attempts {
			seen = append(seen, a.Client)
		}
	}
	for _, r := range resOps {
		seen = append(seen, r.inv.Process)
	}
	for _, c := range union(meta.Clients, seen) {
		ls.add("client:"+c, c, "lane-client", clientLaneH)
	}
	var nodeNames []string
	var netFaults, otherFaults []checker.FaultWindow
	for _, f := range res.Faults {
		if len(f.Links) > 0 {
			netFaults = append(netFaults, f)
		}
		if len(f.Nodes) == 0 && len(f.Links) == 0 {
			otherFaults = append(otherFaults, f)
		}
		for _, n := range f.Nodes {
			if _, isClient := ls.of["client:"+n]; !isClient {
				nodeNames = append(nodeNames, n)
			}
		}
	}
	for _, n := range union(meta.Nodes, nodeNames) {
		ls.add("node:"+n, n, "lane-node", nodeLaneH)
	}
	rows := packRows(netFaults, sc)
	netLane, otherLane := -1, -1
	if len(netFaults) > 0 {
		netLane = ls.add("net", "network", "lane-net", float64(rowCount(rows))*netRow+8)
	}
	if len(otherFaults) > 0 {
		otherLane = ls.add("nemesis", "nemesis", "lane-net", nodeLaneH)
	}
	tl.Bottom = ls.y - laneGap
	tl.Height = tl.Bottom + 8

	// The first violation, from the first of its two acquires to the end
	// of the overlap, is what the page opens on.
	var core *[2]int64
	if len(res.Violations) > 0 {
		v := res.Violations[0]
		first := v.From
		for _, c := range v.Clients {
			if b, ok := violatingBelief(res, v, c); ok {
				first = min(first, b.Invoke)
			}
		}
		core = &[2]int64{first, v.To}
	}
	items := clientItems(tl, ls, res, events, resOps, sc)
	var viewA, viewB int64
	tl.Note, viewA, viewB = tl.place(items, core, sc)
	if core != nil && viewB-viewA < sc.span*9/10 {
		tl.ViewA, tl.ViewB, tl.Zoomed = viewA, viewB, true
	}

	for _, v := range res.Violations {
		for _, c := range v.Clients {
			ln := tl.Lanes[ls.of["client:"+c]]
			tl.Overlaps = append(tl.Overlaps, shape{Kind: "rect", Class: "overlap", A: v.From, B: v.To,
				X: sc.x(v.From), Y: ln.Y + 1, W: math.Max(sc.x(v.To)-sc.x(v.From), 2), H: ln.H - 2, Title: v.Text})
		}
	}
	nodeFaults(tl, ls, res.Faults, sc)
	for i, f := range netFaults {
		title := faultTitle(f)
		tl.Bands = append(tl.Bands, shape{Kind: "rect", Class: "fault-band fault-" + cssIdent(f.Kind), A: f.Start, B: f.End,
			X: sc.x(f.Start), Y: tl.Top, W: sc.width(f.Start, f.End), H: tl.Bottom - tl.Top, Title: title})
		ln := tl.Lanes[netLane]
		ry := ln.Y + 4 + float64(rows[i])*netRow
		tl.Under = append(tl.Under, shape{Kind: "rect", Class: "fault-net fault-" + cssIdent(f.Kind), A: f.Start, B: f.End,
			X: sc.x(f.Start), Y: ry, W: sc.width(f.Start, f.End), H: netRow - 3, Title: title})
		tl.Over = append(tl.Over, textAt(f.Start, 3, ry+netRow-7, f.Label(), "bar-label", sc))
	}
	for _, f := range otherFaults {
		ln := tl.Lanes[otherLane]
		tl.Under = append(tl.Under, shape{Kind: "rect", Class: "fault-node fault-" + cssIdent(f.Kind), A: f.Start, B: f.End,
			X: sc.x(f.Start), Y: ln.Y + 3, W: sc.width(f.Start, f.End), H: ln.H - 6, Title: faultTitle(f)})
		tl.Over = append(tl.Over, textAt(f.Start, 4, ln.TextY, f.Label(), "bar-label", sc))
	}
	return tl
}

func textAt(t int64, dx, y float64, label, class string, sc scale) shape {
	return shape{Kind: "text", Class: class, A: t, B: t, X: sc.x(t) + dx, DX: dx, Y: y, Label: label}
}

func mark(t int64, y1, y2 float64, class, label string, lx, ly float64, title string, sc scale) shape {
	return shape{Kind: "mark", Class: class, A: t, B: t, X: sc.x(t), Y: y1, H: y2 - y1, Label: label, LX: lx, LY: ly, Title: title}
}

// clientItems turns beliefs, failed attempts and resource operations into
// items on the client lanes.
func clientItems(tl *timeline, ls *laneSet, res checker.Result, events map[int64]history.Event, resOps []resourceOp, sc scale) []item {
	var items []item
	for _, k := range res.Keys {
		for _, b := range k.Beliefs {
			li := ls.of["client:"+b.Client]
			ln := tl.Lanes[li]
			end := b.End
			if b.Deadline != nil && b.EndReason != checker.EndDeadline {
				end = max(end, *b.Deadline)
			}
			items = append(items, item{lane: li, kind: "belief", noun: "belief interval", a: b.Invoke, b: end,
				y: ln.Y + 8, h: ln.H - 16,
				build: func() (under, over []shape) {
					under = append(under, shape{Kind: "rect", Class: "acquiring", A: b.Invoke, B: b.Start,
						X: sc.x(b.Invoke), Y: ln.Y + ln.H/2 - 1.5, W: sc.width(b.Invoke, b.Start), H: 3,
						Title: "acquire in flight\n" + beliefTitle(b, events)})
					if b.EndReason != checker.EndDeadline && b.Deadline != nil && *b.Deadline > b.End {
						// What the lease still had left when the client
						// let go: how much a release shortened the belief.
						under = append(under, shape{Kind: "rect", Class: "lease-rest", A: b.End, B: *b.Deadline,
							X: sc.x(b.End), Y: ln.Y + 10, W: sc.width(b.End, *b.Deadline), H: ln.H - 20,
							Title: fmt.Sprintf("%s's lease on %q would have lasted until %s", b.Client, b.Key, checker.Seconds(*b.Deadline))})
					}
					under = append(under, shape{Kind: "rect", Class: "belief", A: b.Start, B: b.End,
						X: sc.x(b.Start), Y: ln.Y + 8, W: sc.width(b.Start, b.End), H: ln.H - 16, Title: beliefTitle(b, events)})
					if len(res.Keys) > 1 && sc.x(b.End)-sc.x(b.Start) > 40 {
						over = append(over, textAt(b.Start, 4, ln.TextY, b.Key, "bar-label on-belief", sc))
					}
					return under, over
				}})
		}
		for _, a := range k.Attempts {
			li := ls.of["client:"+a.Client]
			ln := tl.Lanes[li]
			noun := map[string]string{"fail": "failed acquire", "info": "acquire of unknown outcome"}[a.Outcome]
			if noun == "" {
				noun = "acquire never completed"
			}
			items = append(items, item{lane: li, kind: "attempt-" + cssIdent(a.Outcome), noun: noun, a: a.Invoke, b: a.End,
				y: ln.Y + ln.H - 8, h: 5,
				build: func() (under, over []shape) {
					title := attemptTitle(a, events)
					cls := "attempt-" + cssIdent(a.Outcome)
					under = append(under, shape{Kind: "rect", Class: "attempt " + cls, A: a.Invoke, B: a.End,
						X: sc.x(a.Invoke), Y: ln.Y + ln.H - 8, W: sc.width(a.Invoke, a.End), H: 5, Title: title})
					glyph := map[string]string{"fail": "×", "info": "?", checker.OutcomePending: "…"}[a.Outcome]
					over = append(over, mark(a.End, ln.Y+4, ln.Y+ln.H-4, "attempt-mark "+cls, glyph, 2, ln.Y+13, title, sc))
					return under, over
				}})
		}
	}
	for _, r := range resOps {
		li := ls.of["client:"+r.inv.Process]
		ln := tl.Lanes[li]
		kind := "res-" + cssIdent(string(r.inv.F))
		if isWrite(r.inv.F) {
			kind = "res-write"
		}
		items = append(items, item{lane: li, kind: kind + " res-" + cssIdent(r.outcome), noun: string(r.inv.F), a: r.inv.Time, b: r.at(),
			y: ln.Y + 1, h: 6,
			build: func() (under, over []shape) {
				title := resourceTitle(r, events)
				cls := kind + " res-" + cssIdent(r.outcome)
				if r.bad {
					cls += " res-bad"
				}
				if r.at() > r.inv.Time {
					under = append(under, shape{Kind: "rect", Class: "res-span " + cls, A: r.inv.Time, B: r.at(),
						X: sc.x(r.inv.Time), Y: ln.Y + 3, W: sc.width(r.inv.Time, r.at()), H: 1.5, Title: title})
				}
				y2 := ln.Y + ln.H - 2
				if !isWrite(r.inv.F) {
					y2 = ln.Y + 9 // a read is a short tick: it changes nothing
				}
				glyph := map[string]string{"rejected": "×", "info": "?", checker.OutcomePending: "…"}[r.outcome]
				over = append(over, mark(r.at(), ln.Y+1, y2, "res-tick "+cls, glyph, 2, ln.Y+10, title, sc))
				return under, over
			}})
	}
	return items
}

// place draws items one by one while they fit the budget. Beyond it, the
// items around the core window (the first violation) stay individual, the
// window narrowed until they take at most half the budget, and the others
// are merged lane by lane at the finest resolution that fits. It returns a
// note for the page and the window drawn in full (the core's window, or
// the whole run).
func (tl *timeline) place(items []item, core *[2]int64, sc scale) (string, int64, int64) {
	viewA, viewB := int64(0), sc.span
	if core != nil {
		viewA, viewB = sc.window(core[0], core[1])
	}
	if len(items) <= drawBudget {
		for _, it := range items {
			tl.draw(it)
		}
		return "", viewA, viewB
	}
	var detail, rest []item
	if core != nil {
		minPad := max((core[1]-core[0])/20, 1000)
		for pad := max((core[1]-core[0])/6, sc.span/100); ; pad /= 2 {
			viewA, viewB = max(0, core[0]-pad), min(sc.span, core[1]+pad)
			detail, rest = detail[:0], rest[:0]
			for _, it := range items {
				if it.b >= viewA && it.a <= viewB {
					detail = append(detail, it)
				} else {
					rest = append(rest, it)
				}
			}
			if len(detail) <= drawBudget/2 || pad/2 < minPad {
				break
			}
		}
	}
	if len(detail) > drawBudget/2 || core == nil {
		rest, detail = items, nil
		viewA, viewB = 0, sc.span
	}
	sort.SliceStable(rest, func(i, j int) bool {
		if rest[i].lane != rest[j].lane {
			return rest[i].lane < rest[j].lane
		}
		if rest[i].kind != rest[j].kind {
			return rest[i].kind < rest[j].kind
		}
		return rest[i].a < rest[j].a
	})
	res := max(sc.span/20000, 1)
	for countGroups(rest, res)+len(detail) > drawBudget && res <= sc.span {
		res = res * 3 / 2
	}
	groups := mergeItems(rest, res)
	for _, it := range detail {
		tl.draw(it)
	}
	merged := 0
	for _, g := range groups {
		if len(g) == 1 {
			tl.draw(g[0])
			continue
		}
		merged++
		tl.drawMerged(g, sc)
	}
	where := "Everywhere"
	if len(detail) > 0 {
		where = fmt.Sprintf("Around the first violation (%s–%s, where the page opens) every operation is drawn; elsewhere", checker.Seconds(viewA), checker.Seconds(viewB))
	}
	note := fmt.Sprintf("The timeline has %d operations to show, too many to draw one by one. %s, operations of one kind on one lane less than %s apart are drawn as one hatched bar (%d bars stand for %d operations); their tooltips give the count. history.jsonl has every operation.",
		len(items), where, checker.Seconds(res), merged, len(rest)-(len(groups)-merged))
	return note, viewA, viewB
}

// countGroups is len(mergeItems(items, res)) without building the groups.
func countGroups(items []item, res int64) int {
	n := 0
	var end int64
	for i, it := range items {
		if i > 0 {
			prev := items[i-1]
			if prev.lane == it.lane && prev.kind == it.kind && it.a <= end+res {
				end = max(end, it.b)
				continue
			}
		}
		n++
		end = it.b
	}
	return n
}

// mergeItems groups items (sorted by lane, kind and start) that lie less
// than res apart.
func mergeItems(items []item, res int64) [][]item {
	var out [][]item
	var end int64
	for i, it := range items {
		if i > 0 {
			prev := out[len(out)-1][0]
			if prev.lane == it.lane && prev.kind == it.kind && it.a <= end+res {
				out[len(out)-1] = append(out[len(out)-1], it)
				end = max(end, it.b)
				continue
			}
		}
		out = append(out, []item{it})
		end = it.b
	}
	return out
}

func (tl *timeline) draw(it item) {
	under, over := it.build()
	tl.Under = append(tl.Under, under...)
	tl.Over = append(tl.Over, over...)
}

func (tl *timeline) drawMerged(g []item, sc scale) {
	a, b := g[0].a, g[0].b
	for _, it := range g {
		a, b = min(a, it.a), max(b, it.b)
	}
	first := g[0]
	tl.Under = append(tl.Under, shape{Kind: "rect", Class: "merged merged-" + first.kind, A: a, B: b,
		X: sc.x(a), Y: first.y, W: sc.width(a, b), H: first.h,
		Title: fmt.Sprintf("%d %ss of %s from %s to %s, drawn as one bar (too many to draw one by one; history.jsonl has each)",
			len(g), first.noun, tl.Lanes[first.lane].Label, checker.Seconds(a), checker.Seconds(b))})
}

// nodeFaults draws what happened to each node: its clock offset as a step
// line with a marker at each jump, pauses, and kills or restarts.
func nodeFaults(tl *timeline, ls *laneSet, faults []checker.FaultWindow, sc scale) {
	type change struct {
		at    int64
		delta int64
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
				tl.Under = append(tl.Under, shape{Kind: "rect", Class: "fault-node fault-clock", A: f.Start, B: f.End,
					X: sc.x(f.Start), Y: ln.Y + 2, W: sc.width(f.Start, f.End), H: ln.H - 4, Title: title})
				tl.Over = append(tl.Over, mark(f.Start, ln.Y+1, ln.Y+ln.H-1, "clock-jump", n+" "+offsetText(f.Offset), 5, ln.TextY, title, sc))
				clock[li] = append(clock[li], change{f.Start, f.Offset})
				if f.Healed {
					clock[li] = append(clock[li], change{f.End, -f.Offset})
				}
			default:
				cls := "fault-node fault-" + faultClass(f.Kind) + " fault-" + cssIdent(f.Kind)
				if strings.HasPrefix(ln.Class, "lane-client") {
					cls += " fault-on-client"
				}
				tl.Under = append(tl.Under, shape{Kind: "rect", Class: cls, A: f.Start, B: f.End,
					X: sc.x(f.Start), Y: ln.Y + 2, W: sc.width(f.Start, f.End), H: ln.H - 4, Title: title})
				if sc.x(f.End)-sc.x(f.Start) > 30 || !strings.HasPrefix(ln.Class, "lane-client") {
					tl.Over = append(tl.Over, textAt(f.Start, 4, ln.Y+ln.H-6, f.Kind, "bar-label fault-label", sc))
				}
			}
		}
	}
	var maxAbs int64 = 1
	steps := map[int][][2]int64{}
	var lanes []int
	for li, cs := range clock {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].at < cs[j].at })
		var off int64
		pts := [][2]int64{{0, 0}}
		for _, c := range cs {
			off += c.delta
			pts = append(pts, [2]int64{c.at, off})
			maxAbs = max(maxAbs, abs(off))
		}
		steps[li] = pts
		lanes = append(lanes, li)
	}
	sort.Ints(lanes)
	for _, li := range lanes {
		ln := tl.Lanes[li]
		mid := ln.Y + ln.H/2
		y := func(off int64) float64 { return mid - float64(off)/float64(maxAbs)*(ln.H/2-4) }
		var d strings.Builder
		pts := steps[li]
		fmt.Fprintf(&d, "M%s %s", coord(sc.x(0)), coord(y(0)))
		for _, p := range pts[1:] {
			fmt.Fprintf(&d, "H%sV%s", coord(sc.x(p[0])), coord(y(p[1])))
		}
		fmt.Fprintf(&d, "H%s", coord(sc.x(sc.span)))
		tl.ClockZero = append(tl.ClockZero, mid)
		tl.Paths = append(tl.Paths, svgPath{Class: "clock-offset", D: d.String(),
			Title: fmt.Sprintf("%s's clock offset over time (scale: lane half-height = %s)", ln.Label, offsetText(maxAbs))})
	}
}

// coord prints a path coordinate finely enough to stay exact when a long
// run is zoomed into.
func coord(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
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

func beliefTitle(b checker.Belief, events map[int64]history.Event) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s believed it held %q from %s to %s (%s)", b.Client, b.Key,
		checker.Seconds(b.Start), checker.Seconds(b.End), endText(b.EndReason))
	fmt.Fprintf(&sb, "\nacquire invoked at %s, granted at %s", checker.Seconds(b.Invoke), checker.Seconds(b.Start))
	if len(b.Nodes) > 0 {
		fmt.Fprintf(&sb, " by %s", strings.Join(b.Nodes, ","))
	}
	if b.Deadline != nil {
		fmt.Fprintf(&sb, "\nvalidity deadline %s", checker.Seconds(*b.Deadline))
	}
	if b.Token != nil {
		fmt.Fprintf(&sb, "\nfencing token %d", *b.Token)
	}
	if b.Extended > 0 {
		fmt.Fprintf(&sb, "\nextended %d time(s)", b.Extended)
	}
	writeEvents(&sb, events, b.InvokeIndex, b.OKIndex, b.EndIndex)
	return sb.String()
}

func attemptTitle(a checker.Attempt, events map[int64]history.Event) string {
	var sb strings.Builder
	what := map[string]string{"fail": "failed", "info": "outcome unknown", checker.OutcomePending: "never completed"}[a.Outcome]
	fmt.Fprintf(&sb, "%s acquire %q %s: %s–%s", a.Client, a.Key, what, checker.Seconds(a.Invoke), checker.Seconds(a.End))
	if a.Err != "" {
		sb.WriteString("\n" + a.Err)
	}
	writeEvents(&sb, events, a.InvokeIndex, a.EndIndex)
	return sb.String()
}

func resourceTitle(r resourceOp, events map[int64]history.Event) string {
	var sb strings.Builder
	sb.WriteString(opSentence(r))
	if r.finding != "" {
		sb.WriteString("\n" + r.finding)
	}
	end := int64(-1)
	if r.done {
		end = r.end.Index
	}
	writeEvents(&sb, events, r.inv.Index, end)
	return sb.String()
}

// writeEvents appends the raw history lines, so a tooltip shows the full op.
func writeEvents(sb *strings.Builder, events map[int64]history.Event, indexes ...int64) {
	for _, i := range indexes {
		if i < 0 {
			continue
		}
		e, ok := events[i]
		if !ok {
			continue
		}
		if b, err := json.Marshal(e); err == nil {
			sb.WriteString("\n")
			sb.Write(b)
		}
	}
}

func faultTitle(f checker.FaultWindow) string {
	s := fmt.Sprintf("%s from %s", f.Label(), checker.Seconds(f.Start))
	if f.Healed {
		s += " to " + checker.Seconds(f.End)
	} else {
		s += ", never healed"
	}
	if f.Detail != "" {
		s += "\n" + f.Detail
	}
	return s
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

// cssIdent keeps a class name to [a-z0-9-]: fault kinds come from scenario
// files, and a class is no place for anything else.
func cssIdent(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	if b.Len() == 0 {
		return "other"
	}
	return b.String()
}

// union merges name lists, keeping the first list's order and appending new
// names in natural order.
func union(first, more []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range first {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	var extra []string
	for _, n := range more {
		if !seen[n] {
			seen[n] = true
			extra = append(extra, n)
		}
	}
	checker.SortNatural(extra)
	return append(out, extra...)
}

// Y2 is the bottom of a mark's line.
func (s shape) Y2() float64 { return s.Y + s.H }
