// Package fit says whether a story fits a lock kind: whether playing the
// scenario (package spec) against the lock (package locks, its data) tests
// what the story is about, and whether the lock's kind of server can take
// the faults its steps need (package cluster's kinds). The runner, the
// suite and its matrix read it; none of them owns it.
package fit

import (
	"fmt"
	"slices"
	"strings"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/locks"
	"splitbrain/scenarios/spec"
)

// A story fits a lock when playing it against that lock tests what the
// story is about. Fit is decided from what the scenario requires, read off
// its fields and steps, not from a list per file:
//
//   - an expectation for the lock (the story makes a claim about it);
//   - a storage that fences its writes needs a lock that hands out tokens;
//   - a quorum story — one whose steps single out some of the lock's nodes
//     (cut c1 from n4 and n5, jump n3's clock, kill n3) — needs a lock over
//     every node: single, like every lock of one deployment, locks n1
//     alone, so the faults either miss its one node or cut it off, and the
//     story's scripted grants and refusals cannot happen;
//   - a Sentinel story needs a lock whose clients find the master
//     through the sentinels (locks.Kind.Sentinel).

// Lock reports whether the scenario fits lock kind name, and why not: the
// rules read the kind's data (package locks): its shape, its fencing, its
// process, its Sentinel client, the hook points it lacks.
func Lock(sc *spec.Scenario, name string) (bool, string) {
	k := sc.KindOf(name)
	if k == nil {
		return false, fmt.Sprintf("%q is not a lock kind (%s)", name, strings.Join(locks.Matrix(), ", "))
	}
	if sc.Shapes != nil {
		// A fault family: the lock plays the variant of its deployment.
		v := sc.ForLock(name)
		if v == nil {
			return false, fmt.Sprintf("the family is written for %s, and %s runs on %s", sc.ShapesText(), name, k.Shape)
		}
		sc = v
	}
	if k.Command && len(sc.Lock.Command) == 0 {
		return false, "a driver needs the program lock.command names, and the story names none"
	}
	if ok, why := fitUser(sc, k); !ok {
		return false, why
	}
	// A TTL the lock cannot be asked for: the lock plays the story
	// slowed down to its shortest (spec.Scenario.Slowed), never n/a.
	sc = sc.Slowed(k)
	if slices.Contains(k.Unsupported, "extend") && extends(sc) {
		return false, fmt.Sprintf("the story extends leases, and %s has no extension", name)
	}
	if k.PauseStops && slices.ContainsFunc(sc.Steps, func(st spec.Step) bool { return st.SignalOff }) {
		return false, fmt.Sprintf("the story holds a client at its point with its process running (pause … signal: false), and %s's client keeps its session alive from threads of its own: its pauses stop its whole process, as a GC pause would", name)
	}
	if k.Shape == locks.Ensemble {
		return fitEnsemble(sc, k)
	}
	if why, ok := sc.NotFor[name]; ok {
		return false, fmt.Sprintf("the story makes no claim about %s: %s", name, why)
	}
	if _, ok := sc.ExpectFor(name); !ok {
		return false, fmt.Sprintf("the story states no expectation for %s (its expect names %s)", name, expectKinds(sc))
	}
	if sc.Workload.Fencing && !k.Fenced {
		return false, fmt.Sprintf("the storage rejects writes without a fencing token (workload.fencing on), and %s hands out none", name)
	}
	if !k.Driver && slices.ContainsFunc(sc.Steps, func(st spec.Step) bool { return st.Signal }) {
		return false, fmt.Sprintf("the story stops a client's process with SIGSTOP (pause … signal: true), and %s runs inside the harness: only a lock driver has a process of its own", name)
	}
	if !k.Driver && slices.ContainsFunc(sc.Steps, func(st spec.Step) bool { return st.Kind == spec.StepStarve && st.Client != "" }) {
		return false, fmt.Sprintf("the story starves a client's process of CPU, and %s runs inside the harness: only a lock driver has a process of its own", name)
	}
	if sc.Sentinel != nil && !k.Sentinel && k.NoSentinel != "" {
		return false, "a Sentinel story: clients find the master through the sentinels, and " + k.NoSentinel
	}
	if sc.Sentinel != nil && k.Driver && !k.Sentinel {
		return false, fmt.Sprintf("a Sentinel story: clients find the master through the sentinels, and the driver %s does not claim sentinel in its ready: it is given the nodes' addresses only", name)
	}
	for _, st := range sc.Steps {
		if why, ok := k.Unhooked[fault.Point(st.Point)]; ok {
			return false, fmt.Sprintf("the story pauses a client at %s, %s", st.Point, why)
		}
	}
	if sc.Sentinel != nil && !k.Sentinel {
		// A lock whose clients cannot ask the sentinels would talk to n1
		// as a fixed address and never see the promotion.
		return false, fmt.Sprintf("a Sentinel story: clients find the master through the sentinels, and %s's clients cannot ask them", name)
	}
	if k.Shape == locks.OneDeployment && sc.Nodes > 1 {
		if singled := singledOut(sc); len(singled) > 0 {
			return false, fmt.Sprintf("a quorum story: its steps act on part of its %d nodes (%s), and %s locks n1 alone",
				sc.Nodes, strings.Join(singled, ", "), name)
		}
	}
	return true, ""
}

// fitEnsemble says whether a story fits lock k on a consensus ensemble,
// and why not: a story written for Redis nodes makes no claim about such
// a lock unless its expect names the lock, and some cannot be played at
// all — the faults its steps need must be ones the kind's server supports.
func fitEnsemble(sc *spec.Scenario, lk *locks.Kind) (bool, string) {
	k := lk.Name
	kind := ServerOf(lk)
	switch {
	case sc.Sentinel != nil || len(sc.Replicas) > 0:
		return false, fmt.Sprintf("a Redis replication story: %s replicates through its own consensus, there is no asynchronous replica to cut off or promote", kind.Name)
	case sc.Nodes != locks.EnsembleNodes:
		return false, fmt.Sprintf("a story of %d independent Redis masters; %s runs on a %d-member ensemble, whose members are not independent: the story's grants and refusals do not carry over", sc.Nodes, k, locks.EnsembleNodes)
	}
	for _, p := range sc.Persistence {
		if p != spec.PersistNone {
			return false, fmt.Sprintf("a Redis persistence story (%s); %s always writes its log to disk before it acknowledges", p, kind.Name)
		}
	}
	for _, st := range sc.Steps {
		if f, ok := st.Needs(); ok {
			if err := kind.Refuse("", f); err != nil {
				return false, fmt.Sprintf("its step at line %d (%s) needs %s, which %s nodes do not support%s", st.Line, st.Kind, f, kind.Name, refusalReason(kind, f))
			}
		}
		if st.Kind == spec.StepPartition && st.Shape == spec.ShapeSides && st.SplitsNodes() {
			if err := kind.Refuse("", fault.PeerLink); err != nil {
				return false, fmt.Sprintf("its partition at line %d splits the ensemble, which needs %s%s", st.Line, fault.PeerLink, refusalReason(kind, fault.PeerLink))
			}
		}
	}
	if why, ok := sc.NotFor[k]; ok {
		return false, fmt.Sprintf("the story makes no claim about %s: %s", k, why)
	}
	if _, ok := sc.ExpectFor(k); !ok {
		return false, fmt.Sprintf("the story states no expectation for %s", k)
	}
	// A family's ensemble shape is written for the consensus locks, its
	// default among them.
	if _, named := sc.Expects[k]; !named && !lk.User && sc.Shapes == nil {
		return false, fmt.Sprintf("the story states no expectation for %s: its expect speaks of Redis locks (a consensus lock's cell needs a claim made for it)", k)
	}
	return true, ""
}

// extends says whether a story extends a lease: a generated workload's
// lock.extend, or an extend step.
func extends(sc *spec.Scenario) bool {
	return sc.Lock.Extend || slices.ContainsFunc(sc.Steps, func(st spec.Step) bool { return st.Kind == spec.StepExtend })
}

// fitUser says whether a story fits a user's lock driver (locks.Kind.User)
// as it fits the built-in locks on the same kind of server: the story
// expects "any" of a lock it has never seen (spec.ExpectFor), but a story
// written for Redis locks is no story for a lock on an ensemble, and the
// other way round. A file written for the driver (its lock.kind driver)
// is its own story.
func fitUser(sc *spec.Scenario, k *locks.Kind) (bool, string) {
	if !k.User || k.Name == locks.Driver.Name {
		return true, ""
	}
	var ensemble, redis []string
	for name := range sc.Expects {
		switch lk := sc.KindOf(name); {
		case name == spec.ExpectDefault:
			redis = append(redis, name)
		case lk == nil || lk.User:
		case lk.Shape == locks.Ensemble:
			ensemble = append(ensemble, name)
		default:
			redis = append(redis, name)
		}
	}
	slices.Sort(ensemble)
	switch {
	case k.Shape == locks.Ensemble && len(redis) > 0 && len(ensemble) == 0:
		return false, fmt.Sprintf("a story of Redis locks (its expect names no lock on an ensemble), and %s runs on a %s ensemble", k.Name, k.Server)
	case k.Shape != locks.Ensemble && len(ensemble) > 0 && len(redis) == 0:
		return false, fmt.Sprintf("a story of the locks on consensus ensembles (its expect names %s), and %s is a Redis lock", strings.Join(ensemble, ", "), k.Name)
	}
	return true, ""
}

// serverKinds are the kinds of server a lock kind may name (locks.Kind.Server).
var serverKinds = []*cluster.Kind{cluster.Redis, cluster.ZooKeeper, cluster.Etcd}

// ServerKind is the kind of server lock kind k runs on: Redis unless the
// kind names another.
func ServerKind(k string) *cluster.Kind { return ServerOf(locks.ByName(k)) }

// ServerOf is the kind of server lock kind lk runs on: Redis unless it
// names another (nil: Redis).
func ServerOf(lk *locks.Kind) *cluster.Kind {
	if lk != nil {
		for _, sk := range serverKinds {
			if sk.Name == lk.Server {
				return sk
			}
		}
	}
	return cluster.Redis
}

// refusalReason says why kind k lacks capability f, where the kind's name
// alone does not.
func refusalReason(k *cluster.Kind, f fault.Capability) string {
	if k == cluster.Etcd {
		switch f {
		case fault.Clock:
			return " (etcd is a Go binary: it reads its clock through the vDSO, not libc, so the clock shim cannot move it)"
		case fault.PeerLink:
			return " (etcd is a Go binary: the shim cannot route its connections to its peers, and its members must agree on each other's addresses, so no proxy per dialer can stand between them)"
		case fault.Wipe:
			return " (a wiped etcd member cannot rejoin as itself: etcd wants it removed and added as a new member)"
		}
	}
	return ""
}

func expectKinds(sc *spec.Scenario) string {
	var out []string
	for _, k := range append([]string{spec.ExpectDefault}, locks.Matrix()...) {
		if _, ok := sc.Expects[k]; ok {
			out = append(out, k)
		}
	}
	return strings.Join(out, ", ")
}

// singledOut lists the groups of lock nodes the steps act on when a step
// acts on some of them and not all ("n4+n5", "n3"): a fault on every node
// (cut c2 from n1..n5) treats a one-node lock as it treats a five-node
// one, a fault on n3 does not. Random schedules draw their targets and
// single out none in advance.
func singledOut(sc *spec.Scenario) []string {
	var out []string
	for _, st := range sc.Steps {
		var nodes []string
		switch st.Kind {
		case spec.StepCut, spec.StepNet, spec.StepPartition:
			nodes = st.Nodes
		case spec.StepClock, spec.StepStrobe, spec.StepPause, spec.StepResume, spec.StepKill, spec.StepStop, spec.StepRestart, spec.StepPromote, spec.StepReplication, spec.StepWait, spec.StepStarve, spec.StepFsync:
			nodes = []string{st.Node}
		}
		var lockNodes []string
		for _, n := range nodes {
			if n != "" && n != "storage" && !slices.Contains(lockNodes, n) {
				lockNodes = append(lockNodes, n)
			}
		}
		if len(lockNodes) > 0 && len(lockNodes) < sc.Nodes {
			if g := strings.Join(lockNodes, "+"); !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}
