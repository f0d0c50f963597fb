package runstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// NewRunDir makes the store's folders itself and checks them after: a
// link planted as a scenario's folder, or a store others can write to,
// is refused and nothing is written through it, even when it appeared
// after the command line was checked. A store that is the user's own link
// is followed.
func TestNewRunDirRefusesSharedFolders(t *testing.T) {
	tmp := t.TempDir()
	target := filepath.Join(tmp, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(tmp, "linked")
	if err := os.Mkdir(linked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(linked, "clock-jump")); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(tmp, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	for _, store := range []string{linked, shared} {
		if dir, err := NewRunDir(store, "clock-jump", time.Now()); !errors.Is(err, ErrSharedStore) {
			t.Errorf("NewRunDir(%s) = %s, %v; want ErrSharedStore", store, dir, err)
		}
		if err := CheckStore(store, "clock-jump"); !errors.Is(err, ErrSharedStore) {
			t.Errorf("CheckStore(%s) = %v; want ErrSharedStore", store, err)
		}
	}
	if entries, _ := os.ReadDir(target); len(entries) > 0 {
		t.Errorf("written through a link: %s holds %v", target, entries)
	}
	if err := SaveMatrix(shared, Matrix{}, nil); !errors.Is(err, ErrSharedStore) {
		t.Errorf("SaveMatrix into a shared folder: %v, want ErrSharedStore", err)
	}

	own := filepath.Join(tmp, "own")
	if err := os.Symlink(target, own); err != nil {
		t.Fatal(err)
	}
	dir, err := NewRunDir(own, "clock-jump", time.Now())
	if err != nil {
		t.Fatalf("NewRunDir through the user's own link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(target, "clock-jump", filepath.Base(dir))); err != nil {
		t.Errorf("the run folder is not where the user's link points: %v", err)
	}
	if err := CheckStore(filepath.Join(tmp, "missing"), "clock-jump"); err != nil {
		t.Errorf("CheckStore of a store not made yet: %v", err)
	}
}
