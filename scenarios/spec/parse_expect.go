package spec

import (
	"fmt"
	"slices"
	"strings"

	"splitbrain/checker"
	"splitbrain/locks"

	"go.yaml.in/yaml/v3"
)

// A scenario's expectation can differ per lock: the literature predicts a
// clock jump breaks Redlock's promise whatever the lock, yet a fenced lock
// keeps the resource safe when the storage checks its tokens. The
// `expect:` field is therefore one of
//
//	expect: violation                            # every lock, the whole verdict
//	expect: {lock: violation, resource: safe}    # every lock, the two answers apart
//	expect:                                      # per lock kind, default for the rest
//	  default: violation
//	  fenced-simple: {lock: violation, resource: safe}
//	  rueidislock: {na: why the story makes no claim about it}
//
// A lock kind with no entry and no default has no expectation: the story
// makes no claim about it, and a suite shows it as n/a with that reason.
//
// Beside lock and resource, a mapping can name the lock's liveness
// promises, each ok, violation or any: liveness (both), or
// deadlock-freedom and fault-tolerance apart — {lock: safe, liveness: ok}.
// A promise a play expects decides its verdict; one it does not is
// reported and decides nothing.

// ExpectDefault is the key of the per-lock map that applies to every lock
// kind not listed.
const ExpectDefault = "default"

// expectWords are the valid one-word expectations.
var expectWords = []string{string(ExpectViolation), string(ExpectSafe), string(ExpectAny)}

// expectParts are the keys of an expectation's mapping.
var expectParts = []string{checker.PartLock, checker.PartResource, checker.PartLiveness, checker.PartDeadlockFreedom, checker.PartFaultTolerance}

// expectForms names the valid forms of an expectation, for messages.
const expectForms = "{lock: W, resource: W, liveness: ok|violation|any}"

// expectation parses the expect field into sc.Expects and sc.NotFor.
func (p *parser) expectation(n *yaml.Node) (map[string]Expect, map[string]string) {
	const field = "expect"
	switch {
	case n.Kind == 0:
		p.fail(nil, field, "missing; want one of %s, %s, or a map from lock kind (and default) to one of those",
			strings.Join(expectWords, ", "), expectForms)
		return nil, nil
	case n.Kind == yaml.ScalarNode:
		if e, ok := p.oneExpect(n, field); ok {
			return map[string]Expect{ExpectDefault: e}, nil
		}
		return nil, nil
	case n.Kind != yaml.MappingNode || len(n.Content) == 0:
		p.fail(n, field, "want one of %s, %s, or a map from lock kind (and default) to one of those",
			strings.Join(expectWords, ", "), expectForms)
		return nil, nil
	}
	if slices.Contains(expectParts, n.Content[0].Value) {
		// The answers apart, for every lock.
		if e, ok := p.oneExpect(n, field); ok {
			return map[string]Expect{ExpectDefault: e}, nil
		}
		return nil, nil
	}
	out := map[string]Expect{}
	var notFor map[string]string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := field + "." + k.Value
		switch {
		case slices.Contains(expectParts, k.Value):
			p.fail(k, f, "the answers go under a lock kind here (%s), or make the whole expect such a mapping", expectForms)
			continue
		case k.Value != ExpectDefault && !slices.Contains(fileLockKinds, k.Value):
			p.fail(k, f, "unknown lock kind %q; want %s, one of %s, or %s alone", k.Value, ExpectDefault, strings.Join(locks.Matrix(), ", "),
				strings.Join(expectParts, ", "))
			continue
		case out[k.Value] != "" || notFor[k.Value] != "":
			p.fail(k, f, "listed twice")
			continue
		case v.Kind == yaml.MappingNode && len(v.Content) == 2 && v.Content[0].Value == "na":
			why := v.Content[1]
			switch {
			case k.Value == ExpectDefault:
				p.fail(v.Content[0], f+".na", "n/a is for one lock kind, not the default: a story that claims nothing of any lock has no place in the matrix")
			case why.Kind != yaml.ScalarNode || strings.TrimSpace(why.Value) == "":
				p.fail(why, f+".na", "want the reason the story makes no claim about %s, in words", k.Value)
			default:
				if notFor == nil {
					notFor = map[string]string{}
				}
				notFor[k.Value] = strings.TrimSpace(why.Value)
			}
			continue
		}
		if e, ok := p.oneExpect(v, f); ok {
			out[k.Value] = e
		}
	}
	return out, notFor
}

// oneExpect parses one expectation: a word, or a mapping of its parts
// ({lock: W, resource: W, liveness: W}).
func (p *parser) oneExpect(n *yaml.Node, field string) (Expect, bool) {
	if n.Kind == yaml.ScalarNode {
		if slices.Contains(expectWords, n.Value) {
			return Expect(n.Value), true
		}
		p.fail(n, field, "%q is not valid; want one of %s", n.Value, strings.Join(expectWords, ", "))
		return "", false
	}
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		p.fail(n, field, "want one of %s, or %s", strings.Join(expectWords, ", "), expectForms)
		return "", false
	}
	var e checker.Expectation
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := field + "." + k.Value
		at := v
		if !slices.Contains(expectParts, k.Value) {
			at = k
		}
		if v.Kind != yaml.ScalarNode {
			p.fail(v, f, "want a word: %s", expectForms)
			ok = false
			continue
		}
		if err := e.Set(k.Value, v.Value); err != nil {
			p.fail(at, f, "%v", err)
			ok = false
		}
	}
	return Expect(e.String()), ok
}

// ExpectFor returns what the scenario expects of a play against lock kind
// k, and false when it states nothing for k.
//
// A user's lock driver of the command line (KindOf(k).User, not the
// file's own lock.kind driver, whose expectation is the file's) is
// expected what the file says of it by name; any other story states
// nothing about a lock it has never seen, and expects "any" of it: what
// the play shows is a finding, with its rate.
func (sc *Scenario) ExpectFor(k string) (Expect, bool) {
	if _, na := sc.NotFor[k]; na {
		return "", false
	}
	if e, ok := sc.Expects[k]; ok {
		return e, true
	}
	if kind := sc.KindOf(k); kind != nil && kind.User && k != locks.Driver.Name {
		return ExpectAny, true
	}
	if e, ok := sc.Expects[ExpectDefault]; ok {
		return e, true
	}
	if len(sc.Expects) == 0 && sc.Expect != "" {
		// Built in Go rather than parsed: Expect is for every lock.
		return sc.Expect, true
	}
	return "", false
}

// checkExpectLocks fails a per-lock expectation that names none of the
// locks the file plays nor a default, which would leave a `run` of the
// file with nothing to judge.
func (p *parser) checkExpectLocks(n *yaml.Node, sc *Scenario) {
	for _, k := range sc.Locks {
		if _, ok := sc.ExpectFor(k); !ok && len(sc.Expects) > 0 {
			p.fail(n, "expect", "states nothing for lock.kind %s; add %s: or a %s: entry", k, k, ExpectDefault)
		}
	}
}

// ExpectSummary says the scenario's expectations in one line: the
// default, then each lock kind that differs, in parentheses —
// "violation (fenced-simple: lock violation)".
func (sc *Scenario) ExpectSummary() string {
	if len(sc.Expects) == 0 {
		return string(sc.Expect)
	}
	out := string(sc.Expects[ExpectDefault])
	var parts []string
	for _, k := range locks.Matrix() {
		if e, ok := sc.Expects[k]; ok {
			parts = append(parts, fmt.Sprintf("%s: %s", k, e))
		}
	}
	if len(parts) == 0 {
		return out
	}
	if out == "" {
		return strings.Join(parts, "; ")
	}
	return out + " (" + strings.Join(parts, "; ") + ")"
}
