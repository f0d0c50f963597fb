package pages

// SVG geometry every chart of a report shares: the time scale, the axis
// ticks, the frame and the shapes the page's script re-places on zoom.

import (
	"html/template"
	"math"
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
	minBarWidth = 1.5
)

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

// Y2 is the bottom of a mark's line.
func (s shape) Y2() float64 { return s.Y + s.H }

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

// bar is a rectangle over the run time [a, b], at least minBarWidth wide.
func (s scale) bar(class string, a, b int64, y, h float64, title string) shape {
	return shape{Kind: "rect", Class: class, A: a, B: b, X: s.x(a), Y: y, W: s.width(a, b), H: h, Title: title}
}

func textAt(t int64, dx, y float64, label, class string, sc scale) shape {
	return shape{Kind: "text", Class: class, A: t, B: t, X: sc.x(t) + dx, DX: dx, Y: y, Label: label}
}

func mark(t int64, y1, y2 float64, class, label string, lx, ly float64, title string, sc scale) shape {
	return shape{Kind: "mark", Class: class, A: t, B: t, X: sc.x(t), Y: y1, H: y2 - y1, Label: label, LX: lx, LY: ly, Title: title}
}

// coord prints a path coordinate finely enough to stay exact when a long
// run is zoomed into.
func coord(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

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

// shapeEscaper escapes text as html/template does in the attributes and
// elements a shape writes (its htmlReplacementTable), so that a shape
// written here reads exactly as one the template would have written.
var shapeEscaper = strings.NewReplacer(
	"\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;")

// shapesHTML writes shapes as SVG markup, one element and a newline each.
// A report draws one shape per operation; written by html/template, with a
// reflective call for every attribute, they were most of the time a
// report took to render, and rendering reports a tenth of a suite's
// harness (BENCHMARKS.md).
func shapesHTML(shapes []shape) template.HTML {
	var b strings.Builder
	str := func(s string) { shapeEscaper.WriteString(&b, s) }
	// open starts an element of the given class and z, the class of what
	// report.js re-places on zoom; num and integer add an attribute.
	open := func(tag, class string) {
		b.WriteString("<" + tag + ` class="`)
		str(class)
		b.WriteString(` z"`)
	}
	num := func(name string, x float64) {
		b.WriteString(" " + name + `="` + strconv.FormatFloat(x, 'f', 1, 64) + `"`)
	}
	integer := func(name string, n int64) {
		b.WriteString(" " + name + `="` + strconv.FormatInt(n, 10) + `"`)
	}
	// body closes the start tag and writes the title, if there is one.
	body := func(title string) {
		b.WriteString(">")
		if title != "" {
			b.WriteString("<title>")
			str(title)
			b.WriteString("</title>")
		}
	}
	for _, s := range shapes {
		switch s.Kind {
		case "rect":
			open("rect", s.Class)
			num("x", s.X)
			num("y", s.Y)
			num("width", s.W)
			num("height", s.H)
			integer("data-a", s.A)
			integer("data-b", s.B)
			body(s.Title)
			b.WriteString("</rect>\n")
		case "mark":
			open("g", s.Class)
			b.WriteString(` transform="translate(` + strconv.FormatFloat(s.X, 'f', 1, 64) + `,0)"`)
			integer("data-a", s.A)
			body(s.Title)
			b.WriteString(`<line x1="0" x2="0"`)
			num("y1", s.Y)
			num("y2", s.Y2())
			b.WriteString("/>")
			if s.Label != "" {
				b.WriteString("<text")
				num("x", s.LX)
				num("y", s.LY)
				body("")
				str(s.Label)
				b.WriteString("</text>")
			}
			b.WriteString("</g>\n")
		case "text":
			open("text", s.Class)
			num("x", s.X)
			num("y", s.Y)
			integer("data-a", s.A)
			num("data-dx", s.DX)
			body("")
			str(s.Label)
			b.WriteString("</text>\n")
		case "circle":
			open("circle", s.Class)
			num("cx", s.X)
			num("cy", s.Y)
			num("r", s.W)
			integer("data-a", s.A)
			body(s.Title)
			b.WriteString("</circle>\n")
		}
	}
	// Every string from the run above went through shapeEscaper.
	return template.HTML(b.String())
}
