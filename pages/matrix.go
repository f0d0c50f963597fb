package pages

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"

	"splitbrain/checker"
	"splitbrain/runstore"
)

// WriteMatrix writes matrix.html and matrix.json into dir, the suite's
// folder (usually the store), after making each play's folder relative to
// dir and tallying each cell.
func WriteMatrix(dir string, m runstore.Matrix) error {
	if err := m.Prepare(dir); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := renderMatrix(&page, m); err != nil {
		return err
	}
	return runstore.SaveMatrix(dir, m, page.Bytes())
}

var matrixTemplate = parsePage("matrix.html.tmpl")

type matrixView struct {
	CSS      template.CSS
	JS       template.JS
	M        runstore.Matrix
	Started  string
	Groups   []matrixGroup
	Plays    int
	Met      int
	Cells    int
	NA       int
	Flaky    int
	Findings int
	// Summary is each lock's column summed up (runstore's Summary, as the
	// terminal prints it).
	Summary []lockSummaryView
}

type matrixGroup struct {
	Family string
	Index  int
	Rows   []matrixRow
}

type matrixRow struct {
	Scenario string
	Cells    []matrixCellView
}

// lockSummaryView is a lock's summary as the page's table shows it: a
// cell per promise coloured by the share of rows that broke it.
// barView is one answer of a cell: k/N plays broke it, coloured by that
// rate among the plays that decided; amber when none decided (every
// answer unknown), grey when no play answered.
type barView struct {
	Kind    string // lock, res or live
	Class   string
	Txt     string
	Unknown int
}

func bar(kind string, broken, unknown, runs int) barView {
	b := barView{Kind: kind, Unknown: unknown}
	switch {
	case runs == 0:
		b.Class, b.Txt = "r-none", "–"
		return b
	case unknown == runs:
		b.Class = "r-unknown"
	default:
		b.Class = "r" + strconv.Itoa(bucket(pct(broken, runs-unknown)))
	}
	b.Txt = fmt.Sprintf("%d/%d", broken, runs)
	return b
}

type lockSummaryView struct {
	runstore.LockSummary
	Promises []promiseView
	// Price is the price in full (on hover), PriceShort compactly.
	Price      string
	PriceShort []string
	Line       string
}

// promiseView is a promise's tally: kept/rows coloured by the share of
// rows not kept (unknown is not kept), the rows that broke it (the first
// few shown, all on hover) and how many were unknown (named on hover).
type promiseView struct {
	runstore.PromiseTally
	Pct         int
	Text        string
	Broken      string
	BrokenAll   string
	UnknownAll  string
	UnknownRows int
}

type matrixCellView struct {
	runstore.MatrixCell
	Has      bool
	Href     string
	Title    string
	Class    string
	Expected bool
	// Bars are the three answers the cell shows, top to bottom: the
	// lock's promise, the resource, liveness (the two promises folded: a
	// play broke liveness if it broke either).
	Bars []barView
	// Keeps: the cell was played and kept every promise it answered
	// (runstore.MatrixCell.KeptAll), what the fault picker reads.
	Keeps bool
	// Slowed: the lock played the story slowed down (it cannot take its
	// TTL), which the cell marks, so that no reader takes the cell for
	// the story as written.
	Slowed bool
}

func renderMatrix(w io.Writer, m runstore.Matrix) error {
	css, js, err := pageAssets([]string{"base.css", "matrix.css"}, []string{"matrix.js"})
	if err != nil {
		return err
	}
	v := matrixView{CSS: css, JS: js, M: m}
	if !m.Started.IsZero() {
		v.Started = m.Started.UTC().Format("2006-01-02 15:04:05 MST")
	}
	cells := map[[2]string]runstore.MatrixCell{}
	family := map[string]string{}
	for _, c := range m.Cells {
		cells[[2]string{c.Scenario, c.Lock}] = c
		if family[c.Scenario] == "" {
			family[c.Scenario] = c.Family
		}
	}
	for _, ls := range m.Summary() {
		lv := lockSummaryView{LockSummary: ls, Price: ls.Price(), Line: ls.Line(0), PriceShort: priceShort(ls)}
		for _, t := range ls.Promises() {
			pv := promiseView{PromiseTally: t, Text: "–", Pct: -1}
			if t.Rows > 0 {
				pv.Text = fmt.Sprintf("%d/%d", t.Kept, t.Rows)
				pv.Pct = pct(t.Rows-t.Kept, t.Rows)
				pv.Broken, pv.BrokenAll = runstore.ListNames(t.Broken, 3), runstore.ListNames(t.Broken, 0)
				pv.UnknownAll, pv.UnknownRows = runstore.ListNames(t.Unknown, 0), len(t.Unknown)
			}
			lv.Promises = append(lv.Promises, pv)
		}
		v.Summary = append(v.Summary, lv)
	}
	for _, f := range append(slices.Clone(m.Families), "") {
		g := matrixGroup{Family: f, Index: len(v.Groups)}
		for _, s := range m.Scenarios {
			if family[s] != f {
				continue
			}
			row := matrixRow{Scenario: s}
			for _, l := range m.Locks {
				c, ok := cells[[2]string{s, l}]
				row.Cells = append(row.Cells, cellView(c, ok, &v))
			}
			g.Rows = append(g.Rows, row)
		}
		if len(g.Rows) > 0 {
			if g.Family == "" {
				g.Family = "other"
			}
			v.Groups = append(v.Groups, g)
		}
	}
	if err := matrixTemplate.Execute(w, v); err != nil {
		return fmt.Errorf("pages: rendering the matrix: %w", err)
	}
	return nil
}

func cellView(c runstore.MatrixCell, ok bool, v *matrixView) matrixCellView {
	cv := matrixCellView{MatrixCell: c, Has: ok}
	switch {
	case !ok:
		cv.Class, cv.Title = "cell-none", "not played"
		return cv
	case c.NA != "":
		v.NA++
		cv.Class, cv.Title = "cell-na", "n/a: "+c.NA
		return cv
	case c.Runs == 0:
		cv.Class, cv.Title = "cell-none", "not played (the suite was cut short)"
		return cv
	}
	v.Cells++
	v.Plays += c.Runs
	v.Met += c.Met
	if c.Flaky {
		v.Flaky++
	}
	if c.Finding {
		v.Findings++
	}
	cv.Expected = c.Met == c.Runs
	lockTxt, resTxt := fmt.Sprintf("%d/%d", c.LockBroken, c.Runs), ""
	if c.ResourceRuns > 0 {
		resTxt = fmt.Sprintf("%d/%d", c.ResourceHarmed, c.ResourceRuns)
	}
	cv.Bars = []barView{bar("lock", c.LockBroken, c.LockUnknown, c.Runs), bar("res", c.ResourceHarmed, c.ResourceUnknown, c.ResourceRuns),
		bar("live", c.LivenessBroken, c.LivenessUnknown, c.LivenessRuns)}
	cv.Keeps = c.KeptAll()
	cv.Class = "cell-rated"
	if c.Unknown > 0 {
		cv.Class += " cell-has-unknown"
	}
	if c.Flaky && c.FirstUnmet != "" {
		cv.Href = relHref(c.FirstUnmet)
	} else if c.FirstFailing != "" {
		cv.Href = relHref(c.FirstFailing)
	} else if len(c.Plays) > 0 && c.Plays[0].Report != "" {
		cv.Href = relHref(c.Plays[0].Report)
	}
	cv.Title = fmt.Sprintf("%s against %s: %d/%d invalid (95%% interval %.0f–%.0f %%); lock's promise broken in %s, resource harmed in %s",
		c.Scenario, c.Lock, c.Invalid, c.Runs, 100*c.Interval[0], 100*c.Interval[1], lockTxt, orNone(resTxt))
	if c.LivenessRuns > 0 {
		cv.Title += fmt.Sprintf("; deadlock freedom broken in %d/%d, fault tolerance in %d/%d", c.DeadlockBroken, c.DeadlockRuns, c.FaultBroken, c.FaultRuns)
	} else {
		cv.Title += "; liveness not judged"
	}
	if u := c.LockUnknown + c.ResourceUnknown + c.DeadlockUnknown + c.FaultUnknown; u > 0 {
		cv.Title += fmt.Sprintf("; %d unknown answers (lock %d, resource %d, deadlock freedom %d, fault tolerance %d)",
			u, c.LockUnknown, c.ResourceUnknown, c.DeadlockUnknown, c.FaultUnknown)
	}
	if c.ShareRuns > 0 {
		cv.Title += fmt.Sprintf("; granted %.0f %% of attempts (median; worst play %.0f %%)", 100*c.MedianShare, 100*c.WorstShare)
	}
	if c.AvailRuns > 0 {
		cv.Title += "; longest unavailable " + checker.Seconds(c.LongestUnavailable)
		if c.MaxHealDelay > 0 {
			cv.Title += ", next grant ≤ " + checker.Seconds(c.MaxHealDelay) + " after a heal"
		}
	}
	if c.Replayed > 0 {
		cv.Title += fmt.Sprintf("; %d of its plays replayed alone after missing while the harness or a driver stood still (the replay decides, the first play is linked from its report)", c.Replayed)
	}
	cv.Title += "; expected " + orNone(c.Expect)
	if len(c.Plays) > 0 && c.Plays[0].Slowed != "" {
		cv.Title += "; " + c.Plays[0].Slowed
		cv.Slowed = true
	}
	if !cv.Expected {
		cv.Title += " — NOT as expected"
	}
	return cv
}

// priceShort is a lock's price in a few words for the summary table (the
// rows they come from on hover): "≥ 16 % granted", "down ≤ 0.87s",
// "grant ≤ 2.95s after a heal".
func priceShort(s runstore.LockSummary) []string {
	if s.AvailRows == 0 {
		return nil
	}
	var out []string
	if s.ShareRows > 0 {
		out = append(out, fmt.Sprintf("≥ %.0f %% granted", 100*s.WorstShare))
	}
	out = append(out, "down ≤ "+checker.Seconds(s.LongestUnavailable))
	if s.MaxHealDelay > 0 {
		out = append(out, "grant ≤ "+checker.Seconds(s.MaxHealDelay)+" after a heal")
	}
	return out
}

// bucket is a percentage as one of eleven colour steps: 0 only for
// never, 10 only near always.
func bucket(pct int) int {
	if pct <= 0 {
		return 0
	}
	return min(max((pct+5)/10, 1), 10)
}

func pct(k, n int) int {
	if n <= 0 {
		return 0
	}
	return int(math.Round(100 * float64(k) / float64(n)))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
