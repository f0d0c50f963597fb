package scenarios_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/docker"
	"splitbrain/history"
	"splitbrain/nemesis"
	"splitbrain/results"
	"splitbrain/scenarios"
)

// dockerEngine connects to this machine's Docker engine, or skips the test
// when none answers.
func dockerEngine(t *testing.T) *docker.Engine {
	t.Helper()
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

func runOnDocker(t *testing.T, ctx context.Context, name string, seed int64, progress *lockedBuffer) (*scenarios.Outcome, error) {
	t.Helper()
	sc, err := scenarios.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	opts := scenarios.RunOptions{Seed: seed, Store: t.TempDir(), CacheDir: t.TempDir(), Backend: scenarios.BackendDocker}
	if progress != nil {
		opts.Progress = progress
	}
	return scenarios.Run(ctx, sc, opts)
}

// The clock-jump counterexample and its control give the same verdicts on
// containers as on local processes: the scenario runs unchanged, its link
// faults through the host's proxies to the containers and its clock jump
// through the shim file mounted into n3's container. Nothing of either run
// is left in the engine, and the run records its backend.
func TestDockerBackendClockJump(t *testing.T) {
	eng := dockerEngine(t)
	for _, tc := range []struct {
		scenario string
		want     checker.Verdict
	}{
		{"clock-jump", checker.Invalid},
		{"clock-jump-control", checker.Valid},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			var progress lockedBuffer
			out, err := runOnDocker(t, context.Background(), tc.scenario, 3, &progress)
			if err != nil {
				t.Fatalf("%v\nprogress:\n%s", err, progress.String())
			}
			if out.Result.Verdict != tc.want || !out.AsExpected {
				t.Errorf("verdict %s (%s), want %s\nprogress:\n%s", out.Result.Verdict, out.Result.Reason, tc.want, progress.String())
			}
			if tc.want == checker.Invalid && len(out.Result.Violations) == 0 {
				t.Errorf("invalid without a violation")
			}
			rec, err := results.ReadRecord(out.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Meta.Backend != scenarios.BackendDocker {
				t.Errorf("meta backend %q, want %q", rec.Meta.Backend, scenarios.BackendDocker)
			}
			if !strings.Contains(progress.String(), "docker: run ") {
				t.Errorf("progress does not name the docker run:\n%s", progress.String())
			}
			t.Logf("progress:\n%s", progress.String())
			assertNothingLeft(t, eng)
		})
	}
}

// The node faults of a scenario go through the engine on Docker: kill and
// start, stop with amnesia (the AOF volume replaced), pause and resume,
// the clock strobe and reset, and a random schedule mixing them with
// partitions. Each is recorded and healed, and nothing is left.
func TestDockerBackendNodeFaults(t *testing.T) {
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
	out, err := scenarios.Run(context.Background(), sc, scenarios.RunOptions{Seed: 4, Store: t.TempDir(), CacheDir: t.TempDir(), Backend: scenarios.BackendDocker, Progress: progress})
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
	for _, k := range []string{nemesis.KindKill, nemesis.KindStop, nemesis.KindPause, nemesis.KindClockStrobe, nemesis.KindClockReset} {
		if healed[k] == 0 {
			t.Errorf("no %s healed", k)
		}
	}
	if healed[nemesis.KindKill] < 2 {
		t.Errorf("%d kills healed, want at least the script's 2", healed[nemesis.KindKill])
	}
	assertNothingLeft(t, eng)
}

// A run cancelled in the middle (Ctrl-C) still removes its containers,
// volumes and network, and its verdict is not valid.
func TestDockerBackendInterruptedRunLeavesNothing(t *testing.T) {
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

// What only the local backend has (replicas, a persistence mode per node)
// fails a docker run before anything is started, naming the file, the
// field and the way out, rather than running a different scenario.
func TestDockerBackendRejectsWhatItLacks(t *testing.T) {
	for _, tc := range []struct {
		name, cluster string
		want          []string
	}{
		{"mixed persistence", "persistence: {default: none, n3: aof-always}",
			[]string{"cluster.persistence", "aof-always, none", "--backend local"}},
		{"replicas", "replicas: [n1]",
			[]string{"cluster.replicas", "cannot start replicas", "--backend local"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenarios.Parse([]byte(`name: lacking
expect: safe
cluster:
  nodes: 3
  `+tc.cluster+`
lock:
  kind: redlock
  ttl: 2s
workload:
  clients: 1
steps:
  - acquire: {client: c1}
`), "lacking.yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, err = scenarios.Run(context.Background(), sc, scenarios.RunOptions{Seed: 1, Store: t.TempDir(), CacheDir: t.TempDir(), Backend: scenarios.BackendDocker})
			if err == nil {
				t.Fatal("docker run: no error")
			}
			for _, want := range append([]string{"lacking.yaml"}, tc.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// An unknown backend is an error naming the valid ones.
func TestUnknownBackend(t *testing.T) {
	sc, err := scenarios.Load("clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	_, err = scenarios.Run(context.Background(), sc, scenarios.RunOptions{Seed: 1, Store: t.TempDir(), CacheDir: t.TempDir(), Backend: "vm"})
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
