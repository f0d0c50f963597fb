package runstore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
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
	// Dir is the run folder. Prepare stores it relative to the
	// matrix's folder, so a store can be moved or served as a whole.
	Dir string `json:"dir"`
	// Report is the run's report.html relative to the matrix's folder;
	// Prepare fills it in.
	Report string `json:"report,omitempty"`
	// Command re-runs this play alone.
	Command string `json:"command,omitempty"`
}

// PlayOf reads a play from its run folder's record.
func PlayOf(dir string, rec Record) MatrixPlay {
	return MatrixPlay{Seed: rec.Meta.Seed, Verdict: checker.Verdict(ShownVerdict(rec.Result.Verdict)),
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

	// The tally, which Tally computes from Plays.
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

// Prepare readies m to be written into dir, the suite's folder (usually
// the store): it makes each play's folder relative to dir, fills in its
// report, tallies each cell and appends the names only cells mention.
func (m *Matrix) Prepare(dir string) error {
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
				return fmt.Errorf("runstore: matrix cell %s/%s: run folder %s and matrix folder %s must both be absolute or both relative", c.Scenario, c.Lock, p.Dir, dir)
			}
			if p.Dir != "" && filepath.IsAbs(p.Dir) {
				rel, err := filepath.Rel(dir, p.Dir)
				if err != nil {
					return fmt.Errorf("runstore: matrix cell %s/%s: %w", c.Scenario, c.Lock, err)
				}
				p.Dir = filepath.ToSlash(rel)
			}
			if p.Dir != "" {
				p.Report = p.Dir + "/" + ReportFile
			}
			p.Verdict = checker.Verdict(ShownVerdict(p.Verdict))
		}
		c.Tally()
	}
	m.Scenarios, m.Locks, m.Families = Union(m.Scenarios, scen), Union(m.Locks, locks), Union(m.Families, fams)
	return nil
}

// SaveMatrix writes m into dir as matrix.json and page, the matrix for
// people, as matrix.html; dir is made if missing and must be private.
func SaveMatrix(dir string, m Matrix, page []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("runstore: writing the matrix: %w", err)
	}
	if err := checkPrivate(dir, true); err != nil {
		return fmt.Errorf("runstore: writing the matrix: %w", err)
	}
	return errors.Join(writeJSON(dir, MatrixJSON, m), WriteFile(dir, MatrixFile, page))
}

// ReadMatrix reads dir/matrix.json.
func ReadMatrix(dir string) (Matrix, error) {
	var m Matrix
	err := readJSON(dir, MatrixJSON, &m)
	return m, err
}

// Union merges name lists, keeping the first list's order and appending new
// names in natural order.
func Union(first, more []string) []string {
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
