package fit

import (
	"strings"
	"testing"

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
		{"clock-jump", locks.Redlock.Name, ""},
		{"clock-jump", locks.Redsync.Name, ""},
		{"clock-jump", locks.Single.Name, "act on part of its 5 nodes (n4+n5, n3, n1+n2)"},
		{"restart-amnesia", locks.Single.Name, "quorum story"},
		{"failover", locks.Single.Name, ""}, // one node: nothing singled out
		{"failover", locks.Redsync.Name, ""},
		{"pause-critical-section", locks.Single.Name, ""}, // c2 cut from every node
		{"delayed-write", locks.Single.Name, ""},          // the storage is not a lock node
		{"pause-critical-section-fenced", locks.FencedSimple.Name, ""},
		{"pause-critical-section-fenced", locks.FencedTwoRound.Name, ""},
		{"pause-critical-section-fenced", locks.Redlock.Name, "hands out none"},
		{"delayed-write-fenced", locks.Redsync.Name, "workload.fencing on"},
		{"random-all-counter", locks.Single.Name, ""}, // drawn targets single out none in advance
		{"random-pause-set", locks.Naive.Name, ""},
		{"clock-jump", "chubby", "not a lock kind"},
		// A lock of one deployment is single's case.
		{"clock-jump", locks.Redislock.Name, "quorum story: its steps act on part of its 5 nodes (n4+n5, n3, n1+n2), and redislock locks n1 alone"},
		{"restart-delayed", locks.Redislock.Name, "quorum story"},
		{"failover", locks.Redislock.Name, ""},
		{"pause-during-acquire", locks.Redislock.Name, ""},
		{"delayed-write-fenced", locks.Redislock.Name, "hands out none"},
		{"random-clock-set", locks.Redislock.Name, ""},
		{"failover-wait", locks.WaitReplicas.Name, ""},
		// A Sentinel story: the locks of one deployment, no quorum lock.
		{"sentinel-failover", locks.Single.Name, ""},
		{"sentinel-failover", locks.WaitReplicas.Name, ""},
		{"sentinel-failover", locks.Redlock.Name, "a Sentinel story"},
		{"sentinel-failover", locks.Redsync.Name, "redsync is a quorum lock"},
		// rueidislock under Sentinel: rueidis' own Sentinel client.
		{"sentinel-failover", locks.Rueidislock.Name, ""},
		{"sentinel-partition", locks.Rueidislock.Name, ""},
		{"sentinel-partition", locks.RedisPy.Name, "a driver"},
		// partition-holder names only the locks of one deployment.
		{"partition-holder", locks.Rueidislock.Name, ""},
		{"partition-holder", locks.Redlock.Name, "no expectation for redlock"},
		// server-clock-ahead's default fits every Redis lock on its one node.
		{"server-clock-ahead", locks.Redsync.Name, ""},
		{"server-clock-ahead", locks.Rueidislock.Name, ""},
		{"failover-wait", locks.Redsync.Name, ""},
		{"restart-amnesia", locks.WaitReplicas.Name, "wait-replicas locks n1 alone"},
		{"pause-critical-section-fenced", locks.WaitReplicas.Name, "hands out none"},
	} {
		sc, err := spec.Load(tc.story)
		if err != nil {
			t.Fatal(err)
		}
		ok, why := Lock(sc, tc.lock)
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
	if ok, why := Lock(sc, locks.Naive.Name); ok || why != "the story makes no claim about naive: a race" {
		t.Errorf("naive: fit %v %q, want the story's reason", ok, why)
	}
	if ok, why := Lock(sc, locks.Single.Name); ok || !strings.Contains(why, "no expectation for single") {
		t.Errorf("single: fit %v %q, want no expectation", ok, why)
	}
	if ok, _ := Lock(sc, locks.Redsync.Name); !ok {
		t.Error("redsync, which the story names, does not fit")
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
			for _, k := range locks.Matrix() {
				if ok, _ := Lock(sc, k); ok && st.Kind == spec.StepAcquire && st.ExpectOf(k) == "" {
					t.Errorf("%s: step %d (acquire %s) has no expect for %s", name, i+1, st.Client, k)
				}
			}
		}
	}
}

// fitStory is a three-node story with the given expect.
func fitStory(expect string) string {
	return "name: t\nexpect: " + expect + "\ncluster: {nodes: 3}\nlock: {kind: [redlock, fenced-simple, redsync], ttl: 1s}\n" +
		"workload: {clients: 2}\nsteps:\n  - acquire: {client: c1}\n"
}
