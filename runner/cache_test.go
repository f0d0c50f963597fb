package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"splitbrain/cluster"
	"splitbrain/internal/testgate"
)

// Each play of these tests has a cache dir of its own, so that
// assertCleanedUp can say the play left nothing in its live registry. What
// a cache dir also holds is the same for every play: the clock shim (cc,
// about 0.3 CPU-seconds) and ZooKeeper's class-data archive (dumped by a
// member of the first ZooKeeper run that finds none: 0.3 CPU-seconds and a
// slower shutdown). Built once into seedDir and hard-linked into each
// play's cache dir, they cost one build per test process instead of one
// per play (some 110 plays).
var (
	seedOnce sync.Once
	seedDir  string
	seedErr  error
	seedMu   sync.Mutex // adopting archives into seedDir
)

func TestMain(m *testing.M) {
	code := m.Run()
	if seedDir != "" {
		_ = os.RemoveAll(seedDir)
	}
	os.Exit(code)
}

// playCache is a new cache dir for one play, holding the shared clock shim
// and the class archives other plays made; adoptArchives, at the test's
// end, shares the archives this play made.
func playCache(t *testing.T) string {
	t.Helper()
	testgate.Enter(t)
	seedOnce.Do(func() {
		if seedDir, seedErr = os.MkdirTemp("", "splitbrain-runner-seed-"); seedErr != nil {
			return
		}
		_, seedErr = cluster.BuildShim(context.Background(), seedDir)
	})
	dir := t.TempDir()
	if seedErr != nil {
		// The play builds its own shim, and says so if it cannot.
		t.Logf("shared cache: %v", seedErr)
		return dir
	}
	seedMu.Lock()
	entries, err := os.ReadDir(seedDir)
	seedMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && shareable(e.Name()) {
			// A failed link only costs the play a build of its own.
			_ = os.Link(filepath.Join(seedDir, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	t.Cleanup(func() { adoptArchives(dir) })
	return dir
}

// shareable names what a cache dir holds that no play changes once made:
// the shim and its recorded sum, class archives (named by their JVM's
// key); not the live registry, nor anything being made (dumps, claims).
func shareable(name string) bool {
	switch {
	case strings.HasPrefix(name, "clockshim-") && (strings.HasSuffix(name, ".so") || strings.HasSuffix(name, ".so.sha256")):
		return true
	case strings.HasSuffix(name, ".jsa"):
		return true
	}
	return false
}

// adoptArchives links into seedDir the class archives a play's run kept in
// dir (it keeps one only after checking that a JVM maps it).
func adoptArchives(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	seedMu.Lock()
	defer seedMu.Unlock()
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".jsa") {
			_ = os.Link(filepath.Join(dir, e.Name()), filepath.Join(seedDir, e.Name()))
		}
	}
}

// The shared cache hands each play the shim BuildShim made, which the
// play's BuildShim then takes as its own instead of compiling anew.
func TestPlayCacheHoldsTheShim(t *testing.T) {
	t.Parallel()
	dir := playCache(t)
	if seedErr != nil {
		t.Skipf("no shared cache: %v", seedErr)
	}
	shim := cluster.ShimPath(dir)
	before, err := os.Stat(shim)
	if err != nil {
		t.Fatalf("the play's cache has no shim: %v", err)
	}
	got, err := cluster.BuildShim(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(got)
	if err != nil {
		t.Fatal(err)
	}
	if got != shim || !os.SameFile(before, after) {
		t.Errorf("BuildShim in a seeded cache gave %s (%s), want the seeded %s kept", got, fmt.Sprint(after.ModTime()), shim)
	}
}
