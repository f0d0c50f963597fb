package pages

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/runstore"
)

//go:embed assets
var assets embed.FS

var pageFuncs = template.FuncMap{
	// f formats SVG coordinates: a tenth of a unit is finer than a pixel.
	"f":     func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) },
	"sec":   checker.Seconds,
	"upper": strings.ToUpper,
	// inc and bucket serve the matrix: a colspan one wider than the
	// columns, and a percentage as one of eleven colour steps.
	"inc": func(n int) int { return n + 1 },
	// plus and half place the sweep plot's labels.
	"plus":   func(a, b float64) float64 { return a + b },
	"half":   func(a float64) float64 { return a / 2 },
	"bucket": bucket,
	// yLabelX places a chart's y-axis labels left of its plot.
	"yLabelX": func(left float64) float64 { return left - 8 },
	// plotRight is the right edge of a chart's plot.
	"plotRight": func(left, plot float64) float64 { return left + plot },
	// shapes writes a chart's shapes, which carry data-a/data-b (run
	// time, ns) so that report.js can re-place them when the view zooms.
	"shapes": shapesHTML,
}

func parsePage(name string) *template.Template {
	return template.Must(template.New(name).Funcs(pageFuncs).ParseFS(assets, "assets/"+name, "assets/shapes.tmpl"))
}

var reportTemplate = parsePage("report.html.tmpl")

// pageAssets reads the package's own stylesheets and scripts. They are
// embedded files, not data from a run, so they go into the page as trusted
// CSS and JS; everything from a run goes through the template's escaping.
func pageAssets(css []string, js []string) (template.CSS, template.JS, error) {
	var c, j strings.Builder
	for _, name := range css {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return "", "", fmt.Errorf("pages: page asset: %w", err)
		}
		c.Write(b)
	}
	for _, name := range js {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return "", "", fmt.Errorf("pages: page asset: %w", err)
		}
		j.Write(b)
	}
	return template.CSS(c.String()), template.JS(j.String()), nil
}

type reportView struct {
	CSS         template.CSS
	JS          template.JS
	Meta        runstore.Meta
	Res         checker.Result
	Verdict     string
	AsExpected  bool
	Started     string
	Duration    string
	TTL         string
	NodeCount   int
	ClientCount int
	ClientOps   int
	Files       []fileLink
	Violations  []violationView
	// Properties are the checker's verdicts one property at a time.
	Properties []propertyRow
	// MoreViolations is how many overlaps result.json counts beyond those
	// listed.
	MoreViolations int
	Resource       *resourceView
	Timeline       *timeline
	Latency        *scatter
	Throughput     *throughput
	// FewOps is set when too few operations completed for a throughput
	// plot.
	FewOps int
	Faults []faultRow
}

type fileLink struct{ Name, Href string }

type faultRow struct {
	Label, Start, End, Detail string
}

// violationView explains one overlap in words and carries the window the
// timeline zooms to when the reader asks to see it.
type violationView struct {
	Headline string
	Beliefs  []string
	Faults   []string
	Resource []string
	ViewA    int64
	ViewB    int64
}

func renderReport(w io.Writer, dir string, rec runstore.Record, events []history.Event) error {
	css, js, err := pageAssets([]string{"base.css", "report.css"}, []string{"report.js"})
	if err != nil {
		return err
	}
	res := rec.Result
	v := reportView{
		CSS:         css,
		JS:          js,
		Meta:        rec.Meta,
		Res:         res,
		Verdict:     runstore.ShownVerdict(res.Verdict),
		AsExpected:  rec.AsExpected,
		Duration:    rec.Meta.Duration.Round(time.Millisecond).String(),
		TTL:         rec.Meta.TTL.String(),
		NodeCount:   len(rec.Meta.Nodes),
		ClientCount: len(rec.Meta.Clients),
		Files:       fileLinks(dir, rec),
		Properties:  propertyRows(res),
	}
	if !rec.Meta.Started.IsZero() {
		v.Started = rec.Meta.Started.UTC().Format("2006-01-02 15:04:05 MST")
	}
	if v.ClientCount == 0 {
		v.ClientCount = len(res.Clients)
	}
	for _, f := range res.Faults {
		row := faultRow{Label: f.Label(), Start: checker.Seconds(f.Start), End: checker.Seconds(f.End), Detail: f.Detail}
		if !f.Healed {
			row.End = "never healed"
		}
		v.Faults = append(v.Faults, row)
	}

	ops := history.Pair(events).Ops
	for _, o := range ops {
		if o.Invoke.F != history.Nemesis {
			v.ClientOps++
		}
	}
	byIndex := eventIndex(events)
	sc := newScale(res, events)
	resOps := resourceOps(ops, res)
	v.Resource = buildResourceView(resOps)
	v.Violations = explainViolations(res, resOps, sc)
	v.MoreViolations = res.ViolationCount - len(res.Violations)
	v.Timeline = buildTimeline(rec.Meta, res, byIndex, resOps, sc)
	v.Latency = buildScatter(res, sc, v.Timeline.ViewA, v.Timeline.ViewB)
	v.Throughput = buildThroughput(ops, res, sc)
	if v.Throughput == nil {
		for _, o := range ops {
			if o.Done() {
				v.FewOps++
			}
		}
	}
	if err := reportTemplate.Execute(w, v); err != nil {
		return fmt.Errorf("pages: rendering report: %w", err)
	}
	return nil
}

// eventIndex finds a history's events by index. A history read by
// history.Parse or recorded by a Recorder holds event i at position i;
// anything else is searched (indexes increase along a history).
type eventIndex []history.Event

func (x eventIndex) get(i int64) (history.Event, bool) {
	if i >= 0 && i < int64(len(x)) && x[i].Index == i {
		return x[i], true
	}
	j := sort.Search(len(x), func(j int) bool { return x[j].Index >= i })
	if j < len(x) && x[j].Index == i {
		return x[j], true
	}
	return history.Event{}, false
}

// fileLinks lists the run's raw files, node logs included, relative to the
// report.
func fileLinks(dir string, rec runstore.Record) []fileLink {
	var out []fileLink
	for _, role := range []string{"history", "porcupine"} {
		if name, ok := rec.Files[role]; ok {
			out = append(out, fileLink{Name: name, Href: name})
		}
	}
	out = append(out, fileLink{Name: runstore.ResultFile, Href: runstore.ResultFile})
	for _, name := range runstore.NodeLogs(dir) {
		out = append(out, fileLink{Name: name, Href: name})
	}
	return out
}

// explainViolations says, for each listed overlap, who believed what over
// which interval, which faults were active and what the resource saw.
func explainViolations(res checker.Result, resOps []resourceOp, sc scale) []violationView {
	var out []violationView
	for _, v := range res.Violations {
		// The checker's sentence is the headline unless both beliefs are
		// found: then the faults go in their own bullet, not in it.
		vv := violationView{Headline: v.Text}
		first := v.From
		for _, c := range v.Clients {
			b, ok := violatingBelief(res, v, c)
			if !ok {
				continue
			}
			first = min(first, b.Invoke)
			vv.Beliefs = append(vv.Beliefs, beliefSentence(b))
		}
		if len(vv.Beliefs) == len(v.Clients) {
			vv.Headline = fmt.Sprintf("%s and %s both believed they held lock %q from %s to %s (%s).",
				v.Clients[0], v.Clients[1], v.Key, checker.Seconds(v.From), checker.Seconds(v.To), checker.Seconds(v.To-v.From))
			for _, f := range v.Faults {
				vv.Faults = append(vv.Faults, faultSentence(f))
			}
			if len(v.Faults) == 0 {
				vv.Faults = append(vv.Faults, "no fault was active")
			}
		}
		vv.Resource = resourceDuring(resOps, v.Clients[:], first, v.To)
		vv.ViewA, vv.ViewB = sc.window(first, v.To)
		out = append(out, vv)
	}
	return out
}

// violatingBelief finds client's belief interval that covers the overlap.
func violatingBelief(res checker.Result, v checker.Violation, client string) (checker.Belief, bool) {
	for _, k := range res.Keys {
		if k.Key != v.Key {
			continue
		}
		for _, b := range k.Beliefs {
			if b.Client == client && b.Start <= v.From && (b.End >= v.To || b.EndReason == checker.EndOpen) {
				return b, true
			}
		}
	}
	return checker.Belief{}, false
}

func beliefSentence(b checker.Belief) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s asked for %q at %s and was granted it at %s", b.Client, b.Key, checker.Seconds(b.Invoke), checker.Seconds(b.Start))
	if len(b.Nodes) > 0 {
		fmt.Fprintf(&sb, " by %s", strings.Join(b.Nodes, ", "))
	}
	if b.Deadline != nil {
		fmt.Fprintf(&sb, "; its lease was valid until %s", checker.Seconds(*b.Deadline))
	}
	if b.Token != nil {
		fmt.Fprintf(&sb, " (fencing token %d)", *b.Token)
	}
	switch b.EndReason {
	case checker.EndDeadline:
		fmt.Fprintf(&sb, "; it believed it held the lock until that deadline")
	case checker.EndOpen:
		fmt.Fprintf(&sb, "; it still held it when the history ended")
	default:
		fmt.Fprintf(&sb, "; it believed it held the lock until %s (%s)", checker.Seconds(b.End), checker.EndText(b.EndReason))
	}
	return sb.String() + "."
}

func faultSentence(f checker.FaultWindow) string {
	s := f.Label()
	switch {
	case f.End == f.Start:
		s += " at " + checker.Seconds(f.Start)
	case !f.Healed:
		s += " from " + checker.Seconds(f.Start) + ", never healed"
	default:
		s += " from " + checker.Seconds(f.Start) + " to " + checker.Seconds(f.End)
	}
	if f.Detail != "" && f.Detail != f.Label() {
		s += " (" + f.Detail + ")"
	}
	return s
}
