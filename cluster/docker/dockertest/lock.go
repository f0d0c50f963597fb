// Package dockertest coordinates the tests that share this machine's one
// Docker engine, across the test processes of every package (go test runs
// several packages at once).
//
// Starting a cluster reaps every run in the engine whose harness is gone,
// whoever made it. Most tests only start runs, and may do so side by side:
// they hold the lock shared. A few plant runs of dead harnesses, or kill a
// harness, and check that their own Reap or their own next run removes
// them; a run another test started meanwhile would reap them first. Those
// hold the lock alone.
package dockertest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// lockFile is the one file every test process locks; flock locks are per
// open file, so two tests of one process exclude each other too.
func lockFile() string { return filepath.Join(os.TempDir(), "splitbrain-docker-tests.lock") }

// Shared holds the lock shared until t ends: for tests that start runs on
// the engine.
func Shared(t testing.TB) { hold(t, syscall.LOCK_SH) }

// Exclusive holds the lock alone until t ends: for tests that check who
// reaps the runs of dead harnesses.
func Exclusive(t testing.TB) { hold(t, syscall.LOCK_EX) }

func hold(t testing.TB, how int) {
	t.Helper()
	f, err := os.OpenFile(lockFile(), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatalf("docker test lock: %v", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		t.Fatalf("docker test lock %s: %v", f.Name(), err)
	}
	// Closing the file releases the lock.
	t.Cleanup(func() { _ = f.Close() })
}
