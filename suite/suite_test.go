package suite

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"splitbrain/locks"
	"splitbrain/scenarios/spec"
)

func TestCellsAndFamilies(t *testing.T) {
	t.Parallel()
	var scs []*spec.Scenario
	for _, n := range []string{"clock-jump", "clock-jump-control", "failover", "restart-delayed", "pause-critical-section", "delayed-write", "random-kill-set"} {
		sc, err := spec.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	fams := FamiliesOf(scs)
	for name, want := range map[string]Family{
		"clock-jump": FamilyClock, "clock-jump-control": FamilyClock, // the control joins its story
		"failover": FamilyFailover, "restart-delayed": FamilyRestart,
		"pause-critical-section": FamilyPause,
		"delayed-write":          FamilyDelay, "random-kill-set": FamilyRandom,
	} {
		if fams[name] != want {
			t.Errorf("%s: family %q, want %q", name, fams[name], want)
		}
	}
	cells := Cells(scs, locks.Matrix())
	if len(cells) != len(scs)*len(locks.Matrix()) {
		t.Fatalf("%d cells, want %d", len(cells), len(scs)*len(locks.Matrix()))
	}
	for _, c := range cells {
		if c.Scenario.Lock.Kind != c.Lock || len(c.Scenario.Locks) != 1 {
			t.Errorf("%s/%s plays %s %v", c.Scenario.Name, c.Lock, c.Scenario.Lock.Kind, c.Scenario.Locks)
		}
		// A family: each lock plays its deployment's variant, and the
		// storage fences wherever the lock hands out tokens (fencing:
		// auto).
		if c.Scenario.Name == "pause-critical-section" {
			wantNodes := 5
			if locks.Consensus(c.Lock) {
				wantNodes = locks.EnsembleNodes
			}
			if c.NA != "" || c.Scenario.Nodes != wantNodes || c.Scenario.Workload.Fencing != locks.FencedKind(c.Lock) {
				t.Errorf("%s/%s: n/a %q, %d nodes, fencing %v", c.Scenario.Name, c.Lock, c.NA, c.Scenario.Nodes, c.Scenario.Workload.Fencing)
			}
		}
	}
}

// The first run plays the suite's seed itself; the others are distinct,
// non-negative, the same for every lock and scenario, and a function of
// the suite's seed and the run alone.
func TestPlaySeed(t *testing.T) {
	t.Parallel()
	if PlaySeed(5, 0) != 5 {
		t.Errorf("run 0 of seed 5 plays %d", PlaySeed(5, 0))
	}
	seen := map[int64]bool{}
	for _, seed := range []int64{0, 1, 5, 6, 1 << 62} {
		for run := range 50 {
			s := PlaySeed(seed, run)
			if s < 0 || (run > 0 && seen[s]) {
				t.Fatalf("PlaySeed(%d, %d) = %d: negative or seen before", seed, run, s)
			}
			seen[s] = true
			if PlaySeed(seed, run) != s {
				t.Fatal("not a function of its arguments")
			}
		}
	}
}

// A suite starts its longest plays first: ensembles and Sentinel cost
// their start on top of the story's own time, a generated workload runs
// its duration or the waits beside it, whichever is longer.
func TestEstimateAndPlayOrder(t *testing.T) {
	t.Parallel()
	est := func(story, lock string) time.Duration {
		t.Helper()
		sc, err := spec.Load(story)
		if err != nil {
			t.Fatal(err)
		}
		return Estimate(sc.PlayAgainst(lock))
	}
	for _, tc := range []struct {
		story, lock string
		want        time.Duration
	}{
		{"clock-jump", locks.Redlock.Name, time.Second},                        // wait: 1s
		{"restart-delayed", locks.Redlock.Name, 3500 * time.Millisecond},       // 2500ms + 1s
		{"random-kill-counter", locks.Redlock.Name, 5500 * time.Millisecond},   // workload 5.5s > 250ms + 5s
		{"consensus-lease-expires-waiting", locks.Etcd.Name, 12 * time.Second}, // workload 10s, + 2s for the ensemble
		{"sentinel-failover", locks.Single.Name, 4200 * time.Millisecond},      // until promoted 1s + 200ms, + 3s for Sentinel
	} {
		if got := est(tc.story, tc.lock); got != tc.want {
			t.Errorf("Estimate(%s against %s) = %v, want %v", tc.story, tc.lock, got, tc.want)
		}
	}

	var scs []*spec.Scenario
	for _, n := range []string{"clock-jump", "random-kill-counter", "consensus-lease-expires-waiting", "clock-jump-control"} {
		scs = append(scs, loadConsensusOnly(t, n))
	}
	cells := Cells(scs, []string{locks.Redlock.Name, locks.Etcd.Name})
	var got []string
	for _, i := range PlayOrder(cells) {
		got = append(got, cells[i].Scenario.Name+"/"+cells[i].Lock)
	}
	want := []string{
		"random-kill-counter/etcd",             // 12.5s: its ensemble's workload 10.5s, + 2s
		"random-kill-counter/redlock",          // 5.5s
		"clock-jump/redlock",                   // 1s, before the control by the cells' order
		"consensus-lease-expires-waiting/etcd", // 12s, but the second ensemble play goes halfway
		"clock-jump-control/redlock",           // 1s
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("play order %v, want %v (n/a cells left out)", got, want)
	}

	// Ensemble plays are spread evenly among the others (here 3 among 12:
	// the first first, the others at 12/3 and 2·12/3), longest first in
	// each kind.
	scs = scs[:0]
	for _, n := range []string{"restart-amnesia-aof-always", "consensus-lease-expires-waiting", "random-kill-counter", "clock-jump"} {
		scs = append(scs, loadConsensusOnly(t, n))
	}
	cells = Cells(scs, []string{locks.Redlock.Name, locks.Redsync.Name, locks.Naive.Name, locks.Etcd.Name})
	got = got[:0]
	for _, i := range PlayOrder(cells) {
		got = append(got, cells[i].Scenario.Name+"/"+cells[i].Lock)
	}
	want = []string{
		"random-kill-counter/etcd",    // 12.5s
		"random-kill-counter/redlock", // 5.5s
		"random-kill-counter/redsync",
		"random-kill-counter/naive",
		"restart-amnesia-aof-always/etcd", // 12s, before the other 12s by the cells' order, at 12/3
		"restart-amnesia-aof-always/redlock",
		"restart-amnesia-aof-always/redsync",
		"restart-amnesia-aof-always/naive",
		"consensus-lease-expires-waiting/etcd", // 12s, at 2·12/3
		"clock-jump/redlock",
		"clock-jump/redsync",
		"clock-jump/naive",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("play order %v, want %v (n/a cells left out)", got, want)
	}
}

// loadConsensusOnly loads built-in story name; the lease-expires story
// with its expectations for the consensus locks alone (as it was written:
// its default, for the Redis locks, came later), so that it stands for a
// story that fits only ensembles.
func loadConsensusOnly(t *testing.T, name string) *spec.Scenario {
	t.Helper()
	sc, err := spec.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if name == "consensus-lease-expires-waiting" {
		delete(sc.Expects, spec.ExpectDefault)
	}
	return sc
}

// A plan's cells are Cells' with a backend that does not exist marked
// n/a; what must be ready is the backends of the cells played, once each.
func TestPlan(t *testing.T) {
	t.Parallel()
	var scs []*spec.Scenario
	for _, n := range []string{"sentinel-failover", "failover"} {
		sc, err := spec.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	locks := []string{locks.Redlock.Name, locks.Single.Name}
	p := NewPlan(scs, locks, "")
	if len(p.Cells) != 4 {
		t.Fatalf("%d cells, want 4", len(p.Cells))
	}
	// Every cell plays (redlock over the one Sentinel-managed master).
	if played, na := p.Played(); played != 4 || na != 0 {
		t.Errorf("played %d, n/a %d; want 4 and 0", played, na)
	}
	// A story that does not fit a lock is n/a: the lease-expires story,
	// its expectation for the consensus locks alone.
	sc := loadConsensusOnly(t, "consensus-lease-expires-waiting")
	if played, na := NewPlan([]*spec.Scenario{sc}, locks, "").Played(); played != 0 || na != 2 {
		t.Errorf("consensus-lease-expires-waiting against redlock and single: played %d, n/a %d; want 0 and 2", played, na)
	}
	if got := p.Backends(); !reflect.DeepEqual(got, []string{spec.BackendLocal}) {
		t.Errorf("backends %v, want [local]", got)
	}
	p = NewPlan(scs, locks, "nowhere")
	if played, na := p.Played(); played != 0 || na != 4 {
		t.Errorf("on a backend that does not exist: played %d, n/a %d; want 0 and 4", played, na)
	}
	for _, c := range p.Cells {
		if c.Scenario.Name == "failover" && c.NA != `backend "nowhere": want one of [local docker]` {
			t.Errorf("%s/%s: n/a %q, want the backend's refusal", c.Scenario.Name, c.Lock, c.NA)
		}
	}
	if got := p.Backends(); len(got) != 0 {
		t.Errorf("backends %v, want none (nothing plays)", got)
	}
	if got, want := Seeds(5, 3), []int64{5, PlaySeed(5, 1), PlaySeed(5, 2)}; !reflect.DeepEqual(got, want) {
		t.Errorf("Seeds(5, 3) = %v, want %v", got, want)
	}
}

// A family's cell states the expectation of the shape its lock plays:
// pause-critical-section's ensemble says what it expects of curator, not
// the family's default (the FLAKY line of a suite printed the default).
func TestAssembleExpectsTheShapes(t *testing.T) {
	t.Parallel()
	sc, err := spec.Load("pause-critical-section")
	if err != nil {
		t.Fatal(err)
	}
	ls := []string{locks.Curator.Name, locks.Redlock.Name}
	m := Assemble(nil, []*spec.Scenario{sc}, ls)
	for _, c := range m.Cells {
		if want := string(sc.PlayAgainst(c.Lock).Expect); c.Expect != want {
			t.Errorf("%s against %s: cell expects %q, the play %q", c.Scenario, c.Lock, c.Expect, want)
		}
	}
	if len(m.Cells) != len(ls) {
		t.Errorf("%d cells, want %d", len(m.Cells), len(ls))
	}
}

// A sweep of the TTL plays each point at its TTL: a lock that cannot take
// one (malkusch/lock: 2 s at the least) sits that point out rather than
// play it slowed down to another.
func TestTTLSweepPointsALockCannotTake(t *testing.T) {
	t.Parallel()
	sc, err := spec.Load("clock-rate-drift")
	if err != nil {
		t.Fatal(err)
	}
	sw, err := spec.NewSweep("ttl", []string{"1s", "2s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := NewSweepPlan(sc, sw, []string{locks.Redlock.Name, locks.MalkuschRedlock.Name}, "")
	if err != nil {
		t.Fatal(err)
	}
	// Each cell: its lock, the TTL it would play at, whether it is n/a.
	var got []string
	for _, c := range sp.Cells {
		got = append(got, fmt.Sprintf("%s %v na=%v", c.Lock, c.Scenario.Lock.TTL, c.NA != ""))
	}
	if !reflect.DeepEqual(got, []string{"redlock 1s na=false", "malkusch-redlock 2s na=true", "redlock 2s na=false", "malkusch-redlock 2s na=false"}) {
		t.Errorf("cells %q", got)
	}
}
