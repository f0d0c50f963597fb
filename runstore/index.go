package runstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"splitbrain/checker"
)

// Files of the store's index.
const (
	IndexFile = "index.html"
	// IndexJSON is the index for machines; pages.WriteIndex also keeps it as a
	// cache, so it re-reads only the result.json files that changed.
	IndexJSON = "index.json"
)

// VerdictNone marks a run folder without a result.json: a run still going,
// or one whose harness was killed before it could judge.
const VerdictNone = "none"

// IndexEntry is one run of the store's index.
type IndexEntry struct {
	Scenario string `json:"scenario"`
	// Dir is the run folder relative to the store, as a slash path.
	Dir        string        `json:"dir"`
	Started    time.Time     `json:"started"`
	Verdict    string        `json:"verdict"`
	Reason     string        `json:"reason,omitempty"`
	Expect     string        `json:"expect,omitempty"`
	AsExpected bool          `json:"as_expected"`
	Lock       string        `json:"lock,omitempty"`
	Seed       int64         `json:"seed"`
	Duration   time.Duration `json:"duration_ns"`
	Violations int           `json:"violations"`
	Command    string        `json:"command,omitempty"`
	HasReport  bool          `json:"has_report"`
	HasHistory bool          `json:"has_history"`
	// ResultSize and ResultModTime identify the result.json the entry was
	// read from.
	ResultSize    int64     `json:"result_size,omitempty"`
	ResultModTime time.Time `json:"result_mtime"`
}

// Index lists a store's runs, newest first.
type Index struct {
	Runs []IndexEntry `json:"runs"`
	// Matrices are the suites' matrix.html files, relative to the store.
	Matrices []string `json:"matrices,omitempty"`
}

// StoreOf finds the store a run folder belongs to: NewRunDir puts runs at
// store/<scenario>/<stamp> and keeps a latest link in both parents.
func StoreOf(dir string) (string, bool) {
	scenarioDir := filepath.Dir(filepath.Clean(dir))
	store := filepath.Dir(scenarioDir)
	for _, link := range []string{filepath.Join(scenarioDir, LatestLink), filepath.Join(store, LatestLink)} {
		fi, err := os.Lstat(link)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return "", false
		}
	}
	return store, true
}

// BuildIndex scans store/<scenario>/<run> folders. Entries of index.json
// whose result.json is unchanged are reused rather than re-read: a
// long run's result.json can be large. The store is read through an
// os.Root: a symlink that leads out of it is not followed.
func BuildIndex(store string) (Index, error) {
	cached := map[string]IndexEntry{}
	if old, err := ReadIndex(store); err == nil {
		for _, e := range old.Runs {
			cached[e.Dir] = e
		}
	}
	root, err := os.OpenRoot(store)
	if err != nil {
		return Index{}, fmt.Errorf("runstore: reading the store: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	scenarios, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return Index{}, fmt.Errorf("runstore: reading the store: %w", err)
	}
	var idx Index
	for _, sd := range scenarios {
		if !sd.IsDir() || strings.HasPrefix(sd.Name(), ".") {
			continue
		}
		runs, err := fs.ReadDir(fsys, sd.Name())
		if err != nil {
			return Index{}, fmt.Errorf("runstore: reading the store: %w", err)
		}
		for _, rd := range runs {
			if !rd.IsDir() || strings.HasPrefix(rd.Name(), ".") {
				continue
			}
			if e, ok := indexEntry(fsys, sd.Name(), rd.Name(), cached); ok {
				idx.Runs = append(idx.Runs, e)
			}
		}
	}
	sort.SliceStable(idx.Runs, func(i, j int) bool {
		a, b := idx.Runs[i], idx.Runs[j]
		if !a.Started.Equal(b.Started) {
			return a.Started.After(b.Started)
		}
		return a.Dir > b.Dir
	})
	idx.Matrices = findMatrices(fsys)
	return idx, nil
}

// indexEntry reads one run folder; ok is false for folders that are not
// runs (no result and no history).
func indexEntry(fsys fs.FS, scenario, run string, cached map[string]IndexEntry) (IndexEntry, bool) {
	dir := scenario + "/" + run
	has := func(name string) bool {
		_, err := fs.Stat(fsys, dir+"/"+name)
		return err == nil
	}
	fi, err := fs.Stat(fsys, dir+"/"+ResultFile)
	if err != nil {
		if !has(HistoryFile) {
			return IndexEntry{}, false
		}
		return IndexEntry{Scenario: scenario, Dir: dir, Started: stampTime(run), Verdict: VerdictNone,
			Reason:     "no result.json: the run is still going, or its harness was stopped before it could judge",
			HasHistory: true, HasReport: has(ReportFile)}, true
	}
	if e, ok := cached[dir]; ok && e.ResultSize == fi.Size() && e.ResultModTime.Equal(fi.ModTime()) {
		return e, true
	}
	e := IndexEntry{Scenario: scenario, Dir: dir, Started: stampTime(run), ResultSize: fi.Size(), ResultModTime: fi.ModTime(),
		HasHistory: has(HistoryFile), HasReport: has(ReportFile)}
	var sum struct {
		Meta   Meta `json:"meta"`
		Result struct {
			Verdict        checker.Verdict `json:"verdict"`
			Reason         string          `json:"reason"`
			ViolationCount int             `json:"violation_count"`
		} `json:"result"`
		AsExpected bool `json:"as_expected"`
	}
	b, err := fs.ReadFile(fsys, dir+"/"+ResultFile)
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil {
		e.Verdict, e.Reason = string(checker.Unknown), "result.json cannot be read: "+err.Error()
		return e, true
	}
	if sum.Meta.Scenario != "" {
		e.Scenario = sum.Meta.Scenario
	}
	if !sum.Meta.Started.IsZero() {
		e.Started = sum.Meta.Started
	}
	e.Verdict = ShownVerdict(sum.Result.Verdict)
	e.Reason = sum.Result.Reason
	e.Expect = sum.Meta.Expect
	e.AsExpected = sum.AsExpected
	e.Lock = sum.Meta.Lock
	e.Seed = sum.Meta.Seed
	e.Duration = sum.Meta.Duration
	e.Violations = sum.Result.ViolationCount
	e.Command = sum.Meta.Command
	return e, true
}

// stampTime reads the start time back from a run folder's name.
func stampTime(name string) time.Time {
	if i := strings.LastIndex(name, "-"); i > 0 {
		name = name[:i]
	}
	t, err := time.Parse(stampLayout, name)
	if err != nil {
		return time.Time{}
	}
	return t
}

// findMatrices looks for suites' matrix.html, and sweeps' plots
// (sweep-STORY.html), in the store and two levels below it.
func findMatrices(fsys fs.FS) []string {
	var out []string
	sweeps, _ := SweepFiles("*")
	for _, pattern := range []string{MatrixFile, "*/" + MatrixFile, "*/*/" + MatrixFile, sweeps, "*/" + sweeps, "*/*/" + sweeps} {
		matches, _ := fs.Glob(fsys, pattern)
		out = append(out, matches...)
	}
	return out
}

// ReadIndex reads a store's index.json.
func ReadIndex(store string) (Index, error) {
	var idx Index
	err := readJSON(store, IndexJSON, &idx)
	return idx, err
}

// SaveIndex writes store/index.json and page, the index for people, as
// store/index.html.
func SaveIndex(store string, idx Index, page []byte) error {
	return errors.Join(writeJSON(store, IndexJSON, idx), WriteFile(store, IndexFile, page))
}
