// Package spec reads scenario files (YAML) and checks them: the cluster,
// the lock, the workload, the scripted steps and random schedules, and
// what each play is expected to show, every error naming the file, line
// and field. It imports nothing that runs servers, proxies or clients,
// so that the parser and its fuzzing stay small; package runner plays
// what it reads.
package spec

import (
	"time"

	"splitbrain/locks"
)

// Expect is what a scenario should show.
type Expect string

const (
	ExpectViolation Expect = "violation"
	ExpectSafe      Expect = "safe"
	ExpectAny       Expect = "any"
)

// Scenario is a parsed, validated scenario file.
type Scenario struct {
	Name        string
	Description string
	// Expect is what a play against Lock.Kind should show (see
	// ExpectFor): a word, or the two answers apart in checker.Expectation's
	// form; empty when the file states nothing for that lock.
	Expect Expect
	// Expects is the file's expect field: lock kind (or ExpectDefault) to
	// expectation (parse_expect.go).
	Expects map[string]Expect
	// NotFor holds, per lock kind, why the story makes no claim about it
	// (expect: {KIND: {na: WHY}}): what it would show is a race the story
	// does not pin. The cell is n/a with that reason.
	NotFor   map[string]string
	Nodes    int
	Clients  []string
	Lock     Lock
	Workload Workload
	Steps    []Step
	// File is where the scenario came from ("builtin/clock-jump.yaml" or a
	// user path), for messages.
	File string
	// Persistence is each lock node's (n1..nN) persistence.
	Persistence map[string]string
	// Replicas names the nodes that get asynchronous replicas; nK's are
	// rK, rKb, ... (ReplicasOf), ReplicaCount of them (absent: one).
	Replicas     []string
	ReplicaCount map[string]int
	// Backend is the file's cluster.backend (BackendLocal or
	// BackendDocker), empty when the file leaves it to the caller;
	// RunOptions.Backend, when set, wins.
	Backend string
	// Locks are the lock kinds the scenario is played against, once
	// each (see Plays); Lock.Kind is the first.
	Locks []string
	// Sentinel, when set, runs Sentinel over n1 and its replicas: it
	// fails n1 over, and the clients find the master through it.
	Sentinel *SentinelSpec
	// Source is the file as parsed, which each play keeps in its run
	// folder (ScenarioFile) so that the folder alone says what was played.
	Source []byte
	// Drivers are the user's lock drivers the scenario may be played
	// against, as lock kinds made from their ready (driver.UserKinds): the
	// file's lock.kind driver once described, and --lock-driver's. Set by
	// the command line; KindOf finds them before the built-in kinds.
	Drivers []*locks.Kind
	// Sweep, when set, is the parameter the story is swept across
	// (sweep.go); a plain play of the story plays it as written.
	Sweep *Sweep
	// Shapes, for a fault family written for several deployments
	// (shapes.go), are the story as each deployment plays it; nil for a
	// story of one deployment. Shape is the deployment of this variant.
	Shapes map[locks.Shape]*Scenario
	Shape  locks.Shape
	// Scale is how much slower than written the play runs (Slowed): 0
	// or 1 as written; ScaleWhy says why, for the log and the report.
	Scale    float64
	ScaleWhy string
}

// KindOf is lock kind name as the scenario knows it: one of its Drivers,
// else the built-in kind (package locks); nil when neither.
func (sc *Scenario) KindOf(name string) *locks.Kind {
	for _, k := range sc.Drivers {
		if k.Name == name {
			return k
		}
	}
	return locks.ByName(name)
}

// LockKind is the kind of the lock the scenario plays (Lock.Kind).
func (sc *Scenario) LockKind() *locks.Kind { return sc.KindOf(sc.Lock.Kind) }

// fileLockKinds are the kinds a scenario file may name: every kind
// (locks.Names), the driver among them.
var fileLockKinds = locks.Names()

// Backend names, as --backend takes them and results.Meta records them.
const (
	BackendLocal  = "local"
	BackendDocker = "docker"
)

// Backends are the names RunOptions.Backend accepts.
var Backends = []string{BackendLocal, BackendDocker}

// Random streams derived from the seed, one per consumer, so that adding a
// draw to one never shifts the draws of another.
const (
	StreamNemesis  = 1
	StreamWorkload = 2
)

// StorageNode names the storage in the network nemesis: each client reaches
// it through its own proxy, as it reaches the lock nodes, so that faults on
// the client↔storage links can be injected like any other.
const StorageNode = "storage"

// Lock is the lock under test and its parameters.
type Lock struct {
	Kind        string // a lock kind's name (package locks)
	TTL         time.Duration
	Key         string
	NodeTimeout time.Duration // zero: the library's default
	// Retries is how many attempts one acquire makes (redlock's MaxTries,
	// redsync's tries); 0 means one, as 1 does.
	Retries int
	// Extend makes a generated workload's clients extend their lease once
	// in each critical section, before the write (see workload.Config).
	Extend bool
	// Command is the driver program and its arguments of kind driver.
	Command []string
	// Server and Deployment choose, for kind driver, which of the locks
	// its ready claims the file plays (lock.server: redis, zookeeper or
	// etcd; lock.deployment, on redis: masters or one); empty: the first
	// it claims. Line is lock.server's line, for errors.
	Server     string
	Deployment string
	ServerLine int
	// Session is how etcd's client mutex gets its lease: SessionAcquire
	// (empty), a lease of its own per acquisition, or SessionClient, one
	// concurrency.Session per client, kept alive in the background and
	// used for every acquisition, as etcd's documentation uses it.
	Session string
}

// Values of Lock.Session.
const (
	SessionAcquire = "acquire"
	SessionClient  = "client"
)

// PlayAgainst returns a copy of the scenario played against lock kind k
// alone, with k's expectation.
func (sc *Scenario) PlayAgainst(k string) *Scenario {
	base := sc
	if v := sc.ForLock(k); v != nil {
		base = v
	}
	c := *base.Slowed(sc.KindOf(k))
	c.Lock.Kind = k
	c.Locks = []string{k}
	c.Expect, _ = base.ExpectFor(k)
	if c.Workload.FencingAuto {
		lk := c.KindOf(k)
		c.Workload.Fencing = lk != nil && lk.Fenced
	}
	return &c
}

// Plays returns the scenario once per lock kind it lists, each a copy
// with that kind alone: what one run plays.
func (sc *Scenario) Plays() []*Scenario {
	out := make([]*Scenario, len(sc.Locks))
	for i, k := range sc.Locks {
		out[i] = sc.PlayAgainst(k)
	}
	if len(out) == 0 {
		// Built in Go rather than parsed: Lock.Kind is the one kind.
		out = append(out, sc)
	}
	return out
}
