// Package runner plays one scenario that package spec has read, on the
// local or the Docker backend, in three phases: set-up (setup*.go: the
// backend's nodes, the proxies, the replicas and Sentinel, the storage,
// the lock clients and their drivers), play (play*.go: the steps, the
// faults, the generated workload, the conditions waited for) and
// tear-down (teardown.go); then the checker's verdict and the report
// (run.go). Which stories fit which locks is package fit's; the suite,
// which plays many scenarios, and its matrix are package suite's.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/checker"
	"splitbrain/cluster"
	"splitbrain/history"
	"splitbrain/internal/private"
	"splitbrain/nemesis"
	"splitbrain/pages"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
	"splitbrain/workload"
)

// RunOptions configures one run of a scenario.
type RunOptions struct {
	// Seed is the run's only source of randomness for the workload and the
	// nemesis; the same seed replays the same draws.
	Seed int64
	// Store is the folder runs are written to.
	Store string
	// CacheDir holds the clock shim and the live-run registry; empty means
	// the default.
	CacheDir string
	// Command re-runs this exact run; empty means
	// "splitbrain run <name> --seed <seed>".
	Command string
	// Progress receives one line per step, and a generated workload's
	// progress every ProgressEvery; nil discards them.
	Progress io.Writer
	// ProgressEvery is how often a generated workload reports; zero means
	// DefaultProgressEvery, negative never.
	ProgressEvery time.Duration
	// Backend is where the nodes run: "local" or "docker"; empty means the
	// scenario file's cluster.backend, and local if it names none.
	Backend string
	// NoIndex leaves the store's index alone: the caller refreshes it
	// (a suite does, now and then and at its end).
	NoIndex bool
	// ReplayOf names the run folder of the play this one plays again
	// (runstore.Meta.ReplayOf); empty for a first play.
	ReplayOf string
}

// Outcome is what a run found and where it left its files.
type Outcome struct {
	Dir        string
	Result     checker.Result
	AsExpected bool
}

// cleanupTimeout bounds the heal and shutdown at the end of a run, which
// must happen even after Ctrl-C.
const cleanupTimeout = 30 * time.Second

// Run runs sc: it starts the cluster, the proxies and the clients, plays the
// steps, heals every fault, stops everything, checks the history and writes
// the report. When ctx is cancelled (Ctrl-C) it stops playing steps but still
// cleans up, checks what was recorded and writes the report; the verdict is
// then invalid if a violation was recorded and unknown otherwise.
//
// The error is for failures of the harness itself (no redis-server, a fault
// that could not be injected); the outcome is returned whenever a run
// folder was made, even with an error.
func Run(ctx context.Context, sc *spec.Scenario, opts RunOptions) (*Outcome, error) {
	started := time.Now()
	// A lock that cannot be asked for the story's TTL plays it slowed
	// down (a play made by PlayAgainst is already).
	sc = sc.Slowed(sc.LockKind())
	dir, err := runstore.NewRunDir(opts.Store, sc.Name, started)
	if err != nil {
		return nil, err
	}
	// The harness's own log, beside the nodes' logs: written line by line
	// (no buffer), so that a harness killed mid-run leaves what it did and
	// where it stopped next to the history it cut short.
	hlog, err := openHarnessLog(dir)
	if err != nil {
		return nil, err
	}
	defer hlog.Close()
	if err := writeScenarioFile(dir, sc); err != nil {
		return nil, err
	}
	rec, err := history.Create(filepath.Join(dir, runstore.HistoryFile))
	if err != nil {
		return nil, err
	}
	// Steps and the workload's progress log from their own goroutines.
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		line := fmt.Sprintf("%7.3fs  %s\n", time.Duration(rec.Now()).Seconds(), fmt.Sprintf(format, args...))
		logMu.Lock()
		defer logMu.Unlock()
		_, _ = io.WriteString(hlog, line)
		if opts.Progress != nil {
			_, _ = io.WriteString(opts.Progress, line)
		}
	}
	// Lines the caller prints itself go to the log only.
	hlogf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		_, _ = fmt.Fprintf(hlog, "%7.3fs  %s\n", time.Duration(rec.Now()).Seconds(), fmt.Sprintf(format, args...))
	}
	backend := Backend(opts.Backend, sc.Backend)
	hlogf("scenario %s (%s), lock %s, backend %s, seed %d", sc.Name, sc.File, sc.Lock.Kind, backend, opts.Seed)
	if sc.ScaleWhy != "" {
		logf("%s", sc.ScaleWhy)
	}

	r := &runner{sc: sc, rec: rec, logf: logf, seed: opts.Seed, progressEvery: opts.ProgressEvery,
		nemRand: rand.New(rand.NewPCG(uint64(opts.Seed), spec.StreamNemesis)),
		wlRand:  rand.New(rand.NewPCG(uint64(opts.Seed), spec.StreamWorkload)),
	}
	runErr := r.setUp(ctx, dir, opts.CacheDir, backend)
	if runErr == nil {
		runErr = r.recordLockSetup()
	}
	if runErr == nil {
		stop := r.watchStalls(ctx)
		runErr = r.play(ctx)
		stop()
	}
	// A step that did not go as scripted is an outcome of the run, not a
	// failure of the harness: no error, but no valid verdict either.
	var notAsScripted *ExpectError
	if errors.As(runErr, &notAsScripted) {
		runErr = nil
		if ctx.Err() == nil {
			// An acquire cut short by Ctrl-C is refused too; that run
			// was interrupted, not played otherwise than scripted.
			logf("the run did not go as scripted: %v", notAsScripted)
		}
	}
	// Interrupted (Ctrl-C), whatever the start or a step was waiting for
	// ends with the context: nodes "not ready: context canceled". That is
	// the interrupt, not a failure of the harness; the run is judged as
	// any interrupted run (unknown, exit 2), the error kept in its log.
	var cutShort error
	if runErr != nil && ctx.Err() != nil {
		cutShort, runErr = runErr, nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	cleanErr := r.tearDown(cctx)
	cancel()
	incomplete := ""
	switch {
	case notAsScripted != nil && ctx.Err() == nil:
		incomplete = "the run did not go as scripted: " + notAsScripted.Error()
	case runErr != nil:
		incomplete = "the run failed: " + runErr.Error()
	case ctx.Err() != nil:
		incomplete = "the run was interrupted before its last step"
	case r.drivers.broken() != nil:
		// Every request after the breach was unknown: what the lock did
		// is not in the history.
		incomplete = "a lock driver broke: " + r.drivers.broken().Error()
	}
	if cutShort != nil {
		hlogf("interrupted: %v", cutShort)
	}
	for _, e := range []error{runErr, cleanErr} {
		if e != nil {
			hlogf("error: %v", e)
		}
	}
	// The last event says the run got this far; a history that lacks it
	// was cut short by a crash (see history.Unfinished).
	rec.Record(history.Event{Process: history.ProcessHarness, Type: history.Info, F: history.End, Err: incomplete})
	events := rec.TakeEvents()
	if err := rec.Close(); err != nil {
		cleanErr = errors.Join(cleanErr, err)
	}

	// The liveness promises the play expects decide its verdict; the
	// others are reported.
	checkOpts := checker.CheckOptions(string(sc.Expect))
	if incomplete != "" {
		checkOpts = append(checkOpts, checker.Incomplete(incomplete))
	}
	res := checker.Check(events, checkOpts...)
	hlogf("verdict %s: %s", res.Verdict, res.Reason)
	cmd := opts.Command
	if cmd == "" {
		cmd = fmt.Sprintf("splitbrain run %s --seed %d", sc.Name, opts.Seed)
	}
	meta := runstore.Meta{
		Scenario:    sc.Name,
		Description: sc.Description,
		Lock:        sc.Lock.Kind,
		Seed:        opts.Seed,
		Nodes:       r.nodeNames(),
		Clients:     sc.Clients,
		TTL:         sc.Lock.TTL,
		Started:     started,
		Duration:    time.Since(started),
		Expect:      string(sc.Expect),
		Command:     cmd,
		Backend:     backend,
		Belief:      belief(sc),
		Slowed:      sc.ScaleWhy,
		Library:     r.drivers.library(),
		ReplayOf:    opts.ReplayOf,
	}
	write := pages.Write
	if opts.NoIndex {
		write = pages.WriteRun
	}
	writeErr := write(dir, meta, events, res)
	out := &Outcome{Dir: dir, Result: res, AsExpected: checker.Met(meta.Expect, res)}
	return out, errors.Join(runErr, cleanErr, writeErr)
}

type runner struct {
	sc      *spec.Scenario
	rec     *history.Recorder
	logf    func(string, ...any)
	nemRand *rand.Rand
	wlRand  *rand.Rand
	seed    int64
	// progressEvery: see RunOptions.ProgressEvery.
	progressEvery time.Duration

	cluster cluster.Backend
	net     *nemesis.Net
	nem     *nemesis.Nemesis
	clients map[string]*workload.Client
	conns   []*redis.Client
	wl      workloadRun
	faults  faultRig
	// sentinel is set when the scenario runs Sentinel.
	sentinel *sentinelRig
	// closers close the consensus locks' client sessions.
	closers []func()
	// drivers are the clients' driver processes, for the driver kinds.
	drivers          *driverRig
	runDir, cacheDir string
}

func (r *runner) nodeNames() []string {
	var out []string
	for i := 1; i <= r.sc.Nodes; i++ {
		out = append(out, fmt.Sprintf("n%d", i))
	}
	return out
}

func (r *runner) nodeList() string {
	var parts []string
	for _, n := range r.cluster.Nodes() {
		parts = append(parts, n.Name()+"="+n.Addr())
	}
	return strings.Join(parts, " ")
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// ScenarioFile is the scenario file a play was made from, kept in its run
// folder: with the lock, seed and backend in result.json it makes the
// folder self-contained, and `splitbrain matrix` reads it to place the
// play in its family and to say which locks the story does not fit.
const ScenarioFile = "scenario.yaml"

func writeScenarioFile(dir string, sc *spec.Scenario) error {
	if sc.Source == nil {
		return nil // built in Go, not parsed
	}
	if err := private.WriteFile(filepath.Join(dir, ScenarioFile), sc.Source, 0o644); err != nil {
		return fmt.Errorf("run folder: %w", err)
	}
	return nil
}

// HarnessLog is the harness's own log of a run, beside the nodes' logs.
const HarnessLog = "logs/harness.log"

func openHarnessLog(dir string) (*os.File, error) {
	path := filepath.Join(dir, HarnessLog)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("harness log: %w", err)
	}
	f, err := private.Append(path)
	if err != nil {
		return nil, fmt.Errorf("harness log: %w", err)
	}
	return f, nil
}
