package results

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
)

//go:embed report.html.tmpl report.css
var assets embed.FS

var reportTemplate = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"f":   func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) },
	"sec": checker.Seconds,
}).ParseFS(assets, "report.html.tmpl"))

// Timeline geometry, in SVG user units.
const (
	plotLeft   = 130.0
	plotWidth  = 900.0
	plotRight  = 24.0
	axisHeight = 28.0
	laneHeight = 30.0
	laneGap    = 4.0
	netRow     = 18.0
	scatterH   = 150.0
)

type reportView struct {
	CSS          template.CSS
	Meta         Meta
	Res          checker.Result
	Verdict      string
	AsExpected   bool
	Started      string
	Duration     string
	TTL          string
	NodeCount    int
	ClientCount  int
	Timeline     *timeline
	Latency      *scatter
	Faults       []faultRow
	Files        []fileLink
	MultipleKeys bool
}

type fileLink struct{ Name, Href string }

type faultRow struct {
	Label, Start, End, Detail string
}

type lane struct {
	Label, Class string
	Y, H, TextY  float64
}

type rect struct {
	X, Y, W, H     float64
	Class, Title   string
	Label          string
	LabelX, LabelY float64
}

type marker struct {
	X, Y1, Y2      float64
	Class, Title   string
	Label          string
	LabelX, LabelY float64
}

type tick struct {
	X     float64
	Label string
}

type timeline struct {
	Width, Height       float64
	PlotTop, PlotBottom float64
	AxisY               float64
	Ticks               []tick
	Lanes               []lane
	Bands               []rect
	Bars                []rect
	Overlaps            []rect
	Markers             []marker
}

type point struct {
	X, Y         float64
	Class, Title string
}

type scatter struct {
	Width, Height float64
	Top, Bottom   float64
	Ticks         []tick // x axis, shared scale with the timeline
	YTicks        []tick // X holds the y coordinate
	Points        []point
}

func renderReport(w io.Writer, rec Record, events []history.Event) error {
	css, err := assets.ReadFile("report.css")
	if err != nil {
		return fmt.Errorf("results: report stylesheet: %w", err)
	}
	res := rec.Result
	v := reportView{
		// The stylesheet is the package's own embedded file, not data
		// from a run.
		CSS:          template.CSS(css),
		Meta:         rec.Meta,
		Res:          res,
		Verdict:      string(res.Verdict),
		AsExpected:   rec.AsExpected,
		Duration:     rec.Meta.Duration.Round(time.Millisecond).String(),
		TTL:          rec.Meta.TTL.String(),
		NodeCount:    len(rec.Meta.Nodes),
		ClientCount:  len(rec.Meta.Clients),
		MultipleKeys: len(res.Keys) > 1,
	}
	if res.Verdict != checker.Valid && res.Verdict != checker.Invalid {
		// Anything the page cannot call valid or invalid is shown as
		// unknown, never as a pass.
		v.Verdict = string(checker.Unknown)
	}
	if !rec.Meta.Started.IsZero() {
		v.Started = rec.Meta.Started.UTC().Format("2006-01-02 15:04:05 MST")
	}
	if v.ClientCount == 0 {
		v.ClientCount = len(res.Clients)
	}
	for _, role := range []string{"history", "report", "porcupine"} {
		if name, ok := rec.Files[role]; ok && role != "report" {
			v.Files = append(v.Files, fileLink{Name: name, Href: name})
		}
	}
	v.Files = append(v.Files, fileLink{Name: ResultFile, Href: ResultFile})
	for _, f := range res.Faults {
		row := faultRow{Label: f.Label(), Start: checker.Seconds(f.Start), End: checker.Seconds(f.End), Detail: f.Detail}
		if !f.Healed {
			row.End = "never healed"
		}
		v.Faults = append(v.Faults, row)
	}
	byIndex := make(map[int64]history.Event, len(events))
	for _, e := range events {
		byIndex[e.Index] = e
	}
	sc := newScale(res)
	v.Timeline = buildTimeline(rec.Meta, res, byIndex, sc)
	v.Latency = buildScatter(res, sc)
	if err := reportTemplate.Execute(w, v); err != nil {
		return fmt.Errorf("results: rendering report: %w", err)
	}
	return nil
}

// scale maps run time to x, to scale: equal durations are equal widths
// everywhere on the page.
type scale struct{ span int64 }

func newScale(res checker.Result) scale {
	span := res.End
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
	return math.Max(s.x(to)-s.x(from), 1.5)
}

// ticks picks a 1-2-5 step giving about eight labelled ticks.
func (s scale) ticks() []tick {
	raw := float64(s.span) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []tick
	for t := 0.0; t <= float64(s.span)+1; t += step {
		out = append(out, tick{X: s.x(int64(t)), Label: checker.Seconds(int64(t))})
	}
	return out
}

func buildTimeline(meta Meta, res checker.Result, events map[int64]history.Event, sc scale) *timeline {
	tl := &timeline{Width: plotLeft + plotWidth + plotRight, PlotTop: axisHeight, Ticks: sc.ticks()}
	y := axisHeight
	laneOf := map[string]int{}
	addLane := func(label, class string, h float64) int {
		tl.Lanes = append(tl.Lanes, lane{Label: label, Class: class, Y: y, H: h, TextY: y + h/2 + 4})
		y += h + laneGap
		return len(tl.Lanes) - 1
	}

	seen := append([]string(nil), res.Clients...)
	for _, k := range res.Keys {
		for _, b := range k.Beliefs {
			seen = append(seen, b.Client)
		}
		for _, a := range k.Attempts {
			seen = append(seen, a.Client)
		}
	}
	clients := union(meta.Clients, seen)
	for _, c := range clients {
		laneOf["client:"+c] = addLane(c, "lane-client", laneHeight)
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
			if _, isClient := laneOf["client:"+n]; !isClient {
				nodeNames = append(nodeNames, n)
			}
		}
	}
	for _, n := range union(meta.Nodes, nodeNames) {
		laneOf["node:"+n] = addLane(n, "lane-node", laneHeight)
	}
	rows := packRows(netFaults, sc)
	netLane, otherLane := -1, -1
	if len(netFaults) > 0 {
		netLane = addLane("network", "lane-net", float64(rowCount(rows))*netRow+8)
	}
	if len(otherFaults) > 0 {
		otherLane = addLane("nemesis", "lane-net", laneHeight)
	}
	tl.PlotBottom = y - laneGap
	tl.AxisY = axisHeight - 8
	tl.Height = tl.PlotBottom + 8

	// Client lanes: what each client believed and tried.
	for _, k := range res.Keys {
		for _, b := range k.Beliefs {
			ln := tl.Lanes[laneOf["client:"+b.Client]]
			tl.Bars = append(tl.Bars, rect{
				X: sc.x(b.Invoke), Y: ln.Y + ln.H/2 - 1.5, W: sc.width(b.Invoke, b.Start), H: 3,
				Class: "acquiring", Title: "acquire in flight\n" + beliefTitle(b, events),
			})
			if b.EndReason != checker.EndDeadline && b.Deadline != nil && *b.Deadline > b.End {
				// What the lease still had left when the client let go:
				// shows how much a release shortened the belief.
				tl.Bars = append(tl.Bars, rect{
					X: sc.x(b.End), Y: ln.Y + 8, W: sc.width(b.End, *b.Deadline), H: ln.H - 16,
					Class: "lease-rest", Title: fmt.Sprintf("%s's lease on %q would have lasted until %s", b.Client, b.Key, checker.Seconds(*b.Deadline)),
				})
			}
			r := rect{
				X: sc.x(b.Start), Y: ln.Y + 5, W: sc.width(b.Start, b.End), H: ln.H - 10,
				Class: "belief", Title: beliefTitle(b, events),
			}
			if len(res.Keys) > 1 && r.W > 40 {
				r.Label, r.LabelX, r.LabelY = b.Key, r.X+4, ln.TextY
			}
			tl.Bars = append(tl.Bars, r)
		}
		for _, a := range k.Attempts {
			ln := tl.Lanes[laneOf["client:"+a.Client]]
			title := attemptTitle(a, events)
			tl.Bars = append(tl.Bars, rect{
				X: sc.x(a.Invoke), Y: ln.Y + ln.H - 9, W: sc.width(a.Invoke, a.End), H: 5,
				Class: "attempt attempt-" + cssIdent(a.Outcome), Title: title,
			})
			glyph := map[string]string{"fail": "×", "info": "?", checker.OutcomePending: "…"}[a.Outcome]
			tl.Markers = append(tl.Markers, marker{
				X: sc.x(a.End), Y1: ln.Y + 4, Y2: ln.Y + ln.H - 4,
				Class: "attempt-mark attempt-" + cssIdent(a.Outcome), Title: title,
				Label: glyph, LabelX: sc.x(a.End) + 2, LabelY: ln.Y + 12,
			})
		}
	}
	for _, v := range res.Violations {
		for _, c := range v.Clients {
			ln := tl.Lanes[laneOf["client:"+c]]
			tl.Overlaps = append(tl.Overlaps, rect{
				X: sc.x(v.From), Y: ln.Y + 1, W: math.Max(sc.x(v.To)-sc.x(v.From), 2), H: ln.H - 2,
				Class: "overlap", Title: v.Text,
			})
		}
	}

	// Node lanes: clocks, pauses, kills.
	for _, f := range res.Faults {
		title := faultTitle(f)
		for _, n := range f.Nodes {
			idx, ok := laneOf["node:"+n]
			if !ok {
				idx = laneOf["client:"+n]
			}
			ln := tl.Lanes[idx]
			if isClock(f.Kind) {
				if f.End > f.Start {
					tl.Bars = append(tl.Bars, rect{
						X: sc.x(f.Start), Y: ln.Y + 3, W: sc.width(f.Start, f.End), H: ln.H - 6,
						Class: "fault-node fault-clock", Title: title,
					})
				}
				x := sc.x(f.Start)
				tl.Markers = append(tl.Markers, marker{
					X: x, Y1: ln.Y + 1, Y2: ln.Y + ln.H - 1,
					Class: "clock-jump", Title: title,
					Label: n + " " + offsetText(f.Offset), LabelX: x + 4, LabelY: ln.TextY,
				})
				continue
			}
			r := rect{
				X: sc.x(f.Start), Y: ln.Y + 3, W: sc.width(f.Start, f.End), H: ln.H - 6,
				Class: "fault-node fault-" + cssIdent(f.Kind), Title: title,
			}
			if r.W > 36 {
				r.Label, r.LabelX, r.LabelY = f.Kind, r.X+4, ln.TextY
			}
			tl.Bars = append(tl.Bars, r)
		}
	}

	// Network faults: a band across every lane, labelled in the network lane.
	for i, f := range netFaults {
		title := faultTitle(f)
		tl.Bands = append(tl.Bands, rect{
			X: sc.x(f.Start), Y: tl.PlotTop, W: sc.width(f.Start, f.End), H: tl.PlotBottom - tl.PlotTop,
			Class: "fault-band fault-" + cssIdent(f.Kind), Title: title,
		})
		ln := tl.Lanes[netLane]
		ry := ln.Y + 4 + float64(rows[i])*netRow
		tl.Bars = append(tl.Bars, rect{
			X: sc.x(f.Start), Y: ry, W: sc.width(f.Start, f.End), H: netRow - 3,
			Class: "fault-net fault-" + cssIdent(f.Kind), Title: title,
			Label: f.Label(), LabelX: sc.x(f.Start) + 3, LabelY: ry + netRow - 7,
		})
	}
	for _, f := range otherFaults {
		ln := tl.Lanes[otherLane]
		r := rect{
			X: sc.x(f.Start), Y: ln.Y + 3, W: sc.width(f.Start, f.End), H: ln.H - 6,
			Class: "fault-node fault-" + cssIdent(f.Kind), Title: faultTitle(f),
		}
		r.Label, r.LabelX, r.LabelY = f.Label(), r.X+4, ln.TextY
		tl.Bars = append(tl.Bars, r)
	}
	return tl
}

// packRows stacks network faults that overlap (label included) on separate
// rows of the network lane.
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
		if !placed {
			rows[i] = len(rowEnd)
			rowEnd = append(rowEnd, x2)
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

func buildScatter(res checker.Result, sc scale) *scatter {
	type sample struct {
		at, latency int64
		class, text string
	}
	var samples []sample
	for _, k := range res.Keys {
		for _, b := range k.Beliefs {
			samples = append(samples, sample{b.Invoke, b.Start - b.Invoke, "lat-ok",
				fmt.Sprintf("%s acquire %q ok in %s at %s", b.Client, b.Key, checker.Seconds(b.Start-b.Invoke), checker.Seconds(b.Invoke))})
		}
		for _, a := range k.Attempts {
			if a.Outcome == checker.OutcomePending {
				continue
			}
			samples = append(samples, sample{a.Invoke, a.End - a.Invoke, "lat-" + cssIdent(a.Outcome),
				fmt.Sprintf("%s acquire %q %s in %s at %s", a.Client, a.Key, a.Outcome, checker.Seconds(a.End-a.Invoke), checker.Seconds(a.Invoke))})
		}
	}
	if len(samples) == 0 {
		return nil
	}
	var top int64 = int64(time.Millisecond)
	for _, s := range samples {
		top = max(top, s.latency)
	}
	sp := &scatter{Width: plotLeft + plotWidth + plotRight, Top: 18, Bottom: 18 + scatterH, Ticks: sc.ticks()}
	sp.Height = sp.Bottom + 26
	y := func(l int64) float64 { return sp.Bottom - float64(l)/float64(top)*scatterH }
	for _, frac := range []float64{0, 0.5, 1} {
		l := int64(frac * float64(top))
		sp.YTicks = append(sp.YTicks, tick{X: y(l), Label: checker.Seconds(l)})
	}
	for _, s := range samples {
		sp.Points = append(sp.Points, point{X: sc.x(s.at), Y: y(s.latency), Class: s.class, Title: s.text})
	}
	return sp
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

func endText(reason string) string {
	switch reason {
	case checker.EndDeadline:
		return "validity deadline"
	case checker.EndRelease:
		return "released"
	case checker.EndReacquire:
		return "asked for the lock again"
	case checker.EndOpen:
		return "still held when the history ended"
	}
	return reason
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

func isClock(kind string) bool { return strings.Contains(kind, "clock") }

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
