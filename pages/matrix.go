package pages

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"

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
}

type matrixGroup struct {
	Family string
	Rows   []matrixRow
}

type matrixRow struct {
	Scenario string
	Cells    []matrixCellView
}

type matrixCellView struct {
	runstore.MatrixCell
	Has      bool
	Href     string
	Title    string
	Class    string
	LockPct  int // share of plays that broke the lock's promise, 0..100
	ResPct   int // share of plays with a resource that harmed it; -1 without one
	Expected bool
	LockTxt  string
	ResTxt   string
}

func renderMatrix(w io.Writer, m runstore.Matrix) error {
	css, js, err := pageAssets([]string{"base.css", "matrix.css"}, nil)
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
	for _, f := range append(slices.Clone(m.Families), "") {
		g := matrixGroup{Family: f}
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
	cv.LockPct = pct(c.LockBroken, c.Runs-c.Unknown)
	cv.LockTxt = fmt.Sprintf("%d/%d", c.LockBroken, c.Runs)
	cv.ResPct = -1
	if c.ResourceRuns > 0 {
		cv.ResPct = pct(c.ResourceHarmed, c.ResourceRuns)
		cv.ResTxt = fmt.Sprintf("%d/%d", c.ResourceHarmed, c.ResourceRuns)
	}
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
	cv.Title = fmt.Sprintf("%d/%d invalid (95%% interval %.0f–%.0f %%); lock's promise broken in %s, resource harmed in %s; expected %s",
		c.Invalid, c.Runs, 100*c.Interval[0], 100*c.Interval[1], cv.LockTxt, orNone(cv.ResTxt), orNone(c.Expect))
	return cv
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
