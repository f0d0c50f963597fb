package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"splitbrain/runstore"
)

// checkStore makes sure runs can be written under dir before anything
// starts: a store that is a file, or a folder that cannot be written, is a
// bad --store (exit 254), not an internal error found after a cluster came
// up. It creates nothing: a store that does not exist yet is checked
// through the nearest folder above it, where the first run will make it.
//
// A store that exists must be private: see runstore.CheckStore; the
// folders of scenarios are checked too, so that a link planted in the
// store is refused here rather than found when the run starts.
func checkStore(dir string, scenarios ...string) error {
	if err := runstore.CheckStore(dir, scenarios...); err != nil {
		return &usageError{fmt.Sprintf("--store %q: %v", dir, strings.TrimPrefix(err.Error(), runstore.ErrSharedStore.Error()+": "))}
	}
	at := dir
	for {
		fi, err := os.Stat(at)
		if err == nil && !fi.IsDir() {
			if at == dir {
				return &usageError{fmt.Sprintf("--store %q is a file, not a folder; give a folder for the runs (default: store)", dir)}
			}
			return &usageError{fmt.Sprintf("--store %q: cannot make the folder: %s is a file; give a folder you can write", dir, at)}
		}
		if err == nil {
			break
		}
		// A path through a file fails with ENOTDIR: climb to the file.
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return &usageError{fmt.Sprintf("--store %q: %v; give a folder you can write", dir, err)}
		}
		up := filepath.Dir(at)
		if up == at {
			break
		}
		at = up
	}
	f, err := os.CreateTemp(at, ".splitbrain-write-test-*")
	if err != nil {
		return &usageError{fmt.Sprintf("--store %q: cannot write in %s: %v; give a folder you can write", dir, at, err)}
	}
	name := f.Name()
	_ = f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("--store %q: removing the write test %s: %w", dir, name, err)
	}
	return nil
}
