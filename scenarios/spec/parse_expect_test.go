package spec

import (
	"strings"
	"testing"

	"splitbrain/checker"
	"splitbrain/locks"
)

const expectBase = `name: t
expect: EXPECT
cluster: {nodes: 3}
lock: {kind: [redlock, fenced-simple, redsync], ttl: 1s}
workload: {clients: 2}
steps:
  - acquire: {client: c1}
`

func withExpect(e string) string { return strings.Replace(expectBase, "EXPECT", e, 1) }

func TestPerLockExpectations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, expect string
		want         map[string]Expect // lock kind → its play's expectation
	}{
		{"one word", "violation", map[string]Expect{"redlock": "violation", "fenced-simple": "violation", "redsync": "violation", "single": "violation"}},
		{"two answers", "{lock: violation, resource: safe}", map[string]Expect{"redlock": "lock violation, resource safe", "naive": "lock violation, resource safe"}},
		{"per lock with default", "{default: violation, fenced-simple: {lock: violation, resource: safe}, redsync: any}",
			map[string]Expect{"redlock": "violation", "fenced-simple": "lock violation, resource safe", "redsync": "any", "naive": "violation"}},
		{"resource alone", "{default: safe, fenced-simple: {resource: safe}}", map[string]Expect{"fenced-simple": "resource safe", "redlock": "safe"}},
		{"liveness beside the lock", "{lock: violation, liveness: ok}", map[string]Expect{"redlock": "lock violation, liveness ok", "single": "lock violation, liveness ok"}},
		{"the promises apart, per lock", "{default: safe, redsync: {lock: safe, deadlock-freedom: ok, fault-tolerance: violation}, fenced-simple: {fault-tolerance: any}}",
			map[string]Expect{"redsync": "lock safe, deadlock-freedom ok, fault-tolerance violation", "fenced-simple": "fault-tolerance any", "redlock": "safe"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(withExpect(tc.expect)), "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			for k, w := range tc.want {
				if got, ok := sc.ExpectFor(k); !ok || got != w {
					t.Errorf("ExpectFor(%s) = %q, %v; want %q", k, got, ok, w)
				}
			}
			for _, play := range sc.Plays() {
				if w, ok := tc.want[play.Lock.Kind]; ok && play.Expect != w {
					t.Errorf("play against %s expects %q, want %q", play.Lock.Kind, play.Expect, w)
				}
			}
		})
	}
	// Without a default, an unlisted lock has no expectation: the story
	// makes no claim about it.
	sc, err := Parse([]byte(withExpect("{redlock: violation, fenced-simple: safe, redsync: violation}")), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := sc.ExpectFor(locks.Naive.Name); ok {
		t.Errorf("naive: %q, want no expectation", e)
	}

	// {na: why}: the story claims nothing of that lock, default or not,
	// and its cell says why.
	sc, err = Parse([]byte(withExpect(`{default: violation, naive: {na: "a race the story does not pin"}}`)), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := sc.ExpectFor(locks.Naive.Name); ok {
		t.Errorf("naive: %q, want no expectation", e)
	}
	if why := sc.NotFor[locks.Naive.Name]; why != "a race the story does not pin" {
		t.Errorf("NotFor[naive] = %q, want the story's reason", why)
	}
	if e, ok := sc.ExpectFor(locks.Redsync.Name); !ok || e != ExpectViolation {
		t.Errorf("redsync: %q, %v; want the default", e, ok)
	}
}

func TestExpectParseErrorsNameLineAndField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, expect string
		want         []string
	}{
		{"unknown word", "maybe", []string{"f.yaml:2", "expect:", `"maybe"`, "violation, safe, any"}},
		{"unknown lock kind", "{default: safe, redlok: violation}", []string{"f.yaml:2", "expect.redlok", "unknown lock kind", "redlock, single"}},
		{"unknown expectation of a lock", "{default: safe, redsync: broken}", []string{"f.yaml:2", "expect.redsync", `"broken"`, "violation, safe, any"}},
		{"unknown answer", "{default: safe, redsync: {lock: violation, storage: safe}}", []string{"f.yaml:2", "expect.redsync.storage", "lock", "resource"}},
		{"bad answer word", "{lock: violation, resource: fine}", []string{"f.yaml:2", "expect.resource", `"fine"`}},
		{"mixed forms", "{default: safe, lock: violation}", []string{"f.yaml:2", "expect.lock", "under a lock kind"}},
		{"lock played with no expectation", "{redlock: violation, fenced-simple: safe}", []string{"f.yaml:2", "expect", "nothing for lock.kind redsync"}},
		{"twice", "{default: safe, redsync: safe, redsync: any}", []string{"f.yaml:2"}},
		{"a list", "[safe, violation]", []string{"f.yaml:2", "expect", "map from lock kind"}},
		{"n/a as the default", `{default: {na: "a race"}, redlock: safe}`, []string{"f.yaml:2", "expect.default.na", "one lock kind"}},
		{"n/a without a reason", `{default: safe, naive: {na: ""}}`, []string{"f.yaml:2", "expect.naive.na", "the reason"}},
		{"n/a for a lock the file plays", `{default: safe, redsync: {na: "a race"}}`, []string{"f.yaml:2", "nothing for lock.kind redsync"}},
		{"n/a and an expectation", `{default: safe, naive: safe, naive: {na: "a race"}}`, []string{"f.yaml:2", "expect.naive", "listed twice"}},
		{"a liveness word of safety", "{lock: violation, liveness: safe}", []string{"f.yaml:2", "expect.liveness", `"safe" is not valid for liveness`, "ok, violation, any"}},
		{"a safety word of liveness", "{lock: ok}", []string{"f.yaml:2", "expect.lock", `"ok" is not valid for lock`, "violation, safe, any"}},
		{"a bad word of one promise", "{default: safe, redsync: {deadlock-freedom: fine}}", []string{"f.yaml:2", "expect.redsync.deadlock-freedom", `"fine"`, "ok, violation, any"}},
		{"liveness and a promise", "{liveness: ok, fault-tolerance: ok}", []string{"f.yaml:2", "expect.fault-tolerance", "given twice", "liveness stands for"}},
		{"a misspelt promise", "{lock: safe, deadlock: ok}", []string{"f.yaml:2", "expect.deadlock", "unknown part", "deadlock-freedom", "fault-tolerance"}},
		{"liveness beside lock kinds", "{default: safe, liveness: ok}", []string{"f.yaml:2", "expect.liveness", "under a lock kind"}},
		{"a list for a promise", "{lock: safe, liveness: [ok]}", []string{"f.yaml:2", "expect.liveness", "want a word"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(withExpect(tc.expect)), "f.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// A multi-line map names the line of the bad entry.
	_, err := Parse([]byte(withExpect("\n  default: safe\n  redlok: violation")), "f.yaml")
	if err == nil || !strings.Contains(err.Error(), "f.yaml:4: expect.redlok") {
		t.Errorf("error %v, want it at f.yaml:4, field expect.redlok", err)
	}
	_, err = Parse([]byte(withExpect("\n  default: safe\n  redsync:\n    lock: safe\n    liveness: maybe")), "f.yaml")
	if err == nil || !strings.Contains(err.Error(), "f.yaml:6: expect.redsync.liveness") {
		t.Errorf("error %v, want it at f.yaml:6, field expect.redsync.liveness", err)
	}
}

// Each answer is judged on its own, on both sides of the edge where it
// flips.
func TestTwoAnswersMeetTheirExpectation(t *testing.T) {
	t.Parallel()
	res := func(p1, counter checker.Verdict) checker.Result {
		r := checker.Result{Verdict: checker.Valid, Properties: []checker.Property{{Name: checker.PropLeaseLock, Verdict: p1, Decides: true}}}
		if counter != "" {
			r.Properties = append(r.Properties, checker.Property{Name: checker.PropCounter, Verdict: counter, Decides: true})
		}
		if p1 == checker.Invalid || counter == checker.Invalid {
			r.Verdict = checker.Invalid
		}
		return r
	}
	for _, tc := range []struct {
		expect       string
		p1, resource checker.Verdict
		met          bool
	}{
		{"lock violation, resource safe", checker.Invalid, checker.Valid, true},
		{"lock violation, resource safe", checker.Invalid, checker.Invalid, false},
		{"lock violation, resource safe", checker.Valid, checker.Valid, false},
		{"lock violation, resource safe", checker.Invalid, "", false}, // no resource to be safe
		{"lock safe, resource violation", checker.Valid, checker.Invalid, true},
		{"lock safe, resource violation", checker.Valid, checker.Valid, false},
		{"resource safe", checker.Invalid, checker.Valid, true},
		{"lock any, resource safe", checker.Valid, checker.Valid, true},
		{"violation", checker.Valid, checker.Invalid, true},
		{"safe", checker.Valid, checker.Invalid, false},
		{"safe", checker.Valid, checker.Valid, true},
	} {
		r := res(tc.p1, tc.resource)
		if got := checker.Met(tc.expect, r); got != tc.met {
			t.Errorf("Met(%q, P1 %s, resource %q) = %v, want %v", tc.expect, tc.p1, tc.resource, got, tc.met)
		}
	}
	// Unknown is never a pass, whatever the expectation.
	r := res(checker.Invalid, checker.Valid)
	r.Verdict = checker.Unknown
	if checker.Met("lock violation, resource safe", r) || checker.Met("any", r) {
		t.Error("an unknown verdict met an expectation")
	}
}
