package scenarios

import (
	"reflect"
	"strings"
	"testing"

	"splitbrain/history"
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
