package results

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
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

// MatrixCell is one run of a suite: a scenario under one lock variant.
type MatrixCell struct {
	Scenario   string          `json:"scenario"`
	Lock       string          `json:"lock"`
	Verdict    checker.Verdict `json:"verdict"`
	Expect     string          `json:"expect,omitempty"`
	AsExpected bool            `json:"as_expected"`
	Seed       int64           `json:"seed"`
	Reason     string          `json:"reason,omitempty"`
	// Dir is the run folder. WriteMatrix stores it relative to the
	// matrix's folder, so a store can be moved or served as a whole.
	Dir string `json:"dir"`
	// Report is the run's report.html relative to the matrix's folder;
	// WriteMatrix fills it in.
	Report string `json:"report,omitempty"`
}

// Matrix is a suite's safety matrix: rows are scenarios, columns lock
// variants, each cell the verdict of a run with a link to its report.
type Matrix struct {
	Title   string    `json:"title,omitempty"`
	Command string    `json:"command,omitempty"`
	Seed    int64     `json:"seed"`
	Started time.Time `json:"started"`
	// Scenarios and Locks order the rows and columns; names that only
	// cells mention are appended in natural order.
	Scenarios []string     `json:"scenarios"`
	Locks     []string     `json:"locks"`
	Cells     []MatrixCell `json:"cells"`
}

// WriteMatrix writes matrix.html and matrix.json into dir, the suite's
// folder (usually the store). A (scenario, lock) pair with several runs
// shows each.
func WriteMatrix(dir string, m Matrix) error {
	var scen, locks []string
	for i := range m.Cells {
		c := &m.Cells[i]
		scen, locks = append(scen, c.Scenario), append(locks, c.Lock)
		if c.Dir != "" && filepath.IsAbs(c.Dir) != filepath.IsAbs(dir) {
			return fmt.Errorf("results: matrix cell %s/%s: run folder %s and matrix folder %s must both be absolute or both relative", c.Scenario, c.Lock, c.Dir, dir)
		}
		if c.Dir != "" {
			rel, err := filepath.Rel(dir, c.Dir)
			if err != nil {
				return fmt.Errorf("results: matrix cell %s/%s: %w", c.Scenario, c.Lock, err)
			}
			c.Dir = filepath.ToSlash(rel)
			c.Report = c.Dir + "/" + ReportFile
		}
		c.Verdict = checker.Verdict(shownVerdict(c.Verdict))
	}
	m.Scenarios, m.Locks = union(m.Scenarios, scen), union(m.Locks, locks)

	var page bytes.Buffer
	if err := renderMatrix(&page, m); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
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
	CSS     template.CSS
	JS      template.JS
	M       Matrix
	Started string
	Rows    []matrixRow
	Met     int
	Total   int
}

type matrixRow struct {
	Scenario string
	Expect   string
	Cells    [][]matrixCellView
}

type matrixCellView struct {
	MatrixCell
	Href  string
	Label string
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
	for _, s := range m.Scenarios {
		row := matrixRow{Scenario: s, Cells: make([][]matrixCellView, len(m.Locks))}
		for _, c := range m.Cells {
			if c.Scenario != s {
				continue
			}
			if row.Expect == "" {
				row.Expect = c.Expect
			}
			for j, l := range m.Locks {
				if c.Lock != l {
					continue
				}
				cv := matrixCellView{MatrixCell: c, Label: string(c.Verdict)}
				if c.Report != "" {
					cv.Href = relHref(c.Report)
				}
				row.Cells[j] = append(row.Cells[j], cv)
				v.Total++
				if c.AsExpected {
					v.Met++
				}
			}
		}
		v.Rows = append(v.Rows, row)
	}
	if err := matrixTemplate.Execute(w, v); err != nil {
		return fmt.Errorf("results: rendering the matrix: %w", err)
	}
	return nil
}
