package scenarios

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"splitbrain/history"
	"splitbrain/locks"
	"splitbrain/scenarios/spec"
)

// Fit is read off the scenario, on both sides of each rule's edge.
func TestFit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		story, lock string
		why         string // empty: fits
	}{
		{"clock-jump", spec.LockRedlock, ""},
		{"clock-jump", spec.LockRedsync, ""},
		{"clock-jump", spec.LockSingle, "act on part of its 5 nodes (n4+n5, n3, n1+n2)"},
		{"restart-amnesia", spec.LockSingle, "quorum story"},
		{"failover", spec.LockSingle, ""}, // one node: nothing singled out
		{"failover", spec.LockRedsync, ""},
		{"pause-critical-section", spec.LockSingle, ""}, // c2 cut from every node
		{"delayed-write", spec.LockSingle, ""},          // the storage is not a lock node
		{"pause-critical-section-fenced", spec.LockFencedSimple, ""},
		{"pause-critical-section-fenced", spec.LockFencedTwoRound, ""},
		{"pause-critical-section-fenced", spec.LockRedlock, "hands out none"},
		{"delayed-write-fenced", spec.LockRedsync, "workload.fencing on"},
		{"random-all-counter", spec.LockSingle, ""}, // drawn targets single out none in advance
		{"random-pause-set", spec.LockNaive, ""},
		{"clock-jump", "chubby", "not a lock kind"},
		// A lock of one deployment is single's case.
		{"clock-jump", spec.LockRedislock, "quorum story: its steps act on part of its 5 nodes (n4+n5, n3, n1+n2), and redislock locks n1 alone"},
		{"restart-delayed", spec.LockRedislock, "quorum story"},
		{"failover", spec.LockRedislock, ""},
		{"pause-during-acquire", spec.LockRedislock, ""},
		{"delayed-write-fenced", spec.LockRedislock, "hands out none"},
		{"random-clock-set", spec.LockRedislock, ""},
		{"failover-wait", spec.LockWaitReplicas, ""},
		// A Sentinel story: the locks of one deployment, no quorum lock.
		{"sentinel-failover", spec.LockSingle, ""},
		{"sentinel-failover", spec.LockWaitReplicas, ""},
		{"sentinel-failover", spec.LockRedlock, "a Sentinel story"},
		{"sentinel-failover", spec.LockRedsync, "redsync is a quorum lock"},
		// rueidislock under Sentinel: rueidis' own Sentinel client.
		{"sentinel-failover", spec.LockRueidislock, ""},
		{"sentinel-partition", spec.LockRueidislock, ""},
		{"sentinel-partition", spec.LockRedisPy, "a driver"},
		// partition-holder names only the locks of one deployment.
		{"partition-holder", spec.LockRueidislock, ""},
		{"partition-holder", spec.LockRedlock, "no expectation for redlock"},
		// server-clock-ahead's default fits every Redis lock on its one node.
		{"server-clock-ahead", spec.LockRedsync, ""},
		{"server-clock-ahead", spec.LockRueidislock, ""},
		{"failover-wait", spec.LockRedsync, ""},
		{"restart-amnesia", spec.LockWaitReplicas, "wait-replicas locks n1 alone"},
		{"pause-critical-section-fenced", spec.LockWaitReplicas, "hands out none"},
	} {
		sc, err := spec.Load(tc.story)
		if err != nil {
			t.Fatal(err)
		}
		ok, why := Fit(sc, tc.lock)
		if ok != (tc.why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%s against %s: fit %v %q, want %q", tc.story, tc.lock, ok, why, tc.why)
		}
	}
	// A story that states nothing for a lock does not fit it; one that
	// says why it claims nothing gives its reason.
	sc, err := spec.Parse([]byte(fitStory("{redlock: violation, fenced-simple: safe, redsync: violation, naive: {na: a race}}")), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := Fit(sc, spec.LockNaive); ok || why != "the story makes no claim about naive: a race" {
		t.Errorf("naive: fit %v %q, want the story's reason", ok, why)
	}
	if ok, why := Fit(sc, spec.LockSingle); ok || !strings.Contains(why, "no expectation for single") {
		t.Errorf("single: fit %v %q, want no expectation", ok, why)
	}
	if ok, _ := Fit(sc, spec.LockRedsync); !ok {
		t.Error("redsync, which the story names, does not fit")
	}
}

func TestCellsAndFamilies(t *testing.T) {
	t.Parallel()
	var scs []*spec.Scenario
	for _, n := range []string{"clock-jump", "clock-jump-control", "failover", "restart-delayed", "pause-critical-section-fenced", "pause-critical-section", "delayed-write", "random-kill-set"} {
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
		"pause-critical-section": FamilyPause, "pause-critical-section-fenced": FamilyPause,
		"delayed-write": FamilyDelay, "random-kill-set": FamilyRandom,
	} {
		if fams[name] != want {
			t.Errorf("%s: family %q, want %q", name, fams[name], want)
		}
	}
	cells := Cells(scs, spec.LockKinds)
	if len(cells) != len(scs)*len(spec.LockKinds) {
		t.Fatalf("%d cells, want %d", len(cells), len(scs)*len(spec.LockKinds))
	}
	for _, c := range cells {
		if c.Scenario.Lock.Kind != c.Lock || len(c.Scenario.Locks) != 1 {
			t.Errorf("%s/%s plays %s %v", c.Scenario.Name, c.Lock, c.Scenario.Lock.Kind, c.Scenario.Locks)
		}
		// The consensus locks hand out tokens too, but a story of five
		// Redis masters is not theirs.
		if c.Scenario.Name == "pause-critical-section-fenced" && (locks.FencedKind(c.Lock) && !locks.Consensus(c.Lock)) != (c.NA == "") {
			t.Errorf("%s/%s: n/a %q", c.Scenario.Name, c.Lock, c.NA)
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

// A story needs its backend to run every kind of server it plays on; both
// backends run every kind now (Sentinel, ZooKeeper and etcd included), so
// only an unknown backend is refused. What a kind cannot take (etcd's
// clock) is the story's fit with the lock, the same on either backend.
func TestFitBackend(t *testing.T) {
	for _, tc := range []struct {
		story, lock, backend string
		want                 string // "" fits; else a part of the reason
	}{
		{"clock-jump", spec.LockRedlock, spec.BackendDocker, ""},
		{"clock-jump", spec.LockRedlock, spec.BackendLocal, ""},
		{"clock-jump", spec.LockRedlock, "", ""},
		{"sentinel-failover", spec.LockSingle, spec.BackendLocal, ""},
		{"sentinel-failover", spec.LockSingle, spec.BackendDocker, ""},
		{"consensus-pause-critical-section", spec.LockZooKeeper, spec.BackendLocal, ""},
		{"consensus-pause-critical-section", spec.LockZooKeeper, spec.BackendDocker, ""},
		{"consensus-pause-critical-section", spec.LockEtcd, spec.BackendDocker, ""},
		{"consensus-kill-restart", spec.LockEtcd, spec.BackendDocker, ""},
		{"clock-jump", spec.LockRedlock, "podman", `backend "podman": want one of`},
	} {
		sc, err := spec.Load(tc.story)
		if err != nil {
			t.Fatal(err)
		}
		ok, why := FitBackend(sc.PlayAgainst(tc.lock), tc.backend)
		if ok != (tc.want == "") || !strings.Contains(why, tc.want) {
			t.Errorf("%s/%s on %q: fits %v (%q), want %q", tc.story, tc.lock, tc.backend, ok, why, tc.want)
		}
	}
}

// Every built-in that scripts its acquires says what each must do against
// every lock it fits: a
// scripted counterexample judged after an acquire went the other way would
// be judged on a story that did not happen.
func TestBuiltinScriptedAcquiresExpect(t *testing.T) {
	for _, name := range spec.Builtin() {
		sc, err := spec.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range sc.Steps {
			for _, k := range spec.LockKinds {
				if ok, _ := Fit(sc, k); ok && st.Kind == spec.StepAcquire && st.ExpectOf(k) == "" {
					t.Errorf("%s: step %d (acquire %s) has no expect for %s", name, i+1, st.Client, k)
				}
			}
		}
	}
}

func TestExpectErrorNamesTheStep(t *testing.T) {
	e := &ExpectError{Step: 5, Kind: spec.StepAcquire, Client: "c2", Want: spec.OutcomeAcquired, Got: spec.OutcomeRefused,
		Cause: errString("redlock: lock \"lock\" not acquired\nn1: timeout")}
	want := `step 5 (acquire c2): expected acquired, was refused: redlock: lock "lock" not acquired`
	if e.Error() != want {
		t.Errorf("got %q, want %q", e.Error(), want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestSidesLinksCutOnlyBetweenSides(t *testing.T) {
	t.Parallel()
	all := []history.Link{
		{Client: "c1", Node: "n1"}, {Client: "c1", Node: "r1"}, {Client: "s1", Node: "s2"},
		{Client: "s2", Node: "n1"}, {Client: "r1", Node: "n1"}, {Client: "c2", Node: "storage"},
	}
	tests := []struct {
		name  string
		sides [][]string
		want  []history.Link
	}{
		{"master with one sentinel", [][]string{{"n1", "s1", "c1"}, {"r1", "s2", "c2"}},
			[]history.Link{{Client: "c1", Node: "r1"}, {Client: "s1", Node: "s2"}, {Client: "s2", Node: "n1"}, {Client: "r1", Node: "n1"}}},
		// A name on no side (storage) keeps its links.
		{"unnamed ends untouched", [][]string{{"c1"}, {"n1"}}, []history.Link{{Client: "c1", Node: "n1"}}},
		{"one side cuts nothing", [][]string{{"c1", "n1"}, {"s9"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := sidesLinks(all, tt.sides); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sidesLinks = %v, want %v", got, tt.want)
			}
		})
	}
}

// fitStory is a three-node story with the given expect.
func fitStory(expect string) string {
	return "name: t\nexpect: " + expect + "\ncluster: {nodes: 3}\nlock: {kind: [redlock, fenced-simple, redsync], ttl: 1s}\n" +
		"workload: {clients: 2}\nsteps:\n  - acquire: {client: c1}\n"
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
		{"clock-jump", spec.LockRedlock, time.Second},                        // wait: 1s
		{"restart-delayed", spec.LockRedlock, 3500 * time.Millisecond},       // 2500ms + 1s
		{"random-kill-counter", spec.LockRedlock, 5500 * time.Millisecond},   // workload 5.5s > 250ms + 5s
		{"consensus-lease-expires-waiting", spec.LockEtcd, 12 * time.Second}, // workload 10s, + 2s for the ensemble
		{"sentinel-failover", spec.LockSingle, 4200 * time.Millisecond},      // until promoted 1s + 200ms, + 3s for Sentinel
	} {
		if got := est(tc.story, tc.lock); got != tc.want {
			t.Errorf("Estimate(%s against %s) = %v, want %v", tc.story, tc.lock, got, tc.want)
		}
	}

	var scs []*spec.Scenario
	for _, n := range []string{"clock-jump", "random-kill-counter", "consensus-lease-expires-waiting", "clock-jump-control"} {
		sc, err := spec.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	cells := Cells(scs, []string{spec.LockRedlock, spec.LockEtcd})
	var got []string
	for _, i := range PlayOrder(cells) {
		got = append(got, cells[i].Scenario.Name+"/"+cells[i].Lock)
	}
	want := []string{
		"consensus-lease-expires-waiting/etcd", // 12s
		"random-kill-counter/redlock",          // 5.5s
		"clock-jump/redlock",                   // 1s, before the control by the cells' order
		"clock-jump-control/redlock",           // 1s
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("play order %v, want %v (n/a cells left out)", got, want)
	}

	// Ensemble plays are spread evenly among the others (here 2 among 8:
	// the first first, the second at 8/2), longest first in each kind.
	scs = scs[:0]
	for _, n := range []string{"consensus-kill-restart", "consensus-lease-expires-waiting", "random-kill-counter", "clock-jump"} {
		sc, err := spec.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	cells = Cells(scs, []string{spec.LockRedlock, spec.LockRedsync, spec.LockNaive, spec.LockEtcd})
	got = got[:0]
	for _, i := range PlayOrder(cells) {
		got = append(got, cells[i].Scenario.Name+"/"+cells[i].Lock)
	}
	want = []string{
		"consensus-kill-restart/etcd", // 12s, before the other 12s by the cells' order
		"random-kill-counter/redlock", // 5.5s
		"random-kill-counter/redsync",
		"random-kill-counter/naive",
		"consensus-lease-expires-waiting/etcd", // 12s, but halfway
		"clock-jump/redlock",
		"clock-jump/redsync",
		"clock-jump/naive",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("play order %v, want %v (n/a cells left out)", got, want)
	}
}
