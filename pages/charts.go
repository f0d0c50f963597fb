package pages

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
)

const (
	chartTop    = 14.0
	chartPlotH  = 150.0
	chartAxisH  = 26.0
	dotBudget   = 2500
	dotRadius   = 3.5
	rateBuckets = 200
)

// newChartFrame is the frame of a chart below the timeline: a plot
// chartPlotH high with the time axis under it.
func newChartFrame(sc scale) chartFrame {
	f := newFrame(sc)
	f.Top, f.Bottom = chartTop, chartTop+chartPlotH
	f.AxisY, f.Height = f.Bottom+chartAxisH-8, f.Bottom+chartAxisH
	return f
}

// faultBands shades every fault window on a chart, so latency and
// throughput can be read against what the nemesis did.
func faultBands(faults []checker.FaultWindow, top, bottom float64, sc scale) []shape {
	var out []shape
	for _, f := range faults {
		out = append(out, sc.bar("chart-band band-"+faultClassOrNet(f), f.Start, f.End, top, bottom-top, faultTitle(f)))
	}
	return out
}

func faultClassOrNet(f checker.FaultWindow) string {
	if len(f.Links) > 0 {
		return "net"
	}
	return faultClass(f.Kind)
}

type scatter struct {
	chartFrame
	YTicks []tick // X holds the y coordinate
	Bands  []shape
	Points []shape
	Log    bool
	Note   string
}

// sample is one acquire's latency. Its tooltip is written only for the
// samples drawn as their own dot (most of a long run's share dots).
type sample struct {
	at, latency int64
	outcome     string
	belief      *checker.Belief
	attempt     *checker.Attempt
}

func (s sample) text() string {
	if b := s.belief; b != nil {
		return fmt.Sprintf("%s acquire %q ok in %s at %s", b.Client, b.Key, checker.Seconds(b.Start-b.Invoke), checker.Seconds(b.Invoke))
	}
	a := s.attempt
	return fmt.Sprintf("%s acquire %q %s in %s at %s%s", a.Client, a.Key, a.Outcome, checker.Seconds(a.End-a.Invoke), checker.Seconds(a.Invoke), errSuffix(a.Err))
}

// buildScatter plots each acquire's latency at the time it was invoked,
// coloured by outcome, like Jepsen's latency-raw plot. Past dotBudget, the
// acquires inside the view the page opens on [viewA, viewB] keep a dot
// each, and elsewhere acquires of one outcome that would land on the same
// few pixels share a dot; the page says so.
func buildScatter(res checker.Result, sc scale, viewA, viewB int64) *scatter {
	n := 0
	for _, k := range res.Keys {
		n += len(k.Beliefs) + len(k.Attempts)
	}
	samples := make([]sample, 0, n)
	for _, k := range res.Keys {
		for i := range k.Beliefs {
			b := &k.Beliefs[i]
			samples = append(samples, sample{at: b.Invoke, latency: b.Start - b.Invoke, outcome: "ok", belief: b})
		}
		for i := range k.Attempts {
			a := &k.Attempts[i]
			if a.Outcome == checker.OutcomePending {
				continue
			}
			samples = append(samples, sample{at: a.Invoke, latency: a.End - a.Invoke, outcome: a.Outcome, attempt: a})
		}
	}
	if len(samples) == 0 {
		return nil
	}
	slices.SortStableFunc(samples, func(x, y sample) int { return cmp.Compare(x.at, y.at) })
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, s := range samples {
		lo, hi = min(lo, max(s.latency, 1)), max(hi, s.latency)
	}
	sp := &scatter{chartFrame: newChartFrame(sc)}
	sp.Bands = faultBands(res.Faults, sp.Top, sp.Bottom, sc)
	// Latencies under faults span orders of magnitude (a timeout next to a
	// millisecond grant): a log axis keeps both readable.
	sp.Log = hi > 0 && float64(hi)/float64(lo) > 50
	y, yticks := latencyAxis(lo, hi, sp.Log, sp.Bottom)
	sp.YTicks = yticks

	if len(samples) <= dotBudget {
		for _, s := range samples {
			sp.Points = append(sp.Points, dot(s.at, y(s.latency), "lat-"+cssIdent(s.outcome), s.text(), sc))
		}
		return sp
	}
	// The samples not drawn one by one are binned. They are kept in
	// samples' own array, which is read ahead of where rest is written:
	// a second array of a million samples was some 50 MB of garbage.
	total := len(samples)
	rest := samples[:0]
	var inView int
	for _, s := range samples {
		if s.at >= viewA && s.at <= viewB && (viewA > 0 || viewB < sc.span) {
			inView++
		}
	}
	for _, s := range samples {
		if inView <= dotBudget/2 && s.at >= viewA && s.at <= viewB && (viewA > 0 || viewB < sc.span) {
			sp.Points = append(sp.Points, dot(s.at, y(s.latency), "lat-"+cssIdent(s.outcome), s.text(), sc))
		} else {
			rest = append(rest, s)
		}
	}
	kept := len(sp.Points)
	// Bin by outcome and pixel cell, coarsening until the dots fit. Each
	// sample's place and outcome are worked out once, not per try.
	var outcomes []string
	places := make([]dotPlace, len(rest))
	for i, s := range rest {
		o := slices.Index(outcomes, s.outcome)
		if o < 0 {
			o = len(outcomes)
			outcomes = append(outcomes, s.outcome)
		}
		places[i] = dotPlace{sc.x(s.at), y(s.latency), o}
	}
	for cell := 2.0; ; cell *= 1.5 {
		// Counting the bins of a cell size that turns out too fine needs
		// no accumulators (a million samples into a map, once per try,
		// was most of the chart's time).
		if cell < plotWidth && countBins(places, len(outcomes), cell)+kept > dotBudget {
			continue
		}
		type bin struct {
			outcome int
			cx, cy  int
		}
		type acc struct {
			n              int
			sumAt          float64
			minLat, maxLat int64
			from, to       int64
		}
		bins := map[bin]*acc{}
		var order []bin
		for i, s := range rest {
			p := places[i]
			k := bin{p.outcome, int(p.x / cell), int(p.y / cell)}
			a, ok := bins[k]
			if !ok {
				a = &acc{minLat: s.latency, maxLat: s.latency, from: s.at, to: s.at}
				bins[k] = a
				order = append(order, k)
			}
			a.n++
			a.sumAt += float64(s.at)
			a.minLat, a.maxLat = min(a.minLat, s.latency), max(a.maxLat, s.latency)
			a.from, a.to = min(a.from, s.at), max(a.to, s.at)
		}
		for _, k := range order {
			a := bins[k]
			at := int64(a.sumAt / float64(a.n))
			text := fmt.Sprintf("%d acquire(s) %s, latency %s–%s, invoked %s–%s", a.n, outcomes[k.outcome],
				checker.Seconds(a.minLat), checker.Seconds(a.maxLat), checker.Seconds(a.from), checker.Seconds(a.to))
			sp.Points = append(sp.Points, dot(at, y((a.minLat+a.maxLat)/2), "lat-"+cssIdent(outcomes[k.outcome]), text, sc))
		}
		where := ""
		if kept > 0 {
			where = fmt.Sprintf(" Between %s and %s, where the page opens, each acquire has its own dot; elsewhere", checker.Seconds(viewA), checker.Seconds(viewB))
		} else {
			where = " Everywhere,"
		}
		sp.Note = fmt.Sprintf("%d acquires are drawn as %d dots.%s acquires with the same outcome within %.0f px of each other (at the whole run's scale) share a dot; its tooltip gives the count and range.",
			total, len(sp.Points), where, cell)
		return sp
	}
}

// dotPlace is where a sample of the scatter goes, and its outcome's
// number.
type dotPlace struct {
	x, y    float64
	outcome int
}

// countBins counts the bins buildScatter makes of places at a cell size:
// the distinct (outcome, int(x/cell), int(y/cell)). The places come in time
// order, so a column's bins are adjacent and are told apart with a stamp
// per outcome and row instead of a map of every bin; places out of order
// are counted with the map.
func countBins(places []dotPlace, outcomes int, cell float64) int {
	if len(places) == 0 {
		return 0
	}
	loY, hiY := int(places[0].y/cell), int(places[0].y/cell)
	for _, p := range places {
		cy := int(p.y / cell)
		loY, hiY = min(loY, cy), max(hiY, cy)
	}
	rows := hiY - loY + 1
	if rows <= 0 || rows > 1<<16 {
		return countBinsMap(places, cell)
	}
	seen := make([]int, outcomes*rows) // the column (+1) each was last seen in
	n := 0
	col := int(places[0].x / cell)
	for _, p := range places {
		cx := int(p.x / cell)
		if cx < col || cx < 0 {
			return countBinsMap(places, cell)
		}
		col = cx
		at := p.outcome*rows + int(p.y/cell) - loY
		if seen[at] != cx+1 {
			seen[at] = cx + 1
			n++
		}
	}
	return n
}

// countBinsMap is countBins with a map of every bin.
func countBinsMap(places []dotPlace, cell float64) int {
	type bin struct {
		outcome int
		cx, cy  int
	}
	bins := map[bin]bool{}
	for _, p := range places {
		bins[bin{p.outcome, int(p.x / cell), int(p.y / cell)}] = true
	}
	return len(bins)
}

func dot(at int64, y float64, class, title string, sc scale) shape {
	return shape{Kind: "circle", Class: class, A: at, B: at, X: sc.x(at), Y: y, W: dotRadius, Title: title}
}

// latencyAxis maps a latency to y and gives the y ticks.
func latencyAxis(lo, hi int64, logScale bool, bottom float64) (func(int64) float64, []tick) {
	if !logScale {
		top := max(hi, int64(time.Millisecond))
		y := func(l int64) float64 { return bottom - float64(l)/float64(top)*chartPlotH }
		var ticks []tick
		for _, frac := range []float64{0, 0.5, 1} {
			l := int64(frac * float64(top))
			ticks = append(ticks, tick{X: y(l), Label: checker.Seconds(l)})
		}
		return y, ticks
	}
	a := math.Floor(math.Log10(float64(lo)))
	b := math.Ceil(math.Log10(float64(hi)))
	if b <= a {
		b = a + 1
	}
	y := func(l int64) float64 {
		v := math.Log10(float64(max(l, 1)))
		return bottom - (v-a)/(b-a)*chartPlotH
	}
	var ticks []tick
	for e := a; e <= b; e++ {
		l := int64(math.Pow(10, e))
		ticks = append(ticks, tick{X: y(l), Label: time.Duration(l).String()})
	}
	return y, ticks
}

type throughput struct {
	chartFrame
	YTicks []tick
	Bands  []shape
	Lines  []svgPath
	Bucket string
	Total  int
}

// minRateOps is the fewest completed operations worth a throughput plot.
const minRateOps = 10

// buildThroughput counts completed client operations per time bucket by
// outcome, in operations per second, like Jepsen's rate plot.
func buildThroughput(ops []history.Op, res checker.Result, sc scale) *throughput {
	done := 0
	for _, o := range ops {
		if o.Done() {
			done++
		}
	}
	if done < minRateOps {
		return nil
	}
	n := rateBuckets
	width := float64(sc.span) / float64(n)
	outcomes := []history.Type{history.OK, history.Fail, history.Info}
	counts := map[history.Type][]int{}
	for _, t := range outcomes {
		counts[t] = make([]int, n)
	}
	for _, o := range ops {
		if !o.Done() {
			continue
		}
		i := min(int(float64(o.Completion.Time)/width), n-1)
		if c, ok := counts[o.Completion.Type]; ok {
			c[i]++
		}
	}
	peak := 1
	for _, c := range counts {
		for _, v := range c {
			peak = max(peak, v)
		}
	}
	perSec := 1e9 / width
	tp := &throughput{chartFrame: newChartFrame(sc), Total: done, Bucket: checker.Seconds(int64(width))}
	tp.Bands = faultBands(res.Faults, tp.Top, tp.Bottom, sc)
	y := func(v int) float64 { return tp.Bottom - float64(v)/float64(peak)*chartPlotH }
	for _, frac := range []float64{0, 0.5, 1} {
		v := int(math.Round(frac * float64(peak)))
		tp.YTicks = append(tp.YTicks, tick{X: y(v), Label: strconv.FormatFloat(float64(v)*perSec, 'f', 0, 64) + "/s"})
	}
	for _, t := range outcomes {
		c := counts[t]
		total := 0
		var d strings.Builder
		fmt.Fprintf(&d, "M%s %s", coord(sc.x(0)), coord(y(c[0])))
		for i, v := range c {
			total += v
			x1 := sc.x(int64(float64(i+1) * width))
			fmt.Fprintf(&d, "V%sH%s", coord(y(v)), coord(x1))
		}
		if total == 0 {
			continue
		}
		label := map[history.Type]string{history.OK: "ok", history.Fail: "fail", history.Info: "unknown"}[t]
		tp.Lines = append(tp.Lines, svgPath{Class: "rate rate-" + string(t), D: d.String(),
			Title: fmt.Sprintf("%d operations completed %s, counted per %s", total, label, tp.Bucket)})
	}
	return tp
}
