package main

import (
	"fmt"
	"os"
)

// checkStore makes sure runs can be written under dir before anything
// starts: a store that is a file, or a folder that cannot be written, is a
// bad --store (exit 254), not an internal error found after a cluster came
// up. It creates dir if missing, as the first run would.
func checkStore(dir string) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return &usageError{fmt.Sprintf("--store %q is a file, not a folder; give a folder for the runs (default: store)", dir)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &usageError{fmt.Sprintf("--store %q: cannot make the folder: %v; give a folder you can write", dir, err)}
	}
	f, err := os.CreateTemp(dir, ".splitbrain-write-test-*")
	if err != nil {
		return &usageError{fmt.Sprintf("--store %q: cannot write in the folder: %v; give a folder you can write", dir, err)}
	}
	name := f.Name()
	_ = f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("--store %q: removing the write test %s: %w", dir, name, err)
	}
	return nil
}
