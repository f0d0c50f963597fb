package runstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/internal/regular"
	"splitbrain/internal/shell"
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
	// Slowed says how much slower than written the story was played, and
	// why: a lock that cannot be asked for its TTL (spec.Scenario.Slowed).
	Slowed string `json:"slowed,omitempty"`
	// Library names the library and client a lock driver runs, with
	// their versions, as its ready said them ("symfony/lock 5.4.53,
	// phpredis 5.3.7"): a finding is about a version. Empty for a lock
	// inside the harness.
	Library string `json:"library,omitempty"`
	// ReplayOf is the run folder (its name, in the same store) of the
	// play this run plays again: a suite replays, once and alone, a play
	// that missed its expectation while the harness or a driver stood
	// still (a pause no story scripts), and the replay decides the cell.
	// Empty for a first play.
	ReplayOf string `json:"replay_of,omitempty"`
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

// WritePorcupine writes porcupine.html, porcupine's view of the failing
// window, into the run folder dir when res is Invalid and has one, and
// says whether it did. Otherwise (or when that write failed) it removes
// an old one: a re-check that no longer fails must not leave an old
// visualization next to the new verdict.
func WritePorcupine(dir string, res checker.Result) (bool, error) {
	var errs []error
	if res.Verdict == checker.Invalid && res.HasVisualization() {
		err := writeAtomic(dir, PorcupineFile, res.WriteVisualization)
		if err == nil {
			return true, nil
		}
		errs = append(errs, err)
	}
	if err := os.Remove(filepath.Join(dir, PorcupineFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("runstore: %w", err))
	}
	return false, errors.Join(errs...)
}

// NewRecord is the record of a run judged res in the run folder dir: its
// files by role are those the folder holds (history, node logs), the
// report and, when porcupine is set, porcupine.html.
func NewRecord(dir string, meta Meta, res checker.Result, porcupine bool) Record {
	rec := Record{Meta: meta, Result: res, AsExpected: checker.Met(meta.Expect, res),
		Files: map[string]string{"history": HistoryFile, "report": ReportFile}}
	if porcupine {
		rec.Files["porcupine"] = PorcupineFile
	}
	if _, err := os.Stat(filepath.Join(dir, HistoryFile)); err != nil {
		delete(rec.Files, "history")
	}
	for _, log := range NodeLogs(dir) {
		rec.Files["log:"+strings.TrimSuffix(filepath.Base(log), ".log")] = log
	}
	return rec
}

// WriteRecord writes rec into the run folder dir as result.json: a
// summary of its result, with the windows that explain its violations
// drawn from events (the run's history; it may be nil).
func WriteRecord(dir string, rec Record, events []history.Event) error {
	sum := rec
	sum.Result = summary(rec.Result)
	sum.Windows = windows(rec.Result, events)
	return writeJSON(dir, ResultFile, sum)
}

// LogsDir is the folder of a run's node logs, logs/<node>.log.
const LogsDir = "logs"

// NodeLogs lists logs/<node>.log files of a run folder in natural order of
// the node names, as slash paths relative to the folder.
func NodeLogs(dir string) []string {
	entries, err := os.ReadDir(filepath.Join(dir, LogsDir))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".log") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	checker.SortNatural(names)
	for i, n := range names {
		names[i] = LogsDir + "/" + n
	}
	return names
}

// ShownVerdict maps anything a page cannot call valid or invalid to
// unknown: it is never shown as a pass.
func ShownVerdict(v checker.Verdict) string {
	if v != checker.Valid && v != checker.Invalid {
		return string(checker.Unknown)
	}
	return string(v)
}

// ReadRecord reads a run's result.json.
func ReadRecord(dir string) (Record, error) {
	var rec Record
	err := readJSON(dir, ResultFile, &rec)
	rec.Meta.Command = rec.Meta.checkedCommand()
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
	f, _, err := regular.Open(path)
	if err != nil {
		return Meta{}, fmt.Errorf("runstore: %w", err)
	}
	defer f.Close()
	if err := json.NewDecoder(f).Decode(&rec); err != nil {
		return Meta{}, fmt.Errorf("runstore: %s: %w", path, err)
	}
	rec.Meta.Command = rec.Meta.checkedCommand()
	return rec.Meta, nil
}

// checkedCommand is the re-run command of a meta read from a run folder,
// which anyone who could write there may have crafted, and which reports,
// the index and the matrix show to be pasted into a shell: the stored one
// if it reads back as a splitbrain command this harness writes (quoted by
// package shell, no control character), else one derived from the meta's
// own fields — "" when those hold a control character.
func (m Meta) checkedCommand() string {
	if words, ok := shell.Split(m.Command); ok && len(words) >= 2 && words[0] == "splitbrain" &&
		slices.Contains([]string{"run", "suite", "check", "matrix", "shrink"}, words[1]) {
		return shell.Command(words...)
	}
	if m.Scenario == "" {
		return ""
	}
	parts := []string{"splitbrain", "run", m.Scenario, "--seed", strconv.FormatInt(m.Seed, 10)}
	if m.Lock != "" {
		parts = append(parts, "--lock", m.Lock)
	}
	if m.Backend != "" && m.Backend != "local" {
		parts = append(parts, "--backend", m.Backend)
	}
	for _, p := range parts {
		if strings.IndexFunc(p, unicode.IsControl) >= 0 {
			return ""
		}
	}
	return shell.Command(parts...)
}
