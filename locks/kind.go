// Package locks describes each lock kind the harness plays — ours, its
// variants, third-party libraries, locks on consensus systems and lock
// drivers — as data, one file per kind, as package cluster describes a
// kind of server (cluster.Kind): its name, the server it runs on and the
// shape of the deployment, whether it hands out fencing tokens, where a
// client's belief that it holds the lock ends, what the harness cannot do
// to it (the kind-specific fit rules) and which adapter builds it. Help
// text, --lock, the parser's checks, fit, the matrix's columns and list
// read All.
//
// Why two packages. The scenario parser (scenarios/spec) checks lock.kind
// against this registry, and it is fuzzed with every package of its binary
// instrumented, so it must not come to import the servers' clients
// (go-redis, rueidis, etcd's clientv3 and gRPC, zk): a builder in the same
// file as a kind's data would bring them into the parser. So a kind's data
// is here, in a package that imports none of them (TestParserStaysLight
// checks), and the code that builds it — the adapter to workload.Lock and
// its builder — is in locks/adapter, which the runner imports and the
// parser does not. A Kind names its builder (Adapter).
//
// Adding a kind: on an existing adapter (a variant of ours, a library's
// other mode) one file here and its line in All; a new library also its
// adapter's file in locks/adapter (adapter, builder, tests) and the
// builder's line in adapter.Builders. Then the stories' expectations
// (expect: in scenarios/spec/builtin). Fit, --lock, help, list, the
// matrix's columns and the run read the kind from here.
package locks

import (
	"slices"
	"strings"
	"time"

	"splitbrain/fault"
)

// Kind describes one lock kind.
type Kind struct {
	// Name is the kind's name in scenario files (lock.kind), --lock,
	// results and the matrix.
	Name string
	// About is one line on what the kind is, for help and list.
	About string
	// Server names the kind of server the lock's nodes run (a
	// cluster.Kind's Name): redis, zookeeper or etcd.
	Server string
	// Shape is how the lock's nodes are deployed.
	Shape Shape
	// Fenced: the lock hands out fencing tokens, which a fenced storage
	// needs (workload.fencing on).
	Fenced bool
	// Belief says where a client's belief that it holds the lock ends
	// (property P1): what the lock's API tells its user, since a lock
	// that documents nothing is used as its API suggests. Each run's
	// report and result.json carry it.
	Belief string
	// Driver: the lock runs in a child process of its own that speaks
	// the driver protocol (docs/driver-protocol.md), which a scripted
	// SIGSTOP can stop; otherwise it runs inside the harness.
	Driver bool
	// Command: the scenario file names the driver's program
	// (lock.command); a kind without it is built in.
	Command bool
	// Sentinel: the lock's clients can find the master through Sentinel
	// (a failover client), so Sentinel stories fit it. Sentinel watches
	// one master (the parser wants cluster.nodes 1), so a quorum lock
	// under Sentinel is a quorum of one: every node's connection is the
	// failover client to that master.
	Sentinel bool
	// NoSentinel says why the lock's clients cannot find the master
	// through Sentinel where its library is the reason; a Sentinel
	// story's n/a says it (empty: the generic reason).
	NoSentinel string
	// Unhooked are the client hook points the harness has no way to stop
	// the lock's clients at, each with why: a story pausing a client
	// there does not fit the kind.
	Unhooked map[fault.Point]string
	// Adapter names the builder in locks/adapter (adapter.Builders) that
	// makes a client's instance of the lock.
	Adapter string
	// Redlock are our lock's options, for the kinds the redlock adapter
	// builds.
	Redlock RedlockOptions
	// NotInMatrix: the kind is no column of the matrix and no value of
	// --lock (a driver of the user's: what it runs is the file's).
	NotInMatrix bool
	// Liveness says how soon the lock frees itself of a holder that went
	// silent (crashed, paused, cut off), which bounds its promise of
	// deadlock freedom; the zero value is a Redis key's: a TTL after the
	// last grant or extension.
	Liveness Liveness
	// Unreported are the requests whose outcome the lock does not tell
	// its user (a driver's ready says them: "release" when release()
	// returns quietly for a lease already gone): their ok is "the call
	// returned", and driver check says "cannot tell" of them.
	Unreported []string
	// PauseStops: a scripted pause of the lock's client stops its driver's
	// process group (SIGSTOP) at the point, as pause … signal: true does,
	// instead of holding it there: its client keeps its session alive
	// from threads of its own (a ZooKeeper client's pings), which a hold
	// at a point would not stop and a GC pause does.
	PauseStops bool
	// WholeSeconds: the lock counts a lease's life in whole seconds
	// (Laravel's SET … EX): it cannot be asked for a story's TTL that is
	// not a whole number of seconds — it would hold its key longer than
	// the story's TTL, which the checker takes for an impossible grant —
	// so it plays such a story slowed down to the next whole second
	// (spec.Scenario.Slowed).
	WholeSeconds bool
	// KeyPrefix is what the lock puts before the key it is asked for, in
	// the name it stores on the servers (malkusch/lock's "lock_"): where
	// the harness reads the key itself (wait until gone).
	KeyPrefix string
	// MinTTL: the shortest TTL the lock can be asked for (malkusch/lock's
	// key lives its timeout + 1 s, and a timeout is at least 1 s): it
	// plays a story with a shorter one slowed down to it.
	MinTTL time.Duration
	// Unsupported are the requests the lock has no call for ("extend":
	// Laravel's lock cannot be extended): a story that makes them does
	// not fit the kind.
	Unsupported []string
	// User: a lock driver of the user's, made from its ready at run time
	// (driver.UserKinds), not a kind of All. A story that names no
	// expectation for it expects "any" of it: a finding with its rate.
	User bool
	// Program is the command that runs a user's driver (User); a
	// built-in driver's is the binary's (driver.Builtin).
	Program []string
}

// Liveness is what bounds a lock kind's liveness promises: deadlock
// freedom (a lock whose holder went silent is free again within its
// expiry and retry interval) and fault tolerance (while a client reaches
// a majority of the nodes, it can acquire a free lock). Every run records
// it in its history (history.LockSetup), where the liveness checks read
// it.
type Liveness struct {
	// Renewed: the holder's library keeps the lock alive behind its
	// user's back while it runs and reaches the servers (Redisson's
	// watchdog, rueidislock's extender, ZooKeeper's session pings), so
	// the expiry counts from when the holder stopped or was cut off.
	Renewed bool
	// Round, Min and Max shape the expiry from the TTL asked: rounded up
	// to a multiple of Round, at least Min, at most Max (zero: no such
	// bound).
	Round, Min, Max time.Duration
	// Slack is what the servers take beyond the expiry to free the lock
	// (ZooKeeper expires sessions at its ticks, a new leader times every
	// lease and session again).
	Slack time.Duration
	// Replicas: an acquire needs the master's replicas (Redisson's WAIT
	// refuses a lock no replica acknowledged).
	Replicas bool
	// AsyncRelease: a release returns before the lock is free (its keys
	// are deleted in the background).
	AsyncRelease bool
	// Reconnect is how long the lock's client library may take to reach
	// a node again once it can (goRedis; go-zookeeper sleeps a second
	// after trying every server): a client is promised the lock only
	// that long after it could reach the nodes again.
	Reconnect time.Duration
}

// goRedis is the liveness of the locks on go-redis: a TTL, and go-redis's
// pool stops dialling a node after PoolSize failed dials in a row and
// probes it once a second until it answers (redlock.ClientOptions says
// so), so a node that was down or cut off is seen as down for up to a
// second after it is back.
var goRedis = Liveness{Reconnect: time.Second}

// Expiry is how long the lock stays taken after its holder's last word,
// for a lock asked for ttl.
func (l Liveness) Expiry(ttl time.Duration) time.Duration {
	e := ttl
	if l.Round > 0 && e%l.Round != 0 {
		e += l.Round - e%l.Round
	}
	if e < l.Min {
		e = l.Min
	}
	if l.Max > 0 && e > l.Max {
		e = l.Max
	}
	return e
}

// Shape is how a lock's nodes are deployed.
type Shape int

const (
	// Masters: N independent masters, every node of the cluster (n1..nN);
	// a quorum lock.
	Masters Shape = iota
	// OneDeployment: one master (n1) with whatever replicas it has, or
	// the master Sentinel names.
	OneDeployment
	// Ensemble: the members of one consensus ensemble (ZooKeeper, etcd).
	Ensemble
)

// EnsembleNodes is the size of the ensembles the Ensemble locks run on.
const EnsembleNodes = 3

func (s Shape) String() string {
	switch s {
	case Masters:
		return "independent masters"
	case OneDeployment:
		return "one master with replicas"
	case Ensemble:
		return "a consensus ensemble"
	}
	return "unknown shape"
}

// RedlockOptions are the variant of our Redlock a kind plays.
type RedlockOptions struct {
	// SkipElapsedCheck hands a lease back without checking how much of
	// its TTL the acquire used.
	SkipElapsedCheck bool
	// Fencing is the fencing scheme: FenceSimple, FenceTwoRound or none.
	Fencing string
}

// Fencing schemes of our lock (redlock.FenceSimple, redlock.FenceTwoRound).
const (
	FenceSimple   = "simple"
	FenceTwoRound = "two-round"
)

// All lists every lock kind, in the matrix's order of columns. Adding a
// kind is one file declaring it and its line here.
var All = []*Kind{
	Redlock, Single, Naive, FencedSimple, FencedTwoRound, Redsync, Redislock, WaitReplicas, RedisPy,
	Rueidislock, SymfonyRedis, SymfonyRedlock, Laravel, MalkuschRedlock, ZooKeeper, Etcd, EtcdV3Lock, Kazoo, KazooListener, Curator, CuratorListener, ToozEtcd,
	Driver,
}

// ByName returns kind name, or nil.
func ByName(name string) *Kind {
	i := slices.IndexFunc(All, func(k *Kind) bool { return k.Name == name })
	if i < 0 {
		return nil
	}
	return All[i]
}

// Names are the names of the kinds a scenario file may name: every kind.
func Names() []string { return names(func(*Kind) bool { return true }) }

// Matrix are the names of the matrix's columns, which --lock takes: every
// kind but the user's drivers.
func Matrix() []string { return names(func(k *Kind) bool { return !k.NotInMatrix }) }

// FencedNames are the names of the kinds with fencing tokens.
func FencedNames() []string { return names(func(k *Kind) bool { return k.Fenced }) }

func names(keep func(*Kind) bool) []string {
	var out []string
	for _, k := range All {
		if keep(k) {
			out = append(out, k.Name)
		}
	}
	return out
}

// Is reports whether kind name is known and has property p.
func Is(name string, p func(*Kind) bool) bool {
	k := ByName(name)
	return k != nil && p(k)
}

// Consensus reports whether kind name is a lock on a consensus system.
func Consensus(name string) bool { return Is(name, func(k *Kind) bool { return k.Shape == Ensemble }) }

// OneDeploymentKind reports whether kind name runs on one Redis
// deployment (n1, with whatever replicas it has) rather than over every
// node.
func OneDeploymentKind(name string) bool {
	return Is(name, func(k *Kind) bool { return k.Shape == OneDeployment })
}

// DriverKind reports whether kind name runs as a driver process.
func DriverKind(name string) bool { return Is(name, func(k *Kind) bool { return k.Driver }) }

// FencedKind reports whether kind name hands out fencing tokens.
func FencedKind(name string) bool { return Is(name, func(k *Kind) bool { return k.Fenced }) }

// Belief is the belief sentence of kind name, or "" for an unknown kind.
func Belief(name string) string {
	if k := ByName(name); k != nil {
		return k.Belief
	}
	return ""
}

// Or joins names as prose: "a, b or c".
func Or(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// sentinelOverOne is Sentinel for our Redlock's kinds and redsync: a
// Redlock over one node behind Sentinel, as failover plays them over one
// master and its replica. redsync takes any go-redis client as a pool
// (goredis.NewPool), and a failover client is how its users put Sentinel
// under it; the Redlock page counts on independent masters instead, and
// the Sentinel stories show what a quorum of one replicated master keeps.
const sentinelOverOne = true
