package dockertest

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// tryLock takes the lock the way another test would, without waiting, and
// lets it go again.
func tryLock(t *testing.T, how int) error {
	t.Helper()
	f, err := os.OpenFile(lockFile(), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
}

// Shared holders run side by side, an exclusive holder alone, and the
// lock goes when its test ends.
func TestSharedAndExclusive(t *testing.T) {
	// A lock file of this test's own, not the one the machine's Docker
	// tests are holding right now.
	t.Setenv("TMPDIR", t.TempDir())
	t.Run("shared", func(t *testing.T) {
		Shared(t)
		if err := tryLock(t, syscall.LOCK_SH); err != nil {
			t.Errorf("a second shared holder: %v, want it let in", err)
		}
		if err := tryLock(t, syscall.LOCK_EX); !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Errorf("an exclusive holder beside a shared one: %v, want EWOULDBLOCK", err)
		}
	})
	t.Run("exclusive", func(t *testing.T) {
		Exclusive(t)
		if err := tryLock(t, syscall.LOCK_SH); !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Errorf("a shared holder beside an exclusive one: %v, want EWOULDBLOCK", err)
		}
	})
	if err := tryLock(t, syscall.LOCK_EX); err != nil {
		t.Errorf("after both tests ended: %v, want the lock free", err)
	}
}
