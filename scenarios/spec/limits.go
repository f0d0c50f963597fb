package spec

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"splitbrain/internal/regular"
)

// Limits of a scenario file. A scenario is written by hand: the largest
// built-in is under 2 KB and 20 steps. The limits keep a wrong path
// (/dev/zero), a generated file gone wrong or a hostile one from taking the
// machine's memory or keeping a run going for years; each is refused at
// once with a message naming it.
const (
	// MaxFileSize bounds a scenario file: its YAML is parsed whole, at
	// some 200 bytes of memory per byte of steps.
	MaxFileSize = 256 << 10
	// MaxSteps bounds the steps of one scenario.
	MaxSteps = 10_000
	// MaxDescription bounds the description, which result.json and every
	// report carry.
	MaxDescription = 4 << 10
	// MaxName bounds the name, which names the run folders.
	MaxName = 64
	// MaxKey bounds a lock key, which every line of the history, every
	// command to the nodes and the report repeat: a key of 250 KB made
	// 850 MB of files in a 2 s run.
	MaxKey = 128
	// MaxDuration bounds every duration a scenario or --time gives (a
	// wait, a fault's for, a clock jump, a workload's duration, a TTL):
	// a day is longer than any run is meant to be.
	MaxDuration = 24 * time.Hour
)

// maxDurationText is MaxDuration as people write it.
var maxDurationText = strings.TrimSuffix(MaxDuration.String(), "0m0s")

// CheckDuration says why d cannot be a duration of a run, or nil.
func CheckDuration(d time.Duration) error {
	switch {
	case d > MaxDuration:
		return fmt.Errorf("want at most %s", maxDurationText)
	case d < -MaxDuration:
		// A clock jump back.
		return fmt.Errorf("want at most %s either way", maxDurationText)
	}
	return nil
}

// readFile reads the scenario file at path: a regular file of at most
// MaxFileSize bytes, opened without blocking so that a FIFO is refused
// rather than waited on.
func readFile(path string) ([]byte, error) {
	f, fi, err := regular.Open(path)
	if err != nil {
		if nf := (*regular.NotFileError)(nil); errors.As(err, &nf) {
			return nil, &Error{File: path, Msg: fmt.Sprintf("a %s, not a regular file; give a scenario .yaml file or a built-in name", nf.Kind)}
		}
		return nil, fmt.Errorf("scenario: %w", err)
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return &Error{File: path, Msg: fmt.Sprintf("%d bytes, more than the %d KiB a scenario file may have", size, MaxFileSize>>10)}
	}
	if fi.Size() > MaxFileSize {
		return nil, tooLarge(fi.Size())
	}
	// The file may grow after the stat: read one byte past the limit to
	// tell.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("scenario: reading %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge(int64(len(data)))
	}
	return data, nil
}
