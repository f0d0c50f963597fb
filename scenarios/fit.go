package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"splitbrain/fault"
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
//   - a Sentinel story needs a lock of one deployment, the locks whose
//     clients find the master through the sentinels.

// Fit reports whether the scenario fits lock kind k, and why not.
func Fit(sc *spec.Scenario, k string) (bool, string) {
	if !slices.Contains(spec.LockKinds, k) && k != spec.LockDriver {
		return false, fmt.Sprintf("%q is not a lock kind (%s)", k, strings.Join(spec.LockKinds, ", "))
	}
	if k == spec.LockDriver && len(sc.Lock.Command) == 0 {
		return false, "a driver needs the program lock.command names, and the story names none"
	}
	if spec.Consensus(k) {
		return fitConsensus(sc, k)
	}
	if why, ok := sc.NotFor[k]; ok {
		return false, fmt.Sprintf("the story makes no claim about %s: %s", k, why)
	}
	if _, ok := sc.ExpectFor(k); !ok {
		return false, fmt.Sprintf("the story states no expectation for %s (its expect names %s)", k, expectKinds(sc))
	}
	if sc.Workload.Fencing && !spec.Fenced(k) {
		return false, fmt.Sprintf("the storage rejects writes without a fencing token (workload.fencing on), and %s hands out none", k)
	}
	if !spec.DriverKind(k) && slices.ContainsFunc(sc.Steps, func(st spec.Step) bool { return st.Signal }) {
		return false, fmt.Sprintf("the story stops a client's process with SIGSTOP (pause … signal: true), and %s runs inside the harness: only a lock driver has a process of its own", k)
	}
	if sc.Sentinel != nil && spec.DriverKind(k) {
		return false, fmt.Sprintf("a Sentinel story: clients find the master through the sentinels, and a driver (%s) is given the nodes' addresses only", k)
	}
	if k == spec.LockRueidislock && slices.ContainsFunc(sc.Steps, func(st spec.Step) bool { return st.Point == string(fault.AfterReplies) }) {
		return false, "the story pauses a client at after-replies, a point inside the acquire that rueidislock (its scripts run by rueidis, not go-redis) gives the harness no hook for"
	}
	if sc.Sentinel != nil && !spec.OneDeployment(k) {
		// The failover client (go-redis's, asking the sentinels) serves
		// the locks of one deployment only; a quorum lock would talk to
		// n1 as a fixed address and never see the promotion.
		return false, fmt.Sprintf("a Sentinel story: clients find the master through the sentinels, which only the locks of one deployment do, and %s is a quorum lock", k)
	}
	if spec.OneDeployment(k) && sc.Nodes > 1 {
		if singled := singledOut(sc); len(singled) > 0 {
			return false, fmt.Sprintf("a quorum story: its steps act on part of its %d nodes (%s), and %s locks n1 alone",
				sc.Nodes, strings.Join(singled, ", "), k)
		}
	}
	return true, ""
}

func expectKinds(sc *spec.Scenario) string {
	var out []string
	for _, k := range append([]string{spec.ExpectDefault}, spec.LockKinds...) {
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
		case spec.StepClock, spec.StepStrobe, spec.StepPause, spec.StepResume, spec.StepKill, spec.StepStop, spec.StepRestart, spec.StepPromote, spec.StepReplication, spec.StepWait:
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
