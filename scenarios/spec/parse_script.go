package spec

import (
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"splitbrain/locks"
)

// This file parses what a scenario file adds to the lock and the script
// beyond the basics: cluster.backend, lock.retries and lock.extend, the
// expected outcomes of scripted acquires and extends, and waits for a
// condition. the runner's play_conditions.go plays them.

// Outcomes of a scripted acquire or extend, as `expect:` names them.
const (
	OutcomeAcquired = "acquired"
	OutcomeExtended = "extended"
	OutcomeRefused  = "refused"
	// OutcomeAny, in a step's mapping from lock kind to outcome, leaves
	// the step unpinned for that kind (and, as default, for the kinds not
	// named): a race the story does not decide for one lock, as when the
	// expect field is left out.
	OutcomeAny = "any"
)

// Conditions a wait step can wait for.
const (
	UntilExpired = "expired" // the client's lease validity deadline has passed
	UntilUp      = "up"      // the node answers PING
	UntilDown    = "down"    // the node does not answer (killed, stopped or paused)
	UntilPaused  = "paused"  // the client is stopped at a client pause's point
	UntilWrote   = "wrote"   // the client's next write to the storage completed
	UntilGone    = "gone"    // the lock key is gone from the node (expired or deleted)
)

// DefaultWaitTimeout bounds a wait for a condition that gives no timeout;
// a wait until a lease expired gets the lock's TTL on top.
const DefaultWaitTimeout = 5 * time.Second

// maxRetries bounds lock.retries: far more than any scenario needs, few
// enough that a typo cannot keep a client trying for minutes.
const maxRetries = 100

// moreOptions parses cluster.backend, lock.retries and lock.extend; the
// workload must have been parsed (extend is for generated workloads).
func (p *parser) moreOptions(s *fileSpec, sc *Scenario) {
	if s.Cluster.Backend.Kind != 0 {
		sc.Backend = p.enum(&s.Cluster.Backend, "cluster.backend", "", Backends...)
	}
	if n := &s.Lock.Retries; n.Kind != 0 {
		sc.Lock.Retries = p.count(n, "lock.retries", 0, 0, maxRetries)
	}
	if n := &s.Lock.Extend; n.Kind != 0 {
		switch v := strings.ToLower(n.Value); {
		case n.Kind == yaml.ScalarNode && (v == "on" || v == "true"):
			sc.Lock.Extend = true
		case n.Kind == yaml.ScalarNode && (v == "off" || v == "false"):
		default:
			p.fail(n, "lock.extend", "%q is not valid; want on (each critical section extends its lease once, before its write) or off", n.Value)
			return
		}
		if sc.Lock.Extend && !sc.Workload.Generated() {
			p.fail(n, "lock.extend", "only for a generated workload (workload.kind %s); a scripted scenario extends with a step such as - extend: {client: c1}", generatorKinds)
		}
	}
	if n := &s.Lock.Session; n.Kind != 0 {
		if v := p.enum(n, "lock.session", "", SessionAcquire, SessionClient); v == SessionClient {
			for _, k := range sc.Locks {
				if k != locks.Etcd.Name {
					p.fail(n, "lock.session", "client: only etcd's client mutex (lock.kind etcd) takes a session of the client's; %s does not", k)
					return
				}
			}
			sc.Lock.Session = v
		}
	}
}

// expectOutcome parses the expect field of an acquire or extend step: an
// outcome, or a mapping from lock kind (and default) to outcome or any,
// where a story unfolds differently against different locks — Redisson's
// scheme refuses a grant no replica acknowledged, which the others hand
// out.
func (p *parser) expectOutcome(st *Step, n *yaml.Node, field string) bool {
	if n == nil {
		return true
	}
	success := OutcomeAcquired
	if st.Kind == StepExtend {
		success = OutcomeExtended
	}
	if n.Kind != yaml.MappingNode {
		st.Expect = p.enum(n, field, "", success, OutcomeRefused)
		return st.Expect != ""
	}
	before := len(p.errs)
	st.Expects = map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := field + "." + k.Value
		switch {
		case k.Value != ExpectDefault && !slices.Contains(fileLockKinds, k.Value):
			p.fail(k, f, "unknown lock kind %q; want %s or one of %s", k.Value, ExpectDefault, strings.Join(locks.Matrix(), ", "))
		case st.Expects[k.Value] != "":
			p.fail(k, f, "listed twice")
		default:
			st.Expects[k.Value] = p.enum(v, f, "", success, OutcomeRefused, OutcomeAny)
		}
	}
	if len(n.Content) == 0 {
		p.fail(n, field, "empty; want %s, %s, or a mapping from lock kind (and %s) to one of them or %s", success, OutcomeRefused, ExpectDefault, OutcomeAny)
	}
	st.Expect = st.Expects[ExpectDefault]
	delete(st.Expects, ExpectDefault)
	return len(p.errs) == before
}

// ExpectOf is the outcome the step expects against lock kind k; "" means
// any.
func (st Step) ExpectOf(k string) string {
	e, ok := st.Expects[k]
	if !ok {
		e = st.Expect
	}
	if e == OutcomeAny {
		return ""
	}
	return e
}

// waitSpan parses a wait for a time, "1s" or "1s..3s"; its error also
// names the other form, a wait for a condition.
func (p *parser) waitSpan(n *yaml.Node, field string) (Span, bool) {
	sp, ok := p.span(n, field, false)
	// A duration too long is not helped by the other form.
	if e := p.errs; !ok && strings.Contains(e[len(e)-1].Msg, "is not valid") {
		e[len(e)-1].Msg += ", or a condition such as {until: expired, client: c1}, {until: up, node: n3}, {until: down, node: n3}, {until: paused, client: c1} or {until: wrote, client: c2}"
	}
	return sp, ok
}

// waitUntil parses a wait for a condition: {until: expired, client: c1},
// {until: up, node: n3}, {until: down, node: n3}, {until: paused, client:
// c1} or {until: wrote, client: c2}, each with an optional timeout.
func (p *parser) parseWaitUntil(st *Step, in *stepIn) bool {
	val, field, seen := in.val, in.field, in.seen
	need := func(name string) *yaml.Node { return in.need(p, name) }
	before := len(p.errs)
	v := need("until")
	if v == nil {
		return false
	}
	st.Until = p.enum(v, field+".until", "", UntilExpired, UntilUp, UntilDown, UntilPaused, UntilWrote, UntilPromoted, UntilGone)
	only := func(name, why string) {
		if n := seen[name]; n != nil {
			p.fail(n, field+"."+name, "not used by until %s: %s", st.Until, why)
		}
	}
	switch st.Until {
	case UntilExpired:
		if seen["client"] == nil {
			p.fail(val, field+".client", "missing: until expired waits for this client's lease to run out")
		}
		st.Client = p.client(seen["client"], field+".client")
		if k := seen["key"]; k != nil {
			st.Key = p.lockKey(k, field+".key")
		}
		only("node", "it waits for a client's lease, given as client")
	case UntilPaused, UntilWrote:
		// Story points that timing alone cannot pin on a loaded machine:
		// a fault that must begin after a client's read and before its
		// write, or end after another client wrote.
		if seen["client"] == nil {
			p.fail(val, field+".client", "missing: until %s waits for this client", st.Until)
		}
		st.Client = p.client(seen["client"], field+".client")
		only("node", "it waits for a client, given as client")
		only("key", "it waits for a client, given as client")
	case UntilUp, UntilDown:
		if seen["node"] == nil {
			p.fail(val, field+".node", "missing: until %s waits for this node", st.Until)
		}
		st.Node = p.parseNode(seen["node"], field+".node")
		only("client", "it waits for a node, given as node")
		only("key", "it waits for a node, given as node")
	case UntilGone:
		// The first instant another client can take the node's grant: a
		// clock that runs fast expires the key before its holder's
		// validity ends, or not.
		if seen["node"] == nil {
			p.fail(val, field+".node", "missing: until gone waits for the lock key to be gone from this node")
		}
		st.Node = p.parseNode(seen["node"], field+".node")
		if k := seen["key"]; k != nil {
			st.Key = k.Value
		}
		only("client", "it waits for a node's key, given as node")
	}
	if n := seen["timeout"]; n != nil {
		st.Timeout = p.duration(n, field+".timeout", 0, time.Millisecond)
	}
	if n := seen["at_most"]; n != nil {
		if seen["timeout"] != nil {
			p.fail(n, field+".at_most", "give timeout (the run fails when the condition does not come) or at_most (the steps go on either way), not both")
		} else {
			st.AtMost = p.duration(n, field+".at_most", 0, time.Millisecond)
		}
	}
	return len(p.errs) == before
}

// drivesClient reports whether st makes a client act on the lock, which
// only a scripted workload may do: a generator drives its clients alone.
func drivesClient(st Step) bool {
	switch st.Kind {
	case StepAcquire, StepRelease, StepExtend:
		return true
	case StepWait:
		return st.Until == UntilExpired
	}
	return false
}
