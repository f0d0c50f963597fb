package cluster_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/cluster"
)

// PrivateDir makes a folder 0700, tightens a looser one of this user's,
// and refuses a symbolic link or a folder another user owns.
func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "b")
	if err := cluster.PrivateDir(fresh); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(fresh); info.Mode().Perm() != 0o700 {
		t.Errorf("new folder mode %v, want 0700", info.Mode().Perm())
	}
	loose := filepath.Join(base, "loose")
	if err := os.Mkdir(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := cluster.PrivateDir(loose); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(loose); info.Mode().Perm() != 0o700 {
		t.Errorf("loose folder mode %v after PrivateDir, want 0700", info.Mode().Perm())
	}
	elsewhere := t.TempDir()
	link := filepath.Join(base, "link")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	if err := cluster.PrivateDir(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("PrivateDir on a symlink: %v, want a refusal naming the link", err)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: cannot make a folder another user owns; that case is left untested here")
		return
	}
	foreign := filepath.Join(base, "foreign")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := cluster.PrivateDir(foreign); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("PrivateDir on another user's folder: %v, want a refusal naming its owner", err)
	}
}

// A library planted in the cache under the shim's name (or the right
// library with a wrong recorded sum) is never handed out: BuildShim builds
// the shim again over it.
func TestBuildShimRebuildsWhatItDidNotBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cache := t.TempDir()
	lib := cluster.ShimPath(cache)
	planted := []byte("\x7fELF not the shim")
	if err := os.WriteFile(lib, planted, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := cluster.BuildShim(ctx, cache)
	if err != nil {
		t.Fatal(err)
	}
	if got != lib {
		t.Fatalf("BuildShim returned %s, want %s", got, lib)
	}
	built, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(built, planted) || !bytes.HasPrefix(built, []byte("\x7fELF")) {
		t.Fatalf("the planted library was kept (%d bytes)", len(built))
	}
	info, _ := os.Stat(lib)
	before := info.ModTime()

	// A second call uses the verified library as it is.
	time.Sleep(10 * time.Millisecond)
	if _, err := cluster.BuildShim(ctx, cache); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(lib); !info.ModTime().Equal(before) {
		t.Error("a verified library was built again")
	}

	// A planted library with its own sum written beside it: the sum says
	// nothing of where the library came from unless this user made it and
	// nobody else could change it; here the sum file is left as built and
	// the library swapped, as a neighbour with write access would.
	if err := os.WriteFile(lib, planted, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.BuildShim(ctx, cache); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(lib); !bytes.Equal(b, built) {
		t.Error("a swapped library was not rebuilt")
	}

	// Writable by others: rebuilt, whatever its content.
	if err := os.Chmod(lib, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.BuildShim(ctx, cache); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(lib); info.Mode().Perm()&0o022 != 0 {
		t.Errorf("a library writable by others was kept (mode %v)", info.Mode().Perm())
	}
}
