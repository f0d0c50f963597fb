package pages

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"

	"splitbrain/runstore"
)

// WriteSweep writes a sweep's page and data into dir (usually the store):
// each play's folder made relative to dir, each point tallied, and a plot
// of how often each lock broke against the swept value.
func WriteSweep(dir string, s runstore.Sweep) error {
	if err := s.Prepare(dir); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := renderSweep(&page, s); err != nil {
		return err
	}
	return runstore.SaveSweep(dir, s, page.Bytes())
}

var sweepTemplate = parsePage("sweep.html.tmpl")

// The plot's geometry, in SVG units.
const (
	sweepW, sweepH         = 820.0, 400.0
	sweepLeft, sweepRight  = 64.0, 24.0
	sweepTop, sweepBottom  = 24.0, 84.0
	sweepPlotW, sweepPlotH = sweepW - sweepLeft - sweepRight, sweepH - sweepTop - sweepBottom
)

// sweepColors tell the locks apart: the report's palette.
var sweepColors = []string{"#2f6feb", "#cf222e", "#1a7f37", "#8250df", "#b7791f", "#57606a"}

type sweepView struct {
	CSS     template.CSS
	S       runstore.Sweep
	Started string
	W, H    float64
	Plot    sweepPlot
	Series  []sweepSeries
	XTicks  []sweepTick
	YTicks  []sweepTick
	Mark    *sweepMark
	Rows    []sweepRow
}

type sweepPlot struct{ X, Y, W, H float64 }

type sweepTick struct {
	Pos   float64
	Label string
}

type sweepMark struct {
	X     float64
	Label string
}

type sweepSeries struct {
	Lock    string
	Color   string
	Points  string // the polyline's points
	Dots    []sweepDot
	LegendY float64
}

type sweepDot struct {
	X, Y, Lo, Hi float64
	Title        string
	Href         string
}

type sweepRow struct {
	Value string
	Cells []sweepCell
}

type sweepCell struct {
	Text, Title, Href string
	Pct               int
	NA                bool
}

func renderSweep(w io.Writer, s runstore.Sweep) error {
	css, _, err := pageAssets([]string{"base.css", "sweep.css"}, nil)
	if err != nil {
		return err
	}
	v := sweepView{CSS: css, S: s, W: sweepW, H: sweepH,
		Plot: sweepPlot{X: sweepLeft, Y: sweepTop, W: sweepPlotW, H: sweepPlotH}}
	if !s.Started.IsZero() {
		v.Started = s.Started.UTC().Format("2006-01-02 15:04:05 MST")
	}
	xOf := sweepAxis(s)
	yOf := func(rate float64) float64 { return sweepTop + sweepPlotH*(1-rate) }
	for i, val := range s.Values {
		v.XTicks = append(v.XTicks, sweepTick{Pos: xOf(s.X[i]), Label: val})
	}
	for _, pct := range []int{0, 25, 50, 75, 100} {
		v.YTicks = append(v.YTicks, sweepTick{Pos: yOf(float64(pct) / 100), Label: fmt.Sprintf("%d %%", pct)})
	}
	if s.Mark != nil {
		label := s.Mark.Label
		if label == "" {
			label = s.Mark.Value
		}
		v.Mark = &sweepMark{X: xOf(s.Mark.X), Label: label}
	}
	byLock := map[string]map[string]runstore.SweepPoint{}
	for _, p := range s.Points {
		if byLock[p.Lock] == nil {
			byLock[p.Lock] = map[string]runstore.SweepPoint{}
		}
		byLock[p.Lock][p.Value] = p
	}
	for li, lock := range s.Locks {
		ser := sweepSeries{Lock: lock, Color: sweepColors[li%len(sweepColors)], LegendY: sweepTop + 14 + 18*float64(li)}
		var pts bytes.Buffer
		// Each lock's points a few units aside, so that equal shares
		// and their intervals do not hide each other.
		shift := 5 * (float64(li) - float64(len(s.Locks)-1)/2)
		for i, val := range s.Values {
			p, ok := byLock[lock][val]
			if !ok || p.NA != "" || p.Runs-p.Unknown == 0 {
				continue
			}
			x, y := xOf(s.X[i])+shift, yOf(p.Rate)
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
			ser.Dots = append(ser.Dots, sweepDot{X: x, Y: y, Lo: yOf(p.Interval[0]), Hi: yOf(p.Interval[1]),
				Title: fmt.Sprintf("%s at %s: %d of %d plays broke the lock's promise (%.0f %%, 95 %% interval %.0f–%.0f %%)%s",
					lock, val, p.Invalid, p.Runs-p.Unknown, 100*p.Rate, 100*p.Interval[0], 100*p.Interval[1], unknownNote(p.Unknown)),
				Href: firstBroken(p)})
		}
		ser.Points = pts.String()
		v.Series = append(v.Series, ser)
	}
	for _, val := range s.Values {
		row := sweepRow{Value: val}
		for _, lock := range s.Locks {
			p, ok := byLock[lock][val]
			switch {
			case !ok:
				row.Cells = append(row.Cells, sweepCell{Text: "—", NA: true})
			case p.NA != "":
				row.Cells = append(row.Cells, sweepCell{Text: "n/a", Title: p.NA, NA: true})
			default:
				row.Cells = append(row.Cells, sweepCell{Text: fmt.Sprintf("%d/%d", p.Invalid, p.Runs-p.Unknown) + unknownNote(p.Unknown),
					Title: fmt.Sprintf("95 %% interval %.0f–%.0f %%", 100*p.Interval[0], 100*p.Interval[1]),
					Href:  firstBroken(p), Pct: int(math.Round(100 * p.Rate))})
			}
		}
		v.Rows = append(v.Rows, row)
	}
	return sweepTemplate.Execute(w, v)
}

func unknownNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d unknown", n)
}

// firstBroken is the report of p's first play that broke the lock, else
// its first play's.
func firstBroken(p runstore.SweepPoint) string {
	for _, pl := range p.Plays {
		if pl.Answers.Lock == "invalid" {
			return pl.Report
		}
	}
	if len(p.Plays) > 0 {
		return p.Plays[0].Report
	}
	return ""
}

// sweepAxis maps a value's place (Sweep.X) onto the plot, linear or
// logarithmic, with a margin of a twentieth of the span each side.
func sweepAxis(s runstore.Sweep) func(float64) float64 {
	xs := append([]float64(nil), s.X...)
	if s.Mark != nil {
		xs = append(xs, s.Mark.X)
	}
	f := func(x float64) float64 { return x }
	if s.Log {
		f = func(x float64) float64 { return math.Log10(math.Max(x, 1e-12)) }
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, f(x)), math.Max(hi, f(x))
	}
	if !(hi > lo) {
		lo, hi = lo-1, hi+1
	}
	pad := (hi - lo) / 20
	lo, hi = lo-pad, hi+pad
	return func(x float64) float64 { return sweepLeft + sweepPlotW*(f(x)-lo)/(hi-lo) }
}
