package scenarios_test

import (
	"context"
	"testing"

	"splitbrain/checker"
	"splitbrain/scenarios"
)

// How each built-in must show what it shows, beyond meeting its expect.
type builtinCheck struct {
	// lostUpdate: the counter lost an update (the violation is at the
	// resource, not only in the lock's promises).
	lostUpdate bool
	// resourceSafe: the counter stayed correct (fencing did its job).
	resourceSafe bool
}

var builtinChecks = map[string]builtinCheck{
	"pause-critical-section":        {lostUpdate: true},
	"pause-critical-section-fenced": {resourceSafe: true},
	"pause-during-acquire":          {resourceSafe: true},
	"pause-during-acquire-naive":    {lostUpdate: true},
	"delayed-write":                 {lostUpdate: true},
	"delayed-write-fenced":          {resourceSafe: true},
}

// Every built-in scenario, run once, meets its expectation; those about a
// resource show it at the resource.
func TestBuiltinsMeetTheirExpectations(t *testing.T) {
	for _, name := range scenarios.Builtin() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := builtinChecks[name]
			sc, err := scenarios.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Expect == scenarios.ExpectAny {
				t.Fatalf("expect any: a built-in counterexample or control must say what it shows")
			}
			out := runScenario(t, context.Background(), sc, 1)
			res := out.Result
			if want.lostUpdate && (res.Counter == nil || res.Counter.Verdict != checker.Invalid || res.Counter.LostUpdates == 0) {
				t.Errorf("counter check %+v, want lost updates", res.Counter)
			}
			if want.resourceSafe && (res.Counter == nil || res.Counter.Verdict != checker.Valid) {
				t.Errorf("counter check %+v, want valid", res.Counter)
			}
			if !out.AsExpected {
				t.Errorf("verdict %s (%s), want %s", res.Verdict, res.Reason, sc.Expect)
			}
		})
	}
}
