package runstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// Issue 33, hardening 3: the store sat in another user's folder; the store
// itself was the harness's and passed, and the folder's owner swapped it
// for a link after the check, so that root appended node logs to a file
// of the owner's choosing. A store under a folder another user can
// change is refused before anything is written; one in a sticky folder
// (/tmp) is not.
func TestStoreUnderAnotherUsersFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a folder of another user (the project's machines and CI run as root)")
	}
	tmp := t.TempDir()
	theirs := filepath.Join(tmp, "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(theirs, "store")
	if err := os.Mkdir(store, 0o755); err != nil { // the harness's own
		t.Fatal(err)
	}
	err := CheckStore(store, "clock-jump")
	if !errors.Is(err, ErrSharedStore) {
		t.Fatalf("CheckStore of a store in another user's folder: %v, want ErrSharedStore", err)
	}
	t.Logf("refused: %v", err)
	for _, want := range []string{theirs, "uid 65534", "swap the store for a link"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q", want)
		}
	}
	if dir, err := NewRunDir(store, "clock-jump", time.Now()); !errors.Is(err, ErrSharedStore) {
		t.Errorf("NewRunDir = %s, %v; want ErrSharedStore", dir, err)
	}
	if entries, _ := os.ReadDir(store); len(entries) > 0 {
		t.Errorf("written into the refused store: %v", entries)
	}
	sticky := filepath.Join(tmp, "sticky")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRunDir(filepath.Join(sticky, "store"), "clock-jump", time.Now()); err != nil {
		t.Errorf("a store in a sticky folder: %v", err)
	}
}
