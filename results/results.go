package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
)

// Meta is what a run's report header needs to say what was run and how to
// run it again.
type Meta struct {
	Scenario    string   `json:"scenario"`
	Description string   `json:"description,omitempty"`
	Lock        string   `json:"lock"`
	Seed        int64    `json:"seed"`
	Nodes       []string `json:"nodes,omitempty"`
	Clients     []string `json:"clients,omitempty"`
	// TTL is the lock's time to live.
	TTL time.Duration `json:"ttl_ns"`
	// Started is the wall time the run started, for display only: event
	// times come from the harness's monotonic clock.
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	// Expect is the scenario's expectation of this play: "violation",
	// "safe" or "any", or its two answers apart, "lock violation, resource
	// safe" (see Expectation).
	Expect string `json:"expect,omitempty"`
	// Command re-runs the scenario exactly, e.g.
	// "splitbrain run clock-jump --seed 42".
	Command string `json:"command,omitempty"`
	Backend string `json:"backend,omitempty"`
	// Belief says how the lock under test tells its user how long the
	// lock is theirs — where a belief interval ends (P1) — since locks
	// differ: a validity deadline, a TTL from the grant, until release.
	Belief string `json:"belief,omitempty"`
	// Shrunk points to the smallest scenario `splitbrain shrink` found
	// that still violates what this run violated; nil until then.
	Shrunk *Shrunk `json:"shrunk,omitempty"`
}

// Shrunk is what a shrink of a run found, as the run's report links it.
type Shrunk struct {
	// Scenario is the shrunk scenario file and Report the report of a run
	// of it, as slash paths relative to the run folder; Report is empty
	// when no run of the file violated.
	Scenario string `json:"scenario"`
	Report   string `json:"report,omitempty"`
	// Summary says what it was shrunk to and how often it reproduces.
	Summary string `json:"summary"`
}

// Record is the content of result.json.
type Record struct {
	Meta Meta `json:"meta"`
	// Result is the checker's result as a summary: each key's counts are
	// there, its beliefs and attempts are not (they are derived from the
	// history again when needed; see Windows). A result.json written
	// before they were left out reads as well, with them.
	Result checker.Result `json:"result"`
	// AsExpected says whether the verdict met Meta.Expect.
	AsExpected bool `json:"as_expected"`
	// Files lists the run's files by role (history, report, porcupine,
	// log:<node>), as slash paths relative to the run folder.
	Files map[string]string `json:"files"`
	// Windows explain the listed violations of P1 and P2: the two beliefs
	// and the history's events around each.
	Windows []Window `json:"windows,omitempty"`
}

// Write stores a run's verdict in dir: result.json, report.html and, when
// the result is Invalid, porcupine.html with porcupine's view of the failing
// window. When dir is a run folder of a store (made by NewRunDir), the
// store's index.html is regenerated too. events is the run's history (for the report's tooltips; it may be
// nil). A failed visualization does not stop the report from being written;
// its error is returned with the others.
func Write(dir string, meta Meta, events []history.Event, res checker.Result) error {
	err := WriteRun(dir, meta, events, res)
	// A run folder made by NewRunDir sits in a store whose index lists it;
	// refresh the index so the new verdict shows at once.
	if store, ok := storeOf(dir); ok {
		err = errors.Join(err, WriteIndex(store))
	}
	return err
}

// WriteRun is Write without the store's index, for a caller that writes
// many runs into one store and refreshes its index itself (a suite): the
// index lists every run of the store, and rebuilding it after each of
// thousands of plays cost more than the plays' own reports.
func WriteRun(dir string, meta Meta, events []history.Event, res checker.Result) error {
	var errs []error
	hasPorcupine := false
	if res.Verdict == checker.Invalid && res.HasVisualization() {
		if err := writeAtomic(dir, PorcupineFile, res.WriteVisualization); err != nil {
			errs = append(errs, err)
		} else {
			hasPorcupine = true
		}
	}
	if !hasPorcupine {
		// A re-check that no longer fails must not leave an old
		// visualization next to the new verdict.
		if err := os.Remove(filepath.Join(dir, PorcupineFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("results: %w", err))
		}
	}

	rec := Record{Meta: meta, Result: res, AsExpected: checker.Met(meta.Expect, res),
		Files: map[string]string{"history": HistoryFile, "report": ReportFile}}
	if hasPorcupine {
		rec.Files["porcupine"] = PorcupineFile
	}
	if _, err := os.Stat(filepath.Join(dir, HistoryFile)); err != nil {
		delete(rec.Files, "history")
	}
	for _, log := range nodeLogs(dir) {
		rec.Files["log:"+strings.TrimSuffix(filepath.Base(log), ".log")] = log
	}

	var page bytes.Buffer
	if err := renderReport(&page, dir, rec, events); err != nil {
		errs = append(errs, err)
	} else if err := writeFile(dir, ReportFile, page.Bytes()); err != nil {
		errs = append(errs, err)
	}

	sum := rec
	sum.Result = summary(res)
	sum.Windows = windows(res, events)
	if err := writeJSON(dir, ResultFile, sum); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ReadRecord reads a run's result.json.
func ReadRecord(dir string) (Record, error) {
	var rec Record
	err := readJSON(dir, ResultFile, &rec)
	return rec, err
}

// ReadMeta reads what a run's result.json says about the run, and nothing
// else: a result.json written before it became a summary can be hundreds
// of megabytes of beliefs.
func ReadMeta(dir string) (Meta, error) {
	var rec struct {
		Meta Meta `json:"meta"`
	}
	path := filepath.Join(dir, ResultFile)
	f, err := os.Open(path)
	if err != nil {
		return Meta{}, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	if err := json.NewDecoder(f).Decode(&rec); err != nil {
		return Meta{}, fmt.Errorf("results: %s: %w", path, err)
	}
	return rec.Meta, nil
}
