package scenarios

import (
	"strings"
	"testing"
)

// Fit is read off the scenario, on both sides of each rule's edge.
func TestFit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		story, lock string
		why         string // empty: fits
	}{
		{"clock-jump", LockRedlock, ""},
		{"clock-jump", LockRedsync, ""},
		{"clock-jump", LockSingle, "act on part of its 5 nodes (n4+n5, n3, n1+n2)"},
		{"restart-amnesia", LockSingle, "quorum story"},
		{"failover", LockSingle, ""}, // one node: nothing singled out
		{"failover", LockRedsync, ""},
		{"pause-critical-section", LockSingle, ""}, // c2 cut from every node
		{"delayed-write", LockSingle, ""},          // the storage is not a lock node
		{"pause-critical-section-fenced", LockFencedSimple, ""},
		{"pause-critical-section-fenced", LockFencedTwoRound, ""},
		{"pause-critical-section-fenced", LockRedlock, "hands out none"},
		{"delayed-write-fenced", LockRedsync, "workload.fencing on"},
		{"random-all-counter", LockSingle, ""}, // drawn targets single out none in advance
		{"random-pause-set", LockNaive, ""},
		{"clock-jump", "chubby", "not a lock kind"},
		// A lock of one deployment is single's case.
		{"clock-jump", LockRedislock, "quorum story: its steps act on part of its 5 nodes (n4+n5, n3, n1+n2), and redislock locks n1 alone"},
		{"restart-delayed", LockRedislock, "quorum story"},
		{"failover", LockRedislock, ""},
		{"pause-during-acquire", LockRedislock, ""},
		{"delayed-write-fenced", LockRedislock, "hands out none"},
		{"random-clock-set", LockRedislock, ""},
		{"failover-wait", LockWaitReplicas, ""},
		// A Sentinel story: the locks of one deployment, no quorum lock.
		{"sentinel-failover", LockSingle, ""},
		{"sentinel-failover", LockWaitReplicas, ""},
		{"sentinel-failover", LockRedlock, "a Sentinel story"},
		{"sentinel-failover", LockRedsync, "redsync is a quorum lock"},
		// rueidislock under Sentinel: rueidis' own Sentinel client.
		{"sentinel-failover", LockRueidislock, ""},
		{"sentinel-partition", LockRueidislock, ""},
		{"sentinel-partition", LockRedisPy, "a driver"},
		// partition-holder names only the locks of one deployment.
		{"partition-holder", LockRueidislock, ""},
		{"partition-holder", LockRedlock, "no expectation for redlock"},
		// server-clock-ahead's default fits every Redis lock on its one node.
		{"server-clock-ahead", LockRedsync, ""},
		{"server-clock-ahead", LockRueidislock, ""},
		{"failover-wait", LockRedsync, ""},
		{"restart-amnesia", LockWaitReplicas, "wait-replicas locks n1 alone"},
		{"pause-critical-section-fenced", LockWaitReplicas, "hands out none"},
	} {
		sc, err := Load(tc.story)
		if err != nil {
			t.Fatal(err)
		}
		ok, why := sc.Fit(tc.lock)
		if ok != (tc.why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%s against %s: fit %v %q, want %q", tc.story, tc.lock, ok, why, tc.why)
		}
	}
	// A story that states nothing for a lock does not fit it.
	sc, err := Parse([]byte(withExpect("{redlock: violation, fenced-simple: safe, redsync: violation}")), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := sc.Fit(LockNaive); ok || !strings.Contains(why, "no expectation for naive") {
		t.Errorf("naive: fit %v %q, want no expectation", ok, why)
	}
	if ok, _ := sc.Fit(LockRedsync); !ok {
		t.Error("redsync, which the story names, does not fit")
	}
}

func TestCellsAndFamilies(t *testing.T) {
	t.Parallel()
	var scs []*Scenario
	for _, n := range []string{"clock-jump", "clock-jump-control", "failover", "restart-delayed", "pause-critical-section-fenced", "pause-critical-section", "delayed-write", "random-kill-set"} {
		sc, err := Load(n)
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
	cells := Cells(scs, LockKinds)
	if len(cells) != len(scs)*len(LockKinds) {
		t.Fatalf("%d cells, want %d", len(cells), len(scs)*len(LockKinds))
	}
	for _, c := range cells {
		if c.Scenario.Lock.Kind != c.Lock || len(c.Scenario.Locks) != 1 {
			t.Errorf("%s/%s plays %s %v", c.Scenario.Name, c.Lock, c.Scenario.Lock.Kind, c.Scenario.Locks)
		}
		// The consensus locks hand out tokens too, but a story of five
		// Redis masters is not theirs.
		if c.Scenario.Name == "pause-critical-section-fenced" && (Fenced(c.Lock) && !Consensus(c.Lock)) != (c.NA == "") {
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
		{"clock-jump", LockRedlock, BackendDocker, ""},
		{"clock-jump", LockRedlock, BackendLocal, ""},
		{"clock-jump", LockRedlock, "", ""},
		{"sentinel-failover", LockSingle, BackendLocal, ""},
		{"sentinel-failover", LockSingle, BackendDocker, ""},
		{"consensus-pause-critical-section", LockZooKeeper, BackendLocal, ""},
		{"consensus-pause-critical-section", LockZooKeeper, BackendDocker, ""},
		{"consensus-pause-critical-section", LockEtcd, BackendDocker, ""},
		{"consensus-kill-restart", LockEtcd, BackendDocker, ""},
		{"clock-jump", LockRedlock, "podman", `backend "podman": want one of`},
	} {
		sc, err := Load(tc.story)
		if err != nil {
			t.Fatal(err)
		}
		ok, why := sc.PlayAgainst(tc.lock).FitBackend(tc.backend)
		if ok != (tc.want == "") || !strings.Contains(why, tc.want) {
			t.Errorf("%s/%s on %q: fits %v (%q), want %q", tc.story, tc.lock, tc.backend, ok, why, tc.want)
		}
	}
}
