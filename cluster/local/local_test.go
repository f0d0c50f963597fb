package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
)

// testCtx bounds what one test may wait for: a node that never answers
// fails the test with the operation that waited, instead of hanging the
// package until go test's timeout.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func startCluster(t *testing.T, nodes int, cache string) *local.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := local.Start(ctx, cluster.Config{Nodes: nodes, Dir: t.TempDir(), CacheDir: cache})
	if err != nil {
		t.Fatalf("StartLocal: %v", err)
	}
	t.Cleanup(func() {
		if err := cl.Close(testCtx(t)); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return cl
}

func TestStartLocalServesAuthenticatedOnly(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir())
	ctx := testCtx(t)
	if got := len(cl.Processes()); got != 3 {
		t.Fatalf("got %d nodes, want 3", got)
	}
	seen := map[string]bool{}
	for _, n := range cl.Processes() {
		if !strings.HasPrefix(n.Addr(), "127.0.0.1:") {
			t.Errorf("%s listens on %s, want loopback", n.Name(), n.Addr())
		}
		if seen[n.Addr()] {
			t.Errorf("%s shares address %s", n.Name(), n.Addr())
		}
		seen[n.Addr()] = true
		if err := n.Admin().Set(ctx, "k", n.Name(), 0).Err(); err != nil {
			t.Fatalf("%s: authenticated SET: %v", n.Name(), err)
		}
		anon := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		err := anon.Set(ctx, "k", "intruder", 0).Err()
		anon.Close()
		if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("%s: unauthenticated SET: got %v, want NOAUTH", n.Name(), err)
		}
		if v, _ := n.Admin().Get(ctx, "k").Result(); v != n.Name() {
			t.Errorf("%s: k = %q after the unauthenticated SET, want %q", n.Name(), v, n.Name())
		}
	}
}

// The clock shim's contract: a jump past a key's TTL expires it on that node
// only, at once, and Redis's own TIME shows the jump.
func TestClockJumpExpiresKeysOnThatNodeOnly(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir())
	ctx := testCtx(t)
	for _, n := range cl.Processes() {
		if err := n.Admin().Set(ctx, "lease", "v", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	n2, _ := cl.Process("n2")
	before, err := n2.Admin().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := n2.SetClockOffset(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := n2.ClockOffset(); got != 60*time.Second {
		t.Errorf("ClockOffset = %v, want 60s", got)
	}
	after, err := n2.Admin().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Sub(before); d < 59*time.Second || d > 70*time.Second {
		t.Errorf("n2's TIME moved by %v, want about 60s", d)
	}
	// A lookup expires the key lazily by the node's (shifted) clock.
	if n, err := n2.Admin().Exists(ctx, "lease").Result(); err != nil || n != 0 {
		t.Errorf("n2: lease exists=%d err=%v after +60s, want gone", n, err)
	}
	for _, name := range []string{"n1", "n3"} {
		n, _ := cl.Process(name)
		ttl, err := n.Admin().PTTL(ctx, "lease").Result()
		if err != nil || ttl < 25*time.Second {
			t.Errorf("%s: lease PTTL=%v err=%v, want untouched (~30s)", name, ttl, err)
		}
	}
	// Back to real time: a new 30 s key on n2 lives again.
	if err := n2.SetClockOffset(0); err != nil {
		t.Fatal(err)
	}
	if err := n2.Admin().Set(ctx, "lease", "v", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := n2.Admin().PTTL(ctx, "lease").Result(); ttl < 25*time.Second {
		t.Errorf("n2 after reset: PTTL=%v, want ~30s", ttl)
	}
}

func TestKillAndRestartWithoutPersistenceLosesData(t *testing.T) {
	cl := startCluster(t, 1, t.TempDir())
	ctx := testCtx(t)
	n := cl.Processes()[0]
	addr := n.Addr()
	if err := n.Admin().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("node still running after Kill")
	}
	if err := n.Admin().Ping(ctx).Err(); err == nil {
		t.Fatal("killed node answers PING")
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Addr() != addr {
		t.Errorf("restarted on %s, want the same address %s", n.Addr(), addr)
	}
	if err := n.Admin().Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET k after restart: %v, want redis.Nil (no persistence)", err)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Admin().Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET k after graceful restart: %v, want redis.Nil (no snapshot on SIGTERM)", err)
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	cache := t.TempDir()
	ctx := testCtx(t)
	dir := t.TempDir()
	cl, err := local.Start(ctx, cluster.Config{Nodes: 3, Dir: dir, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, n := range cl.Processes() {
		pids = append(pids, pidOf(t, n))
	}
	if err := cl.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d still alive after Close", pid)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "live")); len(entries) != 0 {
		t.Errorf("live registry not empty after Close: %v", entries)
	}
	if _, err := os.Stat(cl.StateDir()); !os.IsNotExist(err) {
		t.Errorf("node state folder left behind: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "n1.log")); err != nil {
		t.Errorf("node log not kept: %v", err)
	}
	if err := cl.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A harness killed with SIGKILL leaves its registry entry; the next start
// kills the processes it lists — and only those carrying the run's marker.
func TestReapKillsOnlyMarkedLeftovers(t *testing.T) {
	base := t.TempDir()
	entry := filepath.Join(base, "deadrun")
	if err := os.MkdirAll(entry, 0o700); err != nil {
		t.Fatal(err)
	}
	// An owner that cannot be alive: pid 1's real start time differs.
	if err := os.WriteFile(filepath.Join(entry, "owner"), []byte("1 999999999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	marked := exec.Command("sleep", "60")
	marked.Env = append(os.Environ(), cluster.RunEnv+"=deadrun")
	unmarked := exec.Command("sleep", "60")
	for _, c := range []*exec.Cmd{marked, unmarked} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer unmarked.Process.Kill()
	defer marked.Process.Kill()
	// A leftover may be paused (a node under a pause fault): SIGKILL
	// still ends it.
	if err := marked.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*exec.Cmd{"marked": marked, "unmarked": unmarked} {
		pid := strconv.Itoa(c.Process.Pid) + " " + strconv.FormatUint(startTime(t, c.Process.Pid), 10)
		if err := os.WriteFile(filepath.Join(entry, name+".pid"), []byte(pid), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The run's node state, in its entry, is removed with it.
	data := filepath.Join(entry, "n1", "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, "n1", "redis.conf"), []byte("requirepass secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	killed, err := cluster.Reap(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || !strings.Contains(killed[0], "marked") {
		// The marked process is stopped: without this, Wait below
		// would wait for it forever.
		_ = marked.Process.Kill()
		t.Errorf("Reap killed %v, want only the marked process", killed)
	}
	if err := marked.Wait(); err == nil {
		t.Error("marked process exited cleanly, want killed")
	}
	if !alive(unmarked.Process.Pid) {
		t.Error("Reap killed a process that does not carry the run's marker")
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Errorf("registry entry not removed: %v", err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("node data of the dead run not removed: %v", err)
	}
}

func startTime(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	v, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A live run's entry is never reaped.
func TestReapSparesLiveRuns(t *testing.T) {
	cache := t.TempDir()
	cl := startCluster(t, 1, cache)
	killed, err := cluster.Reap(filepath.Join(cache, "live"))
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 0 {
		t.Errorf("Reap killed %v of a live run", killed)
	}
	if !cl.Processes()[0].Running() {
		t.Error("node of a live run was stopped")
	}
}

func pidOf(t *testing.T, n *local.Process) int {
	t.Helper()
	info, err := n.Admin().Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatal("no process_id in INFO")
	return 0
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie is dead for our purposes.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// An entry whose owner file another run is writing at this instant reads
// as empty: a reaper must take it as alive while it is young, and as the
// garbage of a crash once it is old.
func TestReapSparesHalfWrittenOwner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		age  time.Duration
		kept bool
	}{
		{"young", 0, true},
		{"old", 2 * time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "run1")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "owner"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			then := time.Now().Add(-tc.age)
			if err := os.Chtimes(dir, then, then); err != nil {
				t.Fatal(err)
			}
			if _, err := cluster.Reap(base); err != nil {
				t.Fatal(err)
			}
			_, err := os.Stat(dir)
			if kept := err == nil; kept != tc.kept {
				t.Errorf("entry kept = %v, want %v", kept, tc.kept)
			}
		})
	}
}

// A harness that died but is not yet waited for (a zombie: its parent is
// gone and init reaps lazily, or its parent has not waited yet) is dead:
// its entry is reaped, not spared as a live run's.
func TestReapTakesAZombieOwnerForDead(t *testing.T) {
	base := t.TempDir()
	entry := filepath.Join(base, "zombierun")
	if err := os.MkdirAll(entry, 0o700); err != nil {
		t.Fatal(err)
	}
	owner := exec.Command("true")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	pid := owner.Process.Pid
	start := startTime(t, pid)
	defer owner.Wait()
	// Not waited for: it stays a zombie of this process.
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not exit", pid)
		}
	}
	if err := os.WriteFile(filepath.Join(entry, "owner"), []byte(fmt.Sprintf("%d %d\n", pid, start)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Reap(base); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Errorf("the entry of a zombie owner was spared: %v", err)
	}
}
