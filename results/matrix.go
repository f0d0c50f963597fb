package results

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"splitbrain/checker"
)

// Files of a suite's safety matrix.
const (
	MatrixFile = "matrix.html"
	MatrixJSON = "matrix.json"
)

// MatrixPlay is one play of a cell: one run folder.
type MatrixPlay struct {
	Seed       int64           `json:"seed"`
	Verdict    checker.Verdict `json:"verdict"`
	Answers    checker.Answers `json:"answers"`
	AsExpected bool            `json:"as_expected"`
	Reason     string          `json:"reason,omitempty"`
	// Dir is the run folder. WriteMatrix stores it relative to the
	// matrix's folder, so a store can be moved or served as a whole.
	Dir string `json:"dir"`
	// Report is the run's report.html relative to the matrix's folder;
	// WriteMatrix fills it in.
	Report string `json:"report,omitempty"`
	// Command re-runs this play alone.
	Command string `json:"command,omitempty"`
}

// PlayOf reads a play from its run folder's record.
func PlayOf(dir string, rec Record) MatrixPlay {
	return MatrixPlay{Seed: rec.Meta.Seed, Verdict: checker.Verdict(shownVerdict(rec.Result.Verdict)),
		Answers: checker.AnswersOf(rec.Result), AsExpected: rec.AsExpected, Reason: rec.Result.Reason,
		Dir: dir, Command: rec.Meta.Command}
}

// MatrixCell is a story against one lock: its plays and their tally, or
// n/a and why.
type MatrixCell struct {
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	// Family is the story's fault family, the row group.
	Family string `json:"family,omitempty"`
	// Expect is the cell's expectation (Expectation's form).
	Expect string `json:"expect,omitempty"`
	// NA says why the story does not fit the lock; such a cell has no
	// plays.
	NA    string       `json:"na,omitempty"`
	Plays []MatrixPlay `json:"plays,omitempty"`

	// The tally, which WriteMatrix computes from Plays.
	Runs    int `json:"runs"`
	Invalid int `json:"invalid"`
	Unknown int `json:"unknown"`
	// LockBroken counts plays whose lock broke its promise (P1 invalid);
	// ResourceHarmed those whose resource checks failed, of
	// ResourceRuns plays that had a resource.
	LockBroken     int `json:"lock_broken"`
	ResourceHarmed int `json:"resource_harmed"`
	ResourceRuns   int `json:"resource_runs"`
	// Met counts plays that met the expectation.
	Met int `json:"met"`
	// Rate is Invalid over the plays with a verdict (valid or invalid),
	// and Interval its 95 % Wilson score interval.
	Rate     float64    `json:"rate"`
	Interval [2]float64 `json:"interval_95"`
	// Flaky: the cell expects a verdict (not any), yet its plays
	// disagree — neither 0/N nor N/N invalid. A scripted story must be
	// deterministic; a flaky cell is a defect of the story or the harness.
	Flaky bool `json:"flaky,omitempty"`
	// Finding: an `expect: any` cell (a random schedule) that broke at
	// least once; Rate says how often.
	Finding bool `json:"finding,omitempty"`
	// FirstFailing is the report of the first invalid play (or, if none,
	// the first that missed its expectation), relative to the matrix.
	FirstFailing string `json:"first_failing,omitempty"`
	// FirstUnmet is the report of the first play that missed its
	// expectation: the one to open for a flaky cell.
	FirstUnmet string `json:"first_unmet,omitempty"`
}

// Matrix is a suite's safety matrix: rows are stories grouped by fault
// family, columns lock kinds, each cell how often that lock broke under
// that story.
type Matrix struct {
	Title   string `json:"title,omitempty"`
	Command string `json:"command,omitempty"`
	Seed    int64  `json:"seed"`
	// Seeds are the plays' seeds, run by run (Seeds[i] is run i's).
	Seeds   []int64   `json:"seeds,omitempty"`
	Runs    int       `json:"runs,omitempty"`
	Started time.Time `json:"started"`
	Wall    Duration  `json:"wall,omitempty"`
	// Partial says the suite was cut short (Ctrl-C) and why; its cells
	// hold the plays that ended.
	Partial string `json:"partial,omitempty"`
	// Families order the row groups; Scenarios and Locks order the rows
	// and columns. Names only cells mention are appended.
	Families  []string     `json:"families,omitempty"`
	Scenarios []string     `json:"scenarios"`
	Locks     []string     `json:"locks"`
	Cells     []MatrixCell `json:"cells"`
}

// Duration is a time.Duration that reads as "1m23s" in JSON.
type Duration time.Duration

// String is how pages show it: 4m32s, not a count of nanoseconds.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Tally fills in a cell's counts, rate, interval and flags from its plays.
func (c *MatrixCell) Tally() {
	c.Runs, c.Invalid, c.Unknown, c.LockBroken, c.ResourceHarmed, c.ResourceRuns, c.Met = len(c.Plays), 0, 0, 0, 0, 0, 0
	c.FirstFailing, c.FirstUnmet = "", ""
	for _, p := range c.Plays {
		switch p.Verdict {
		case checker.Invalid:
			c.Invalid++
			if c.FirstFailing == "" {
				c.FirstFailing = p.Report
			}
		case checker.Unknown:
			c.Unknown++
		}
		if p.Answers.Lock == checker.Invalid {
			c.LockBroken++
		}
		if p.Answers.Resource != "" {
			c.ResourceRuns++
			if p.Answers.Resource == checker.Invalid {
				c.ResourceHarmed++
			}
		}
		if p.AsExpected {
			c.Met++
		} else if c.FirstUnmet == "" {
			c.FirstUnmet = p.Report
		}
	}
	if c.FirstFailing == "" {
		c.FirstFailing = c.FirstUnmet
	}
	decided := c.Runs - c.Unknown
	c.Rate, c.Interval = 0, [2]float64{}
	if decided > 0 {
		c.Rate = float64(c.Invalid) / float64(decided)
		lo, hi := Wilson(c.Invalid, decided)
		c.Interval = [2]float64{lo, hi}
	}
	any := c.Expect == checker.ExpectAny || c.Expect == ""
	c.Flaky = !any && c.Invalid > 0 && c.Invalid < c.Runs
	c.Finding = any && c.Invalid > 0
}

// Wilson is the 95 % Wilson score interval of k successes in n trials:
// unlike the normal approximation it stays inside [0, 1] and says
// something at k = 0 or k = n (0/20 is [0, 0.16], not [0, 0]).
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return math.Max(0, mid-half), math.Min(1, mid+half)
}

// WriteMatrix writes matrix.html and matrix.json into dir, the suite's
// folder (usually the store), after making each play's folder relative to
// dir and tallying each cell.
func WriteMatrix(dir string, m Matrix) error {
	var scen, locks, fams []string
	for i := range m.Cells {
		c := &m.Cells[i]
		scen, locks = append(scen, c.Scenario), append(locks, c.Lock)
		if c.Family != "" {
			fams = append(fams, c.Family)
		}
		for j := range c.Plays {
			p := &c.Plays[j]
			if p.Dir != "" && filepath.IsAbs(p.Dir) != filepath.IsAbs(dir) {
				return fmt.Errorf("results: matrix cell %s/%s: run folder %s and matrix folder %s must both be absolute or both relative", c.Scenario, c.Lock, p.Dir, dir)
			}
			if p.Dir != "" && filepath.IsAbs(p.Dir) {
				rel, err := filepath.Rel(dir, p.Dir)
				if err != nil {
					return fmt.Errorf("results: matrix cell %s/%s: %w", c.Scenario, c.Lock, err)
				}
				p.Dir = filepath.ToSlash(rel)
			}
			if p.Dir != "" {
				p.Report = p.Dir + "/" + ReportFile
			}
			p.Verdict = checker.Verdict(shownVerdict(p.Verdict))
		}
		c.Tally()
	}
	m.Scenarios, m.Locks, m.Families = union(m.Scenarios, scen), union(m.Locks, locks), union(m.Families, fams)

	var page bytes.Buffer
	if err := renderMatrix(&page, m); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results: writing the matrix: %w", err)
	}
	if err := checkPrivate(dir, true); err != nil {
		return fmt.Errorf("results: writing the matrix: %w", err)
	}
	return errors.Join(writeJSON(dir, MatrixJSON, m), writeFile(dir, MatrixFile, page.Bytes()))
}

// ReadMatrix reads dir/matrix.json.
func ReadMatrix(dir string) (Matrix, error) {
	var m Matrix
	err := readJSON(dir, MatrixJSON, &m)
	return m, err
}

var matrixTemplate = parsePage("matrix.html.tmpl")

type matrixView struct {
	CSS      template.CSS
	JS       template.JS
	M        Matrix
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
	MatrixCell
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

func renderMatrix(w io.Writer, m Matrix) error {
	css, js, err := pageAssets([]string{"base.css", "matrix.css"}, nil)
	if err != nil {
		return err
	}
	v := matrixView{CSS: css, JS: js, M: m}
	if !m.Started.IsZero() {
		v.Started = m.Started.UTC().Format("2006-01-02 15:04:05 MST")
	}
	cells := map[[2]string]MatrixCell{}
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
		return fmt.Errorf("results: rendering the matrix: %w", err)
	}
	return nil
}

func cellView(c MatrixCell, ok bool, v *matrixView) matrixCellView {
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
