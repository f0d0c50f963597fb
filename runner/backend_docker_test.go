package runner_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/checker"
	"splitbrain/cluster"
	"splitbrain/cluster/docker"
	"splitbrain/cluster/docker/dockertest"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/nemesis"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

// dockerEngine connects to this machine's Docker engine, or skips the test
// when none answers. The test holds the machine's Docker test lock shared
// (see dockertest). The Docker tests do not run in parallel with one
// another: assertNothingLeft counts every object this process made (they
// are the subtests of TestDockerBackend).
func dockerEngine(t *testing.T) *docker.Engine {
	t.Helper()
	dockertest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eng, err := docker.Connect(ctx)
	if errors.Is(err, docker.ErrNoEngine) {
		t.Skipf("SKIP: the docker backend tests need a Docker engine and none is reachable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

// assertNothingLeft checks, by the labels every object of a run carries,
// that no container, volume or network this process made is left.
func assertNothingLeft(t *testing.T, eng *docker.Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	left, err := eng.OwnObjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the run left %d objects in the engine: %v", len(left), left)
	}
}

func runOnDocker(t *testing.T, ctx context.Context, name string, seed int64, progress *lockedBuffer) (*runner.Outcome, error) {
	t.Helper()
	sc, err := spec.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	opts := runner.RunOptions{Seed: seed, Store: t.TempDir(), CacheDir: playCache(t), Backend: spec.BackendDocker}
	if progress != nil {
		opts.Progress = progress
	}
	return runner.Run(ctx, sc, opts)
}

// runBuiltinsOnDocker runs built-in scenarios on containers and checks
// each verdict, that the run records its backend and that nothing of it is
// left in the engine. It returns each run's progress.
func runBuiltinsOnDocker(t *testing.T, eng *docker.Engine, seed int64, want map[string]checker.Verdict) map[string]string {
	t.Helper()
	names := slices.Sorted(maps.Keys(want))
	logs := map[string]string{}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var progress lockedBuffer
			out, err := runOnDocker(t, context.Background(), name, seed, &progress)
			logs[name] = progress.String()
			if err != nil {
				t.Fatalf("%v\nprogress:\n%s", err, progress.String())
			}
			if out.Result.Verdict != want[name] || !out.AsExpected {
				t.Errorf("verdict %s (%s), want %s\nprogress:\n%s", out.Result.Verdict, out.Result.Reason, want[name], progress.String())
			}
			if want[name] == checker.Invalid && len(out.Result.Violations) == 0 {
				t.Errorf("invalid without a violation")
			}
			rec, err := runstore.ReadRecord(out.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Meta.Backend != spec.BackendDocker {
				t.Errorf("meta backend %q, want %q", rec.Meta.Backend, spec.BackendDocker)
			}
			if !strings.Contains(progress.String(), "docker: run ") {
				t.Errorf("progress does not name the docker run:\n%s", progress.String())
			}
			assertAllHealed(t, nemesisOps(t, out.Dir), name+" on docker")
			t.Logf("progress:\n%s", progress.String())
			assertNothingLeft(t, eng)
		})
	}
	return logs
}

// TestDockerBackend plays the runner's Docker cases one after another
// (assertNothingLeft counts every object this process made, so two of
// them side by side would count each other's), as one test beside the
// others: as top-level tests of their own, not parallel, they ran before
// any parallel test of the package started, some 120 s in which the
// package ran nothing else.
func TestDockerBackend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"ClockJump", dockerBackendClockJump},
		{"Failover", dockerBackendFailover},
		{"MixedPersistence", dockerBackendMixedPersistence},
		{"ReplicationLinkFault", dockerReplicationLinkFault},
		{"NodeFaults", dockerBackendNodeFaults},
		{"InterruptedRunLeavesNothing", dockerBackendInterruptedRunLeavesNothing},
		{"LiveRunPublishesNoPassword", liveRunPublishesNoPassword},
	} {
		t.Run(tc.name, tc.run)
	}
}

// The clock-jump counterexample and its control give the same verdicts on
// containers as on local processes: the scenario runs unchanged, its link
// faults through the host's proxies to the containers and its clock jump
// through the shim file mounted into n3's container.
func dockerBackendClockJump(t *testing.T) {
	eng := dockerEngine(t)
	runBuiltinsOnDocker(t, eng, 3, map[string]checker.Verdict{
		"clock-jump":         checker.Invalid,
		"clock-jump-control": checker.Valid,
	})
}

// The failover counterexample runs unchanged on containers: r1 is a
// container replicating from n1 through the harness's proxy (reached
// through the relay on the run's gateway), the replication cut drops the
// stream, n1 is killed, r1 is promoted and grants c2 the lock c1 holds.
func dockerBackendFailover(t *testing.T) {
	eng := dockerEngine(t)
	logs := runBuiltinsOnDocker(t, eng, 5, map[string]checker.Verdict{"failover": checker.Invalid})
	for _, want := range []string{"a replica of n1 through 127.0.0.1:", "r1 ✂ n1", "r1 promoted"} {
		if !strings.Contains(logs["failover"], want) {
			t.Errorf("failover's progress lacks %q", want)
		}
	}
}

// A persistence mode per node on containers: n3 on appendfsync always
// keeps c1's key across its crash and the run is safe; without
// persistence n3 forgets it and c2 gets the lock too.
func dockerBackendMixedPersistence(t *testing.T) {
	eng := dockerEngine(t)
	runBuiltinsOnDocker(t, eng, 5, map[string]checker.Verdict{
		"restart-amnesia-aof-always": checker.Valid,
		"restart-amnesia":            checker.Invalid,
	})
}

// On containers, the replication fault cuts replication for real: a write
// acknowledged by n1 during the cut reaches no replica (WAIT counts none,
// r1 lacks it), the heal brings it over, a promotion makes the clients'
// n1 links reach r1 as a master, and its heal makes r1 follow n1 again.
func dockerReplicationLinkFault(t *testing.T) {
	eng := dockerEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := docker.StartCluster(ctx, eng, cluster.Config{Nodes: 1, Dir: t.TempDir(), CacheDir: playCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.Close(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("close: %v", err)
		}
		assertNothingLeft(t, eng)
	}()
	n1, _ := cl.Container("n1")
	links, err := nemesis.NewNet([]string{"c1"}, []nemesis.Endpoint{{Name: "n1", Addr: n1.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer links.Close()
	via, err := links.AddLink("r1", nemesis.Endpoint{Name: "n1", Addr: n1.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AddReplica(ctx, cluster.ReplicaSpec{Name: "r1", Of: "n1", Via: via}); err != nil {
		t.Fatal(err)
	}
	r1, _ := cl.Container("r1")
	if err := r1.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	m := n1.Admin()
	if err := m.Set(ctx, "replicated", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := waitReplica(ctx, m); err != nil || got != 1 {
		t.Fatalf("WAIT 1 before the cut: %d, %v", got, err)
	}

	rec := &faultLog{}
	nem := nemesis.New(rec)
	cutID, err := nem.Start(ctx, nemesis.Cut{Net: links, Links: []history.Link{{Client: "r1", Node: "n1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Set(ctx, "during", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Do(ctx, "wait", 1, 300).Int(); err != nil || got != 0 {
		t.Errorf("WAIT 1 during the cut: %d replicas, %v; want 0", got, err)
	}
	if err := r1.Admin().Get(ctx, "during").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("r1 has the write made during the cut: %v", err)
	}
	if err := nem.Stop(ctx, cutID); err != nil {
		t.Fatal(err)
	}
	if got, err := waitReplica(ctx, m); err != nil || got != 1 {
		t.Errorf("WAIT 1 after the heal: %d, %v; want r1 back", got, err)
	}
	if v, err := r1.Admin().Get(ctx, "during").Result(); err != nil || v != "v" {
		t.Errorf("r1 after the heal: GET = %q, %v; want the write", v, err)
	}

	// Promotion: c1's n1 link now reaches r1, a master.
	if _, err := nem.Start(ctx, nemesis.Promote{Net: links, Replica: r1, Links: []history.Link{{Client: "c1", Node: "n1"}}}); err != nil {
		t.Fatal(err)
	}
	addr, err := links.Addr("c1", "n1")
	if err != nil {
		t.Fatal(err)
	}
	c1 := redis.NewClient(&redis.Options{Addr: addr, Password: cl.Password(), MaxRetries: -1})
	defer c1.Close()
	info, err := c1.Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "role:master") || !strings.Contains(info, "connected_slaves:0") {
		t.Errorf("c1's n1 link after the promotion: %v\n%s", err, info)
	}
	if err := c1.Set(ctx, "on-r1", "v", 0).Err(); err != nil {
		t.Errorf("SET through c1's link on the promoted r1: %v", err)
	}
	if err := nem.HealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if r1.ReplicaOf() != via {
		t.Errorf("after heal r1 follows %q, want %s", r1.ReplicaOf(), via)
	}
	if err := r1.WaitSynced(ctx); err != nil {
		t.Fatalf("r1 does not follow n1 again: %v", err)
	}
	if err := r1.Admin().Get(ctx, "on-r1").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("r1 kept its own write after following n1 again: %v", err)
	}
}

// waitReplica waits until a replica acknowledges the master's writes, or
// ctx ends: WAIT 1 in turns of 500 ms, each within the admin client's 1 s
// read timeout (one WAIT 1 60000 timed out at 1 s on a busy machine while
// the replica was still catching up).
func waitReplica(ctx context.Context, m *redis.Client) (int, error) {
	for {
		got, err := m.Do(ctx, "wait", 1, 500).Int()
		if err != nil || got >= 1 || ctx.Err() != nil {
			return got, err
		}
	}
}

// faultLog records the nemesis's events for dockerReplicationLinkFault.
type faultLog struct {
	mu     sync.Mutex
	events []history.Event
}

func (l *faultLog) Record(e history.Event) history.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	return e
}

// The node faults of a scenario go through the engine on Docker: kill and
// start, stop with amnesia (the AOF volume replaced), pause and resume,
// the clock strobe and reset, and a random schedule mixing them with
// partitions. Each is recorded and healed, and nothing is left.
func dockerBackendNodeFaults(t *testing.T) {
	eng := dockerEngine(t)
	sc := parse(t, `name: docker-faults
expect: any
cluster: {nodes: 3, persistence: aof-always}
lock: {ttl: 2s, node_timeout: 500ms}
workload: {clients: 2}
steps:
  - acquire: {client: c1}
  - kill: {node: n3, for: 0s}
  - kill: {node: n1, amnesia: true, for: 0s}
  - stop: {node: n2, amnesia: true}
  - restart: {node: n2}
  - pause: {node: n1}
  - resume: {node: n1}
  - strobe: {node: n2, delta: 2s, period: 10ms, for: 50ms}
  - clock-reset: {}
  - release: {client: c1}
  - random: {faults: [partition, clock, pause, kill, amnesia], interval: 300ms, duration: 50ms..150ms, for: 2s}
  - acquire: {client: c2}
  - heal: all
`)
	progress := &lockedBuffer{}
	out, err := runner.Run(context.Background(), sc, runner.RunOptions{Seed: 4, Store: t.TempDir(), CacheDir: playCache(t), Backend: spec.BackendDocker, Progress: progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("progress:\n%s", progress.String())
	fs := nemesisOps(t, out.Dir)
	assertAllHealed(t, fs, "docker")
	healed := map[string]int{}
	for _, f := range fs {
		if f.Phase == history.PhaseStop {
			healed[f.Kind]++
		}
	}
	for _, k := range []string{fault.KindKill, fault.KindStop, fault.KindPause, fault.KindClockStrobe, fault.KindClockReset} {
		if healed[k] == 0 {
			t.Errorf("no %s healed", k)
		}
	}
	if healed[fault.KindKill] < 2 {
		t.Errorf("%d kills healed, want at least the script's 2", healed[fault.KindKill])
	}
	assertNothingLeft(t, eng)
}

// A run cancelled in the middle (Ctrl-C) still removes its containers,
// volumes and network, and its verdict is not valid.
func dockerBackendInterruptedRunLeavesNothing(t *testing.T) {
	eng := dockerEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &lockedBuffer{onWrite: func(s string) {
		// Cancel once c1 holds the lock: the nodes are up and a fault is
		// active.
		if strings.Contains(s, "c1 acquire") {
			cancel()
		}
	}}
	out, err := runOnDocker(t, ctx, "clock-jump", 5, progress)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	if ctx.Err() == nil {
		t.Fatalf("the run ended without being interrupted:\n%s", progress.String())
	}
	if out.Result.Verdict == checker.Valid {
		t.Errorf("interrupted run judged valid; want unknown\nprogress:\n%s", progress.String())
	}
	t.Logf("verdict %s (%s)\nprogress:\n%s", out.Result.Verdict, out.Result.Reason, progress.String())
	assertNothingLeft(t, eng)
}

// An unknown backend is an error naming the valid ones.
func TestUnknownBackend(t *testing.T) {
	t.Parallel()
	sc, err := spec.Load("clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	_, err = runner.Run(context.Background(), sc, runner.RunOptions{Seed: 1, Store: t.TempDir(), CacheDir: playCache(t), Backend: "vm"})
	if err == nil || !strings.Contains(err.Error(), `backend "vm"`) || !strings.Contains(err.Error(), "docker") {
		t.Errorf("error %v, want one naming backend \"vm\" and the valid ones", err)
	}
}

// lockedBuffer collects a run's progress lines, which come from the
// runner's goroutines.
type lockedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	onWrite func(string)
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.buf.Write(p)
	b.mu.Unlock()
	if b.onWrite != nil {
		b.onWrite(string(p))
	}
	return n, err
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
