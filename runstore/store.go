// Package runstore is the on-disk store of runs,
// store/<scenario>/<timestamp>/: making run folders, writing and reading a
// run's record (result.json), the index of a store's runs and a suite's
// matrix as data, and refusing a store another user could change. Every
// file is written atomically. The pages drawn from them are package
// pages'.
package runstore

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Files of a run directory.
const (
	HistoryFile   = "history.jsonl"
	ResultFile    = "result.json"
	ReportFile    = "report.html"
	PorcupineFile = "porcupine.html"
	// LatestLink is the symlink, in the store and in each scenario folder,
	// to the newest run.
	LatestLink = "latest"
)

// stampLayout sorts lexically in time order, like Jepsen's run folders, and
// is safe in file names on every OS (no colons).
const stampLayout = "20060102T150405.000Z"

// NewRunDir creates a fresh run directory store/<scenario>/<timestamp> for a
// run started at now and points store/latest and store/<scenario>/latest at
// it. Two runs in the same millisecond get "-2", "-3", ... suffixes.
func NewRunDir(store, scenario string, now time.Time) (string, error) {
	if err := checkScenarioName(scenario); err != nil {
		return "", err
	}
	// The folders above the store are the user's choice; the store and
	// its scenario folders are made (or checked) one by one, so that none
	// is another user's or a link of one.
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(store)), 0o755); err != nil {
		return "", fmt.Errorf("runstore: creating run folder: %w", err)
	}
	if err := mkdirPrivate(store, true); err != nil {
		return "", err
	}
	parent := filepath.Join(store, scenario)
	if err := mkdirPrivate(parent, false); err != nil {
		return "", err
	}
	stamp := now.UTC().Format(stampLayout)
	for i := 1; i <= 1000; i++ {
		name := stamp
		if i > 1 {
			name = fmt.Sprintf("%s-%d", stamp, i)
		}
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("runstore: creating run folder: %w", err)
		}
		if err := relink(filepath.Join(store, LatestLink), filepath.Join(scenario, name)); err != nil {
			return "", err
		}
		if err := relink(filepath.Join(parent, LatestLink), name); err != nil {
			return "", err
		}
		return dir, nil
	}
	return "", fmt.Errorf("runstore: no free run folder for %s at %s", scenario, stamp)
}

// checkScenarioName refuses names that would escape the store or collide
// with its own entries; it does not rewrite them, so a run is always found
// under the name its scenario has.
func checkScenarioName(s string) error {
	switch {
	case s == "":
		return errors.New("runstore: empty scenario name")
	case s == "." || s == ".." || s == LatestLink:
		return fmt.Errorf("runstore: %q cannot be a scenario name", s)
	case strings.ContainsAny(s, `/\`+"\x00"):
		return fmt.Errorf("runstore: scenario name %q contains a path separator", s)
	case strings.HasPrefix(s, "."):
		return fmt.Errorf("runstore: scenario name %q starts with a dot", s)
	}
	return nil
}

// relink points link at target (relative to the link's folder) by renaming
// a fresh symlink over it, so readers never see the link missing.
func relink(link, target string) error {
	tmp := filepath.Join(filepath.Dir(link), "."+filepath.Base(link)+".tmp-"+randomSuffix())
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("runstore: updating %s: %w", link, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("runstore: updating %s: %w", link, err)
	}
	return nil
}

// Latest is the newest run directory of the store (or of one scenario when
// store is a scenario folder).
func Latest(store string) (string, error) {
	target, err := os.Readlink(filepath.Join(store, LatestLink))
	if err != nil {
		return "", fmt.Errorf("runstore: %w", err)
	}
	return filepath.Join(store, target), nil
}

// writeAtomic writes name in dir through a temporary file renamed into
// place: a reader (or a crash) never sees a half-written result.
func writeAtomic(dir, name string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("runstore: writing %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("runstore: writing %s: %w", name, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("runstore: writing %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("runstore: writing %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("runstore: writing %s: %w", name, err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("runstore: writing %s: %w", name, err)
	}
	return nil
}

// writeJSON writes v to dir/name as indented JSON, atomically.
func writeJSON(dir, name string, v any) error {
	return writeAtomic(dir, name, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// WriteFile writes b to dir/name, atomically.
func WriteFile(dir, name string, b []byte) error {
	return writeAtomic(dir, name, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// readJSON decodes dir/name into v.
func readJSON(dir, name string, v any) error {
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("runstore: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("runstore: %s: %w", path, err)
	}
	return nil
}

func randomSuffix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}
