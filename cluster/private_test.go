package cluster_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/cluster"
)

// filesHolding lists the files under root whose content holds secret.
func filesHolding(t *testing.T, root, secret string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// While the nodes run, the run's folder (what serve publishes) holds their
// logs and no file with the password; the configs, data and clock files
// are in the private state folder, mode 0700, which Close removes.
func TestLiveRunFolderHoldsNoPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, cache := t.TempDir(), t.TempDir()
	cl, err := cluster.StartLocal(ctx, cluster.Config{Nodes: 2, Dir: dir, CacheDir: cache,
		NodePersistence: map[string]cluster.Persistence{"n2": cluster.PersistAOFAlways}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(testCtx(t))
	// A replica too: its config holds the password twice (masterauth).
	if _, err := cluster.StartReplica(ctx, cl, cluster.ReplicaSpec{Name: "r1", Of: "n2"}); err != nil {
		t.Fatal(err)
	}
	if found := filesHolding(t, dir, cl.Password()); len(found) != 0 {
		t.Errorf("the run folder holds the password in %v", found)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "n1.log")); err != nil {
		t.Errorf("node log not in the run folder: %v", err)
	}
	state := cl.StateDir()
	if strings.HasPrefix(state, dir+string(filepath.Separator)) {
		t.Errorf("state folder %s is inside the run folder %s", state, dir)
	}
	info, err := os.Lstat(state)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o700 || !info.IsDir() {
		t.Errorf("state folder %s has mode %v, want a folder with 0700", state, info.Mode())
	}
	if found := filesHolding(t, state, cl.Password()); len(found) == 0 {
		t.Errorf("no file of the state folder holds the password: are the configs elsewhere?")
	}
	if err := cl.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("state folder left after Close: %v", err)
	}
}

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

// A live registry planted as a link (a shared cache dir) stops the start
// before any node writes its config through it.
func TestStartRefusesPlantedRegistryLink(t *testing.T) {
	cache := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(cache, "live")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := cluster.StartLocal(ctx, cluster.Config{Nodes: 1, Dir: t.TempDir(), CacheDir: cache})
	if err == nil {
		cl.Close(ctx)
		t.Fatal("started through a planted link")
	}
	if !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("error %v, want one naming the link", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("wrote %v where the link points", entries)
	}
}

// A library planted in the cache under the shim's name (or the right
// library with a wrong recorded sum) is never handed out: BuildShim builds
// the shim again over it.
func TestBuildShimRebuildsWhatItDidNotBuild(t *testing.T) {
	ctx := testCtx(t)
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
