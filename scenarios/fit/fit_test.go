package fit

import (
	"strings"
	"testing"
	"time"

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
		// A family: single plays the one-master variant.
		{"clock-jump", locks.Single.Name, ""},
		{"clock-jump", locks.Etcd.Name, "etcd is a Go binary"},
		{"clock-jump", locks.Kazoo.Name, ""},
		{"clock-rate-drift", locks.Single.Name, ""}, // a family: its one-master variant
		// restart-amnesia is a family: single plays its one master, and
		// etcd cannot lose a disk (a wiped member cannot rejoin as itself).
		{"restart-amnesia", locks.Single.Name, ""},
		{"restart-amnesia", locks.ZooKeeper.Name, ""},
		{"restart-amnesia", locks.Etcd.Name, "needs wipe"},
		// Every member killed for a while: its ensemble shape.
		{"liveness-delayed-restart", locks.Etcd.Name, ""},
		{"failover", locks.Single.Name, ""}, // one node: nothing singled out
		{"failover", locks.Redsync.Name, ""},
		{"pause-critical-section", locks.Single.Name, ""}, // c2 cut from every node
		{"delayed-write", locks.Single.Name, ""},          // the storage is not a lock node
		// fencing: auto fences wherever the lock hands out tokens.
		{"pause-critical-section", locks.FencedSimple.Name, ""},
		{"pause-critical-section", locks.Redlock.Name, ""},
		{"random-all-counter", locks.Single.Name, ""}, // drawn targets single out none in advance
		{"random-pause-set", locks.Naive.Name, ""},
		// The random families' ensemble shapes: etcd takes kills, not clock jumps.
		{"random-kill-set", locks.Etcd.Name, ""},
		{"random-clock-set", locks.Etcd.Name, "etcd is a Go binary"},
		{"random-clock-set", locks.ZooKeeper.Name, ""},
		{"clock-jump", "chubby", "not a lock kind"},
		// A lock of one deployment is single's case.
		{"restart-delayed", locks.Redislock.Name, ""},
		{"failover", locks.Redislock.Name, ""},
		{"pause-during-acquire", locks.Redislock.Name, ""},
		{"random-clock-set", locks.Redislock.Name, ""},
		{"failover-wait", locks.WaitReplicas.Name, ""},
		// A Sentinel story: the locks of one deployment, and the quorum
		// locks over one Sentinel-managed master.
		{"sentinel-failover", locks.Single.Name, ""},
		{"sentinel-failover", locks.WaitReplicas.Name, ""},
		{"sentinel-failover", locks.Redlock.Name, ""},
		{"sentinel-failover", locks.Redsync.Name, ""},
		{"sentinel-partition", locks.FencedTwoRound.Name, ""},
		// rueidislock under Sentinel: rueidis' own Sentinel client.
		{"sentinel-failover", locks.Rueidislock.Name, ""},
		{"sentinel-partition", locks.Rueidislock.Name, ""},
		// redis-py's driver finds the master through redis-py's Sentinel
		// client (its ready claims sentinel); sentinel-partition claims
		// nothing of it (its na).
		{"sentinel-failover", locks.RedisPy.Name, ""},
		{"sentinel-partition", locks.RedisPy.Name, "makes no claim about redis-py"},
		// Symfony's RedisStore asks the sentinels at each acquire; cut
		// off from them, c1 cannot play sentinel-partition (its na).
		{"sentinel-failover", locks.SymfonyRedis.Name, ""},
		{"sentinel-partition", locks.SymfonyRedis.Name, "makes no claim about symfony-redis"},
		// Laravel on phpredis has no Sentinel: the reason is its library's.
		{"sentinel-failover", locks.Laravel.Name, "Laravel 8's phpredis connector has no Sentinel"},
		{"sentinel-failover", locks.SymfonyRedlock.Name, "does not claim sentinel"},
		// Laravel has no extension (its whole seconds: below).
		// The random families give their one master a TTL of 1 s.
		{"random-pause-counter", locks.Laravel.Name, ""},
		{"pause-during-acquire", locks.Laravel.Name, ""},
		// kazoo and Curator on the ensemble stories, not on Redis ones.
		{"pause-critical-section", locks.Kazoo.Name, ""},
		{"partition-holder", locks.Curator.Name, ""},
		{"consensus-lease-expires-waiting", locks.Kazoo.Name, ""},
		// A family without an ensemble shape.
		{"sentinel-failover", locks.Kazoo.Name, "a Redis replication story"},
		{"partition-holder", locks.Rueidislock.Name, ""},
		{"partition-holder", locks.Redlock.Name, ""},
		// server-clock-ahead's default fits every Redis lock on its one node.
		{"server-clock-ahead", locks.Redsync.Name, ""},
		{"server-clock-ahead", locks.Rueidislock.Name, ""},
		{"failover-wait", locks.Redsync.Name, ""},
		// An ensemble kind's na gives its reason too (it said "no
		// expectation" before); tooz-etcd plays the others.
		{"failover-wait", locks.ToozEtcd.Name, "makes no claim about tooz-etcd: tooz reaches etcd through n1 alone"},
		{"liveness-nodes-down", locks.ToozEtcd.Name, ""},
		{"clock-jump", locks.ToozEtcd.Name, "etcd is a Go binary"},
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
	// Laravel counts a lock's life in whole seconds, malkusch/lock in 2 s
	// at the least: each plays a story of 600 ms slowed down, not n/a.
	sc, err = spec.Parse([]byte("name: f\nexpect: safe\ncluster: {nodes: 3}\nlock: {kind: laravel, ttl: 600ms}\nworkload: {clients: 2}\nsteps:\n  - acquire: {client: c1}\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind string
		ttl  time.Duration
	}{{locks.Laravel.Name, time.Second}, {locks.MalkuschRedlock.Name, 2 * time.Second}} {
		if ok, why := Lock(sc, tc.kind); !ok {
			t.Errorf("%s at 600ms: n/a %q, want a slowed play", tc.kind, why)
		}
		if play := sc.PlayAgainst(tc.kind); play.Lock.TTL != tc.ttl || !strings.Contains(play.ScaleWhy, "slower") {
			t.Errorf("%s at 600ms: plays at %v (%q), want %v", tc.kind, play.Lock.TTL, play.ScaleWhy, tc.ttl)
		}
	}
}

// Every built-in that scripts its acquires says what each must do against
// every lock it fits: a
// scripted counterexample judged after an acquire went the other way would
// be judged on a story that did not happen. A step may leave one lock's
// outcome open (any) only where the story claims nothing of that lock's
// promise either (its expectation says any).
func TestBuiltinScriptedAcquiresExpect(t *testing.T) {
	for _, name := range spec.Builtin() {
		sc, err := spec.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range sc.Steps {
			for _, k := range locks.Matrix() {
				if ok, _ := Lock(sc, k); !ok || st.Kind != spec.StepAcquire || st.ExpectOf(k) != "" {
					continue
				}
				e, _ := sc.ExpectFor(k)
				if !unpinned(st, k) {
					t.Errorf("%s: step %d (acquire %s) has no expect for %s", name, i+1, st.Client, k)
				} else if !strings.Contains(string(e), spec.OutcomeAny) {
					t.Errorf("%s: step %d (acquire %s) leaves %s's outcome open, yet the story expects %q of it", name, i+1, st.Client, k, e)
				}
			}
		}
	}
}

// unpinned reports whether st says any of lock kind k outright.
func unpinned(st spec.Step, k string) bool {
	if e, ok := st.Expects[k]; ok {
		return e == spec.OutcomeAny
	}
	return st.Expect == spec.OutcomeAny
}

// fitStory is a three-node story with the given expect.
// A story of five masters that singles out some of them (no shapes):
// the locks of one deployment do not fit it, nor those on an ensemble.
func TestFitQuorumStory(t *testing.T) {
	t.Parallel()
	const quorum = "name: q\nexpect: violation\ncluster: {nodes: 5}\nlock: {kind: redlock, ttl: 2s}\nworkload: {clients: 2}\n" +
		"steps:\n  - clock: {node: n3, jump: 3s}\n  - cut: {client: c1, nodes: [n4, n5]}\n  - acquire: {client: c1}\n"
	sc, err := spec.Parse([]byte(quorum), "q.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ lock, why string }{
		{locks.Redlock.Name, ""},
		{locks.Redislock.Name, "quorum story: its steps act on part of its 5 nodes (n3, n4+n5), and redislock locks n1 alone"},
		{locks.WaitReplicas.Name, "wait-replicas locks n1 alone"},
		{locks.Kazoo.Name, "5 independent Redis masters"},
	} {
		ok, why := Lock(sc, tc.lock)
		if ok != (tc.why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("against %s: fit %v %q, want %q", tc.lock, ok, why, tc.why)
		}
	}
}

// A family without an ensemble shape does not fit a lock on an ensemble.
func TestFitFamilyWithoutItsShape(t *testing.T) {
	t.Parallel()
	const family = "name: f\nexpect: safe\nworkload: {clients: 2}\nlock: {ttl: 1s}\nsteps:\n  - acquire: {client: c1}\n" +
		"shapes:\n  masters:\n    cluster: {nodes: 5}\n    lock: {kind: redlock}\n  one:\n    cluster: {nodes: 1}\n    lock: {kind: single}\n"
	sc, err := spec.Parse([]byte(family), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := Lock(sc, locks.Etcd.Name); ok || !strings.Contains(why, "written for independent masters, one master") {
		t.Errorf("etcd: fit %v %q, want the shapes it is written for", ok, why)
	}
	if ok, why := Lock(sc, locks.Redsync.Name); !ok {
		t.Errorf("redsync: fit %v %q", ok, why)
	}
}

func fitStory(expect string) string {
	return "name: t\nexpect: " + expect + "\ncluster: {nodes: 3}\nlock: {kind: [redlock, fenced-simple, redsync], ttl: 1s}\n" +
		"workload: {clients: 2}\nsteps:\n  - acquire: {client: c1}\n"
}

// A user's driver (--lock-driver) fits the stories the built-in locks on
// its server fit, with "any" expected of it where the story names it not.
func TestFitUserDriver(t *testing.T) {
	t.Parallel()
	redisOne := &locks.Kind{Name: "mine", Server: "redis", Shape: locks.OneDeployment, Driver: true, User: true, Adapter: "driver"}
	zk := &locks.Kind{Name: "minezk", Server: "zookeeper", Shape: locks.Ensemble, Driver: true, User: true, Adapter: "driver"}
	for _, tc := range []struct {
		story string
		kind  *locks.Kind
		why   string
	}{
		{"pause-critical-section", redisOne, ""},
		{"clock-rate-drift", redisOne, ""}, // a family: its one-master variant
		{"clock-jump", redisOne, ""},       // a family: its one-master variant
		// Its default is the Redis locks' (a control of extension).
		{"consensus-lease-expires-waiting", redisOne, ""},
		{"consensus-lease-expires-waiting", zk, ""},
		{"restart-amnesia", zk, "a story of Redis locks"},
		{"pause-critical-section", zk, ""}, // a family: its ensemble variant
		{"sentinel-failover", redisOne, "does not claim sentinel"},
	} {
		sc, err := spec.Load(tc.story)
		if err != nil {
			t.Fatal(err)
		}
		sc.Drivers = []*locks.Kind{tc.kind}
		ok, why := Lock(sc, tc.kind.Name)
		if ok != (tc.why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%s against %s: fit %v %q, want %q", tc.story, tc.kind.Name, ok, why, tc.why)
		}
		if ok {
			if e, _ := sc.ExpectFor(tc.kind.Name); e != spec.ExpectAny {
				t.Errorf("%s against %s: expects %q, want any", tc.story, tc.kind.Name, e)
			}
		}
	}
	// A story whose expect names only locks on ensembles is no Redis
	// driver's.
	sc, err := spec.Parse([]byte("name: t\nexpect: {zookeeper: safe, etcd: safe}\ncluster: {nodes: 3}\nlock: {kind: zookeeper, ttl: 2s}\n"+
		"workload: {clients: 2}\nsteps:\n  - acquire: {client: c1}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Drivers = []*locks.Kind{redisOne}
	if ok, why := Lock(sc, redisOne.Name); ok || !strings.Contains(why, "a story of the locks on consensus ensembles") {
		t.Errorf("an ensemble story against mine: fit %v %q, want refused", ok, why)
	}
}

// A pause that holds the client at its point with its process running
// (signal: false) does not fit a lock whose pauses always stop the process
// (PauseStops: the ZooKeeper and etcd drivers, whose clients keep their
// sessions alive from threads of their own): n/a with the reason, never a
// silent SIGSTOP. Left unset, or true, it fits them; false fits the others.
func TestFitSignalOff(t *testing.T) {
	t.Parallel()
	story := func(signal string) *spec.Scenario {
		sc, err := spec.Parse([]byte("name: f\nexpect: {default: any, zookeeper: any, kazoo: any, curator: any, tooz-etcd: any}\ncluster: {nodes: 3}\nlock: {kind: [zookeeper, kazoo, redis-py, redlock], ttl: 2s}\n"+
			"workload: {kind: counter, clients: 2, duration: 5s}\nsteps:\n  - pause: {client: c1, at: after-acquire, for: 1s"+signal+"}\n"), "f.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	for _, tc := range []struct {
		signal, lock, why string // why empty: fits
	}{
		{", signal: false", locks.Kazoo.Name, "kazoo's client keeps its session alive from threads of its own"},
		{", signal: false", locks.Curator.Name, "its pauses stop its whole process"},
		{", signal: false", locks.ToozEtcd.Name, "signal: false"},
		{", signal: false", locks.ZooKeeper.Name, ""},
		{", signal: false", locks.RedisPy.Name, ""},
		{", signal: false", locks.Redlock.Name, ""},
		{"", locks.Kazoo.Name, ""},
		{", signal: auto", locks.Kazoo.Name, ""},
		{", signal: true", locks.Kazoo.Name, ""},
	} {
		ok, why := Lock(story(tc.signal), tc.lock)
		if ok != (tc.why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("pause%s against %s: fit %v %q, want %q", tc.signal, tc.lock, ok, why, tc.why)
		}
	}
}
