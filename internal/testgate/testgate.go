// Package testgate holds a test's plays back while the machine's CPUs are
// busy, as a suite holds its plays (internal/loadgate).
//
// make test runs several packages at once, each with several tests at
// once. Most of a play is waiting (on TTLs, faults, a lease's expiry), so
// many fit on two cores; but the plays' timing margins (a node timeout, a
// lease extended a second before its end) stretch once the CPUs are
// saturated, and then verdicts change. How many plays fit depends on the
// machine (machines of the kind differ by twice in the cost of a process
// start) and on what else runs: the compiling at the start, a ZooKeeper
// ensemble against five idle Redis nodes. A fixed -parallel is either slow
// on a fast machine or unsafe on a slow one, so go test's limits are set
// high and each play passes this gate first. The gate reads the whole
// machine's CPU counters, so the packages' test processes, each with a
// gate of its own, see one another's load.
package testgate

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"splitbrain/internal/loadgate"
)

const (
	// busy is the share of the CPUs in use at or above which a play
	// waits: well below the suite's 94 %, since here the compiling and
	// the test binaries' own work, which no gate holds, share the machine,
	// and the plays already running need room for their bursts (a fresh-
	// clone CI at 90 % with a floor of 3 ran the CPUs 95 % busy, and two
	// timing-bound runner tests missed).
	busy = 0.8
	// floor plays run in each test process whatever the load, so that
	// every package progresses on a machine busy with other work: one, as
	// while a separate vet compiled before the tests none ran at all.
	floor = 1
	// spacing lets what a play's start costs show in the load before the
	// next start is decided.
	spacing = 100 * time.Millisecond
)

var (
	once    sync.Once
	gate    *loadgate.Gate
	gateErr error
	running atomic.Int64
)

// Enter waits until the machine's CPUs have room for one more play, then
// counts t's play as running until t ends. Time at a lowered priority
// (make test's fuzzing, at nice 10) counts as free: it gives way.
func Enter(t testing.TB) {
	t.Helper()
	once.Do(func() {
		gate, gateErr = loadgate.New(loadgate.Options{Busy: busy, Floor: floor, Spacing: spacing, Read: loadgate.ReadProcStatNiceIdle})
	})
	if gateErr != nil {
		t.Fatalf("test gate: %v", gateErr)
	}
	began := time.Now()
	if err := gate.Wait(t.Context(), func() int { return int(running.Load()) }); err != nil {
		t.Fatalf("test gate: %v", err)
	}
	if waited := time.Since(began); waited >= time.Second {
		// Said, so that a play's timing reads against the load it met.
		t.Logf("test gate: waited %v for the CPUs (load %.0f %%)", waited.Round(100*time.Millisecond), 100*gate.Load())
	}
	running.Add(1)
	t.Cleanup(func() { running.Add(-1) })
}
