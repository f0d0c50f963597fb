package pages

// The timeline: one lane per client and node, and a lane for network
// faults, with its operations drawn one by one or merged when too many.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/runstore"
)

// Timeline geometry, in SVG user units, below the axis.
const (
	axisHeight  = 28.0
	clientLaneH = 36.0
	nodeLaneH   = 30.0
	laneGap     = 4.0
	netRow      = 18.0
	maxNetRows  = 8
)

// drawBudget bounds the operations the timeline draws one by one. A longer
// run's operations that lie close together on a lane are drawn as one bar;
// the page says so.
const drawBudget = 2500

type lane struct {
	Label, Class string
	Y, H, TextY  float64
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

func buildTimeline(meta runstore.Meta, res checker.Result, events eventIndex, resOps []resourceOp, sc scale) *timeline {
	tl := &timeline{chartFrame: newFrame(sc), ViewA: 0, ViewB: sc.span}
	tl.Top, tl.AxisY = axisHeight, axisHeight-8
	ls := &laneSet{tl: tl, y: axisHeight, of: map[string]int{}}

	// The processes in the order they first come, each once (Union keeps
	// only that of a list with repeats): a long run names one in each of
	// its million beliefs and attempts.
	var seen []string
	known := map[string]bool{}
	see := func(p string) {
		if !known[p] {
			known[p] = true
			seen = append(seen, p)
		}
	}
	for _, c := range res.Clients {
		see(c)
	}
	for _, k := range res.Keys {
		for i := range k.Beliefs {
			see(k.Beliefs[i].Client)
		}
		for i := range k.Attempts {
			see(k.Attempts[i].Client)
		}
	}
	for _, r := range resOps {
		see(r.Invoke.Process)
	}
	for _, c := range runstore.Union(meta.Clients, seen) {
		// A client that continued as a new process after an unknown
		// outcome (c1.1, c1.2, ...) stays on its lane: a long run has
		// thousands of such processes, and a reader follows clients.
		// Tooltips name the process.
		name := history.ClientOf(c)
		li, ok := ls.of["client:"+name]
		if !ok {
			li = ls.add("client:"+name, name, "lane-client", clientLaneH)
		}
		ls.of["client:"+c] = li
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
	for _, n := range runstore.Union(meta.Nodes, nodeNames) {
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
	// The harness's own pauses, which no scenario scripted, on a lane of
	// their own.
	stallLane := -1
	if len(res.Stalls) > 0 {
		// One lane for every process that stood still: the harness, and
		// the drivers (each bar's title says whose).
		stallLane = ls.add("stalls", "stood still", "lane-net", nodeLaneH)
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
	netFaultBars(tl, netFaults, rows, netLane, sc)
	otherFaultBars(tl, otherFaults, otherLane, sc)
	stallBars(tl, res.Stalls, stallLane, sc)
	return tl
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
			detail = detail[:0]
			for _, it := range items {
				if it.b >= viewA && it.a <= viewB {
					detail = append(detail, it)
				}
			}
			if len(detail) <= drawBudget/2 || pad/2 < minPad {
				break
			}
		}
		// The rest, once: a long run's items are many.
		rest = make([]item, 0, len(items)-len(detail))
		for _, it := range items {
			if !(it.b >= viewA && it.a <= viewB) {
				rest = append(rest, it)
			}
		}
	}
	if len(detail) > drawBudget/2 || core == nil {
		rest, detail = items, nil
		viewA, viewB = 0, sc.span
	}
	sortItems(rest)
	// Which items start a new lane or kind, compared once: the search
	// below counts the groups of a long run's items many times.
	newRun := make([]bool, len(rest))
	for i := range rest {
		newRun[i] = i == 0 || rest[i].lane != rest[i-1].lane || rest[i].kind != rest[i-1].kind
	}
	res := max(sc.span/20000, 1)
	for countGroups(rest, newRun, res)+len(detail) > drawBudget && res <= sc.span {
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

// sortItems orders items by lane, kind and start, stably, in place. Items
// come loosely grouped and in time order within a lane and kind (beliefs,
// attempts and resource operations each in order), so each lane and kind
// is sorted only if it is not in order already, and the items are moved by
// following the permutation's cycles: a long run's million items are
// neither sorted by moving them about nor copied.
func sortItems(items []item) {
	type group struct {
		lane int
		kind string
	}
	at := map[group]int{}
	var groups []group
	var members [][]int32
	for i, it := range items {
		g := group{it.lane, it.kind}
		j, ok := at[g]
		if !ok {
			j = len(groups)
			at[g] = j
			groups = append(groups, g)
			members = append(members, nil)
		}
		members[j] = append(members[j], int32(i))
	}
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		if c := cmp.Compare(groups[x].lane, groups[y].lane); c != 0 {
			return c
		}
		return strings.Compare(groups[x].kind, groups[y].kind)
	})
	// from[k] is the index of the item that goes to position k.
	from := make([]int32, 0, len(items))
	for _, j := range order {
		m := members[j]
		byStart := func(x, y int32) int { return cmp.Compare(items[x].a, items[y].a) }
		if !slices.IsSortedFunc(m, byStart) {
			slices.SortStableFunc(m, byStart)
		}
		from = append(from, m...)
	}
	for k := range from {
		if from[k] < 0 || int(from[k]) == k {
			continue
		}
		// Rotate the cycle through k: each position takes the item
		// it should hold, the last takes the one saved first.
		saved := items[k]
		cur := k
		for {
			src := int(from[cur])
			from[cur] = -1
			if src == k {
				items[cur] = saved
				break
			}
			items[cur] = items[src]
			cur = src
		}
	}
}

// countGroups is len(mergeItems(items, res)) without building the groups;
// newRun[i] says whether item i's lane or kind differs from item i-1's.
func countGroups(items []item, newRun []bool, res int64) int {
	n := 0
	var end int64
	for i := range items {
		it := &items[i]
		if !newRun[i] && it.a <= end+res {
			end = max(end, it.b)
			continue
		}
		n++
		end = it.b
	}
	return n
}

// mergeItems groups items (sorted by lane, kind and start) that lie less
// than res apart. The groups are pieces of items, not copies.
func mergeItems(items []item, res int64) [][]item {
	var out [][]item
	var end int64
	start := 0
	for i, it := range items {
		if i > 0 {
			prev := items[start]
			if prev.lane == it.lane && prev.kind == it.kind && it.a <= end+res {
				end = max(end, it.b)
				continue
			}
			out = append(out, items[start:i:i])
		}
		start = i
		end = it.b
	}
	if len(items) > 0 {
		out = append(out, items[start:len(items):len(items)])
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
	tl.Under = append(tl.Under, sc.bar("merged merged-"+first.kind, a, b, first.y, first.h,
		fmt.Sprintf("%d %ss of %s from %s to %s, drawn as one bar (too many to draw one by one; history.jsonl has each)",
			len(g), first.noun, tl.Lanes[first.lane].Label, checker.Seconds(a), checker.Seconds(b))))
}
