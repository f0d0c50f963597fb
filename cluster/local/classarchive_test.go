package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
)

// The first ZooKeeper ensemble started with a cache dir has one member
// dump its classes at exit; the archive is kept only whole, and every
// member of the next ensemble maps it. A member that is killed instead
// of stopped dumps nothing usable, and its run keeps nothing.
func TestZooKeeperClassArchive(t *testing.T) {
	if err := cluster.ZooKeeper.Requires(); err != nil {
		t.Skip(err)
	}
	t.Parallel()
	cache := t.TempDir()
	start := func() *local.Cluster {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cl, err := local.Start(ctx, cluster.Config{Kind: cluster.ZooKeeper, Nodes: 3, Dir: t.TempDir(), CacheDir: cache})
		if err != nil {
			t.Fatalf("StartLocal: %v", err)
		}
		return cl
	}
	archives := func() []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(cache, "zookeeper-*"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	closeAll := func(cl *local.Cluster) {
		t.Helper()
		if err := cl.Close(testCtx(t)); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	// mapped is how many of cl's members have a file whose path starts
	// with path mapped (every JVM maps the JDK's own archive too, and
	// every member the clock shim from the cache).
	mapped := func(cl *local.Cluster, path string) int {
		t.Helper()
		n := 0
		for _, p := range cl.Processes() {
			maps, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID()) + "/maps")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(maps), path) {
				n++
			}
		}
		return n
	}

	// Killed: the one member that dumps dies mid-run, so nothing is kept
	// and the claim is given up.
	cl := start()
	if got := archives(); len(got) != 1 || !strings.HasSuffix(got[0], ".jsa.claim") {
		t.Fatalf("while the first run plays, the cache holds %v, want only its claim", got)
	}
	var dumpers []*local.Process
	for _, p := range cl.Processes() {
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID()) + "/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(cmdline), "-XX:ArchiveClassesAtExit=") {
			dumpers = append(dumpers, p)
		}
	}
	if len(dumpers) != 1 {
		t.Fatalf("%d members dump classes at exit, want 1", len(dumpers))
	}
	if err := dumpers[0].Kill(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	closeAll(cl)
	if got := archives(); len(got) != 0 {
		t.Fatalf("after a run whose dumping member was killed, the cache holds %v, want nothing", got)
	}

	// Stopped: the archive is made, and the next ensemble maps it.
	cl = start()
	if n := mapped(cl, filepath.Join(cache, "zookeeper-")); n != 0 {
		t.Errorf("%d members map an archive before one was made", n)
	}
	closeAll(cl)
	got := archives()
	if len(got) != 1 || !strings.HasSuffix(got[0], ".jsa") {
		t.Fatalf("after a run stopped as usual, the cache holds %v, want one archive and no claim or dump", got)
	}
	cl = start()
	defer closeAll(cl)
	if n := mapped(cl, got[0]); n != 3 {
		t.Errorf("%d of 3 members map %s, want all", n, got[0])
	}
}
