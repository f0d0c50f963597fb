package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/cluster/docker/dockertest"
)

// The tests share one engine connection and one cache dir (the clock shim is
// compiled once); each cluster is its own run.
var (
	testEngine    *Engine
	testEngineErr error
	testCacheDir  string
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the fault tests make many on purpose.
	redis.SetLogger(quietLogger{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	testEngine, testEngineErr = Connect(ctx)
	cancel()
	if dir := os.Getenv(helperEnv); dir != "" {
		// A helper harness shares its parent's cache and is killed, not
		// cleaned up.
		testCacheDir = dir
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "splitbrain-docker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCacheDir = dir
	code := m.Run()
	if testEngine != nil {
		_ = testEngine.Close()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// engine returns the shared engine, or skips the test when none answers.
// The test holds the machine's Docker test lock shared (see dockertest); a
// helper harness runs under its parent test's lock.
func engine(t *testing.T) *Engine {
	t.Helper()
	if os.Getenv(helperEnv) == "" {
		dockertest.Shared(t)
	}
	return connectedEngine(t)
}

// engineAlone is engine for a test that checks who reaps the runs of dead
// harnesses: it holds the lock alone, so no other test's cluster start
// reaps them first.
func engineAlone(t *testing.T) *Engine {
	t.Helper()
	dockertest.Exclusive(t)
	return connectedEngine(t)
}

func connectedEngine(t *testing.T) *Engine {
	t.Helper()
	if testEngineErr != nil {
		if errors.Is(testEngineErr, ErrNoEngine) {
			t.Skipf("SKIP: these tests need a Docker engine and none is reachable: %v", testEngineErr)
		}
		t.Fatal(testEngineErr)
	}
	return testEngine
}

// testCtx bounds a test's work with the engine. Generously: on a fresh
// machine a test may first build an image (ZooKeeper's holds a JRE, 212
// MB) while every other package's tests load the CPU.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func startTestCluster(t *testing.T, cfg cluster.Config) *Cluster {
	t.Helper()
	eng := engine(t)
	ctx := testCtx(t)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	cfg.CacheDir = testCacheDir
	c, err := StartCluster(ctx, eng, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if t.Failed() {
			logContainers(ctx, t, c)
		}
		if err := c.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

// logContainers puts each container's state and the end of its log into
// a failed test's output, before the cluster is closed and they are gone:
// a server that refused a connection a moment after it answered (seen
// once in CI) says there whether it crashed, restarted or was killed.
func logContainers(ctx context.Context, t *testing.T, c *Cluster) {
	for _, n := range c.all() {
		info, err := c.eng.api.ContainerInspect(ctx, n.id)
		if err != nil || info.ContainerJSONBase == nil || info.State == nil {
			t.Logf("container %s: no state: %v", n.Name(), err)
			continue
		}
		s := info.State
		logs, err := c.eng.containerLogs(ctx, n.id, "40", time.Time{})
		t.Logf("container %s: status %s, exit code %d, OOM-killed %v, started %s, finished %s, restarts %d; last log lines (%v):\n%s",
			n.Name(), s.Status, s.ExitCode, s.OOMKilled, s.StartedAt, s.FinishedAt, info.RestartCount, err, logs)
	}
}

// opCtx bounds one command; pauses and isolations make commands hang.
func opCtx(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(testCtx(t), 3*time.Second)
}

func mustDo(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func ping(t *testing.T, n *Container) error {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	return n.Admin().Ping(ctx).Err()
}

// freshPing dials a new connection, so that it sees the network as it is now
// rather than through a pooled connection.
func freshPing(t *testing.T, n *Container, password string) error {
	t.Helper()
	cl := redis.NewClient(&redis.Options{
		Addr: n.Addr(), Password: password,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaxRetries: -1,
	})
	defer cl.Close()
	ctx, cancel := opCtx(t)
	defer cancel()
	return cl.Ping(ctx).Err()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// uniqueImageConfig is an ImageConfig whose image no engine holds yet:
// its redis-server carries a few trailing bytes (ignored by the loader)
// unique to this test, so its hash is new. It returns the tag the image
// will have.
func uniqueImageConfig(t *testing.T, what string) (ImageConfig, string) {
	t.Helper()
	eng := engine(t)
	ctx := testCtx(t)
	src, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	if src, err = filepath.EvalSymlinks(src); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	unique := filepath.Join(t.TempDir(), "redis-server")
	bin = append(bin, fmt.Sprintf("splitbrain-image-test-%s-%d-%d", what, os.Getpid(), time.Now().UnixNano())...)
	if err := os.WriteFile(unique, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := ImageConfig{Binary: unique, CacheDir: testCacheDir}
	tag, err := ImageTag(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := eng.imageByRef(ctx, tag); err != nil || ok {
		t.Fatalf("image %s exists before the build (%v): the test input is not unique", tag, err)
	}
	return cfg, tag
}

// TestImageBuildFromNothing builds an image no engine can hold yet: its
// redis-server carries a few trailing bytes (ignored by the loader) unique to
// this test, so its hash is new. Removing every splitbrain image instead
// would pull the shared image from under the tests of other packages that
// run at the same time.
func TestImageBuildFromNothing(t *testing.T) {
	t.Parallel()
	eng := engine(t)
	ctx := testCtx(t)
	cfg, tag := uniqueImageConfig(t, "build")
	first, err := eng.BuildImage(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.removeImage(context.Background(), first.ID); err != nil {
			t.Errorf("removing the test image: %v", err)
		}
	})
	if !first.Built {
		t.Errorf("first build: Built = false, want true (the image is new)")
	}
	info, ok, err := eng.imageByRef(ctx, first.Tag)
	if err != nil || !ok {
		t.Fatalf("image %s after build: found %v, %v", first.Tag, ok, err)
	}
	if info.Labels[labelApp] != "1" || info.Labels[labelImageHash] != first.Hash {
		t.Errorf("labels %v, want %s=1 and %s=%s", info.Labels, labelApp, labelImageHash, first.Hash)
	}
	if first.Tag != tag || !strings.HasPrefix(first.Tag, imageRepo(cluster.Redis)+":"+first.Hash[:16]) {
		t.Errorf("tag %s does not name the hash %s (ImageTag said %s)", first.Tag, first.Hash, tag)
	}
	second, err := eng.BuildImage(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if second.Built || second.ID != first.ID || second.Hash != first.Hash {
		t.Errorf("second build = %+v, want no rebuild of %+v", second, first)
	}
	imgs, err := eng.Images(ctx)
	found := false
	for _, im := range imgs {
		found = found || im.ID == first.ID
	}
	if err != nil || !found {
		t.Errorf("Images = %+v, %v; want it to list %s", imgs, err, first.ID)
	}
}

// RemoveImages scoped to one hash removes that image, and only it: a
// second image this test built and the shared Redis image other tests
// run on stay. Not every image that was there before: the other tests
// build and remove images of their own meanwhile (a fresh-clone CI saw
// TestBuild's go before this test looked again).
func TestRemoveImagesScoped(t *testing.T) {
	t.Parallel()
	eng := engine(t)
	ctx := testCtx(t)
	shared, err := eng.BuildImage(ctx, ImageConfig{CacheDir: testCacheDir})
	mustDo(t, "build the shared image", err)
	var built []Image
	for _, what := range []string{"remove", "keep"} {
		cfg, _ := uniqueImageConfig(t, what)
		im, err := eng.BuildImage(ctx, cfg)
		mustDo(t, "build "+what, err)
		built = append(built, im)
		t.Cleanup(func() {
			if err := eng.removeImage(context.Background(), im.ID); err != nil {
				t.Errorf("removing the test image %s: %v", im.Tag, err)
			}
		})
	}
	doomed, kept := built[0], built[1]

	if _, err := eng.RemoveImages(ctx, ""); err == nil {
		t.Errorf("RemoveImages with an empty hash: no error")
	}
	removed, err := eng.RemoveImages(ctx, doomed.Hash)
	mustDo(t, "remove", err)
	if len(removed) != 1 || removed[0] != doomed.Tag {
		t.Errorf("removed %v, want [%s]", removed, doomed.Tag)
	}
	if _, ok, err := eng.imageByRef(ctx, doomed.ID); err != nil || ok {
		t.Errorf("image %s after its removal: found %v, %v", doomed.Tag, ok, err)
	}
	for _, im := range []Image{shared, kept} {
		if _, ok, err := eng.imageByRef(ctx, im.ID); err != nil || !ok {
			t.Errorf("image %s (%s) was not to be removed: found %v, %v", im.Tag, im.ID, ok, err)
		}
	}
	if again, err := eng.RemoveImages(ctx, doomed.Hash); err != nil || len(again) != 0 {
		t.Errorf("removing it again: %v, %v; want nothing removed, no error", again, err)
	}
}

func TestClusterFaults(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, cluster.Config{Nodes: 5})
	eng := c.eng
	n1, n2, n3, n4, n5 := c.nodes[0], c.nodes[1], c.nodes[2], c.nodes[3], c.nodes[4]

	t.Run("authenticated commands answer, others are refused", func(t *testing.T) {
		for _, n := range c.Containers() {
			ctx, cancel := opCtx(t)
			if err := n.Admin().Set(ctx, "k", n.Name(), 0).Err(); err != nil {
				t.Errorf("%s: SET with password: %v", n.Name(), err)
			}
			cancel()
			err := freshPing(t, n, "")
			if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
				t.Errorf("%s: PING without password: %v, want NOAUTH", n.Name(), err)
			}
			err = freshPing(t, n, "wrong")
			if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				t.Errorf("%s: PING with a wrong password: %v, want WRONGPASS", n.Name(), err)
			}
		}
	})

	t.Run("pause makes commands time out, resume heals", func(t *testing.T) {
		ctx := testCtx(t)
		mustDo(t, "pause", n1.Pause(ctx))
		mustDo(t, "pause again", n1.Pause(ctx))
		if st, err := n1.State(ctx); err != nil || !st.Paused {
			t.Errorf("state after pause: %+v, %v", st, err)
		}
		if err := ping(t, n1); !isTimeout(err) {
			t.Errorf("PING of a paused node: %v, want a timeout", err)
		}
		if err := ping(t, n2); err != nil {
			t.Errorf("PING of another node: %v", err)
		}
		mustDo(t, "resume", n1.Resume(ctx))
		mustDo(t, "resume again", n1.Resume(ctx))
		if err := ping(t, n1); err != nil {
			t.Errorf("PING after resume: %v", err)
		}
	})

	t.Run("isolate makes the node unreachable, rejoin heals", func(t *testing.T) {
		ctx := testCtx(t)
		mustDo(t, "isolate", n2.Isolate(ctx))
		if err := freshPing(t, n2, c.Password()); err == nil {
			t.Errorf("PING of an isolated node answered")
		}
		if err := ping(t, n3); err != nil {
			t.Errorf("PING of another node: %v", err)
		}
		mustDo(t, "rejoin", n2.Rejoin(ctx))
		if err := freshPing(t, n2, c.Password()); err != nil {
			t.Errorf("PING after rejoin: %v", err)
		}
		if err := ping(t, n2); err != nil {
			t.Errorf("PING on the admin client after rejoin: %v", err)
		}
	})

	t.Run("clock offset expires a key on that node only", func(t *testing.T) {
		ctx := testCtx(t)
		for _, n := range []*Container{n3, n4} {
			mustDo(t, "SET EX 30", n.Admin().Set(ctx, "lease", "v", 30*time.Second).Err())
		}
		t3, err := n3.Admin().Time(ctx).Result()
		mustDo(t, "TIME", err)
		mustDo(t, "set offset", n3.SetClockOffset(60*time.Second))
		if got := n3.ClockOffset(); got != 60*time.Second {
			t.Errorf("ClockOffset = %v, want 60s", got)
		}
		if err := n3.Admin().Get(ctx, "lease").Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("n3 (+60s): GET of a 30s key: %v, want nil (expired)", err)
		}
		if v, err := n4.Admin().Get(ctx, "lease").Result(); err != nil || v != "v" {
			t.Errorf("n4 (no offset): GET = %q, %v; want the key", v, err)
		}
		t3b, err := n3.Admin().Time(ctx).Result()
		mustDo(t, "TIME", err)
		if jump := t3b.Sub(t3); jump < 59*time.Second {
			t.Errorf("n3's TIME moved by %v, want about +60s", jump)
		}
		mustDo(t, "reset offset", n3.SetClockOffset(0))
		t3c, err := n3.Admin().Time(ctx).Result()
		mustDo(t, "TIME", err)
		if t3c.After(t3b) {
			t.Errorf("n3's TIME after reset %v is past the shifted %v", t3c, t3b)
		}
	})

	t.Run("kill (of a paused node) and start lose the data (tmpfs)", func(t *testing.T) {
		ctx := testCtx(t)
		mustDo(t, "SET", n4.Admin().Set(ctx, "durable?", "no", 0).Err())
		mustDo(t, "pause", n4.Pause(ctx)) // a frozen node dies as well
		mustDo(t, "kill", n4.Kill(ctx))
		if st, err := n4.State(ctx); err != nil || st.Running {
			t.Errorf("state after kill: %+v, %v", st, err)
		}
		if err := ping(t, n4); err == nil {
			t.Errorf("PING of a killed node answered")
		}
		mustDo(t, "kill again", n4.Kill(ctx))
		mustDo(t, "start", n4.Start(ctx))
		if err := n4.Start(ctx); err == nil {
			t.Errorf("starting a running node: no error")
		}
		if err := n4.Admin().Get(ctx, "durable?").Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("GET after kill+start: %v, want nil (the tmpfs is wiped)", err)
		}
	})

	t.Run("graceful stop of a paused node, start", func(t *testing.T) {
		ctx := testCtx(t)
		mustDo(t, "pause", n5.Pause(ctx))
		mustDo(t, "stop", n5.Stop(ctx))
		if st, err := n5.State(ctx); err != nil || st.Running {
			t.Errorf("state after stop: %+v, %v", st, err)
		}
		mustDo(t, "stop again", n5.Stop(ctx))
		mustDo(t, "start", n5.Start(ctx))
		if err := ping(t, n5); err != nil {
			t.Errorf("PING after start: %v", err)
		}
	})

	t.Run("start while isolated waits for the log", func(t *testing.T) {
		ctx := testCtx(t)
		mustDo(t, "isolate", n5.Isolate(ctx))
		mustDo(t, "restart", n5.Restart(ctx, RestartOptions{}))
		if st, err := n5.State(ctx); err != nil || !st.Running || !st.Isolated {
			t.Errorf("state: %+v, %v; want running and isolated", st, err)
		}
		mustDo(t, "rejoin", n5.Rejoin(ctx))
		if err := freshPing(t, n5, c.Password()); err != nil {
			t.Errorf("PING after rejoin: %v", err)
		}
	})

	t.Run("close removes everything, whatever state the nodes are in", func(t *testing.T) {
		ctx := testCtx(t)
		mustDo(t, "pause n1", n1.Pause(ctx))
		mustDo(t, "isolate n2", n2.Isolate(ctx))
		mustDo(t, "kill n3", n3.Kill(ctx))
		mustDo(t, "offset n4", n4.SetClockOffset(-time.Hour))
		before, err := eng.RunObjects(ctx, c.RunID())
		mustDo(t, "list", err)
		if len(before) != 6 {
			t.Errorf("before close the run has %v, want 5 containers and a network", before)
		}
		// Someone removes n5's container behind the harness's back.
		mustDo(t, "remove n5", eng.removeContainer(ctx, n5.ContainerID()))
		mustDo(t, "close", c.Close(ctx))
		mustDo(t, "close again", c.Close(ctx))
		left, err := eng.RunObjects(ctx, c.RunID())
		mustDo(t, "list", err)
		if len(left) > 0 {
			t.Errorf("after close the engine still holds %v", left)
		}
		if _, err := os.Stat(c.stateDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("state dir %s after close: %v, want it gone", c.stateDir, err)
		}
		for _, n := range c.Containers()[:4] {
			b, err := os.ReadFile(n.LogPath())
			if err != nil || !strings.Contains(string(b), "Ready to accept connections") {
				t.Errorf("%s: log %s: %v, %d bytes without Redis's ready line", n.Name(), n.LogPath(), err, len(b))
			}
		}
		if err := n1.SetClockOffset(time.Second); err == nil {
			t.Errorf("SetClockOffset after close: no error")
		}
	})
}

func TestPersistence(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, cluster.Config{Nodes: 1, Persistence: cluster.PersistAOFAlways})
	n := c.nodes[0]
	ctx := testCtx(t)
	mustDo(t, "SET", n.Admin().Set(ctx, "acked", "1", 0).Err())

	mustDo(t, "kill+start", n.Restart(ctx, RestartOptions{}))
	if v, err := n.Admin().Get(ctx, "acked").Result(); err != nil || v != "1" {
		t.Errorf("AOF always, after kill+start: GET = %q, %v; want the key", v, err)
	}

	// An amnesia restart with a delay: down during the delay, back empty.
	idBefore := n.ContainerID()
	done := make(chan error, 1)
	go func() { done <- n.Restart(ctx, RestartOptions{Delay: 2 * time.Second, Amnesia: true}) }()
	down := false
	for !down {
		select {
		case err := <-done:
			t.Fatalf("restart returned before the node was seen down: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		st, err := n.State(ctx)
		mustDo(t, "state", err)
		down = !st.Running
	}
	mustDo(t, "amnesia restart", <-done)
	if err := n.Admin().Get(ctx, "acked").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("after amnesia: GET = %v, want nil (data lost)", err)
	}
	if n.ContainerID() == idBefore {
		t.Errorf("amnesia kept container %s, want a fresh one (the volume is replaced)", idBefore)
	}
	objs, err := c.eng.RunObjects(ctx, c.RunID())
	mustDo(t, "list", err)
	if len(objs) != 3 {
		t.Errorf("run objects after amnesia: %v, want one container, one volume, one network", objs)
	}
	// Closing with the run's context after a Ctrl-C fails, and leaves the
	// cluster closable with a fresh one.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Close(cancelled); err == nil {
		t.Errorf("close with a cancelled context: no error")
	}
	mustDo(t, "close with a fresh context", c.Close(ctx))
	if left, err := c.eng.RunObjects(ctx, c.RunID()); err != nil || len(left) > 0 {
		t.Errorf("after close: %v, %v; want nothing", left, err)
	}
	if b, err := os.ReadFile(n.LogPath()); err != nil || strings.Count(string(b), "Ready to accept connections") < 3 {
		t.Errorf("log %s should hold the three starts, of both containers: %v\n%s", n.LogPath(), err, b)
	}
}

func TestStartClusterRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  cluster.Config
		want string
	}{
		{"no nodes", cluster.Config{Dir: "x"}, "Nodes is 0"},
		{"no dir", cluster.Config{Nodes: 1}, "Dir is empty"},
		{"bad persistence", cluster.Config{Nodes: 1, Dir: "x", Persistence: "rdb"}, `persistence "rdb"`},
		{"bad run id", cluster.Config{Nodes: 1, Dir: "x", RunID: "../x"}, `RunID "../x"`},
		{"bad node persistence", cluster.Config{Nodes: 1, Dir: "x", NodePersistence: map[string]cluster.Persistence{"n1": "rdb"}}, `node n1: persistence "rdb"`},
		{"persistence of no node", cluster.Config{Nodes: 2, Dir: "x", NodePersistence: map[string]cluster.Persistence{"n3": cluster.PersistAOFAlways}}, `node "n3"; this cluster has n1..n2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Validation comes before any use of the engine.
			_, err := StartCluster(context.Background(), nil, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestStartClusterTooManyNodesLeavesNothing(t *testing.T) {
	t.Parallel()
	eng := engine(t)
	ctx := testCtx(t)
	// A run id of its own, so its leftovers could be found (the other
	// tests start clusters in the same cache dir meanwhile).
	runID := "toomany-" + cluster.RandomHex(4)
	_, err := StartCluster(ctx, eng, cluster.Config{Nodes: 1 << 20, Dir: t.TempDir(), CacheDir: testCacheDir, RunID: runID})
	if err == nil || !strings.Contains(err.Error(), "has room for") {
		t.Fatalf("error %v, want the subnet's room", err)
	}
	// It failed after making its network; the error path must remove it.
	nets, err := eng.listNetworks(ctx, map[string]string{labelRun: ""})
	mustDo(t, "list", err)
	for _, o := range nets {
		if strings.HasPrefix(o.Labels[labelRun], "toomany-") {
			t.Errorf("network %s left behind", o.Name)
		}
	}
	if _, err := os.Lstat(filepath.Join(testCacheDir, stateRoot, runID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state dir of run %s left: %v", runID, err)
	}
}
