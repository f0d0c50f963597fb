package checker

import (
	"strings"
	"testing"

	"splitbrain/checker/verdict"
)

// A verdict meets a word of expectation: violation wants invalid, safe
// valid, any either; unknown meets none, and neither does a word that is
// not one.
func TestAsExpected(t *testing.T) {
	tests := []struct {
		expect string
		v      Verdict
		want   bool
	}{
		{"violation", Invalid, true},
		{"violation", Valid, false},
		{"safe", Valid, true},
		{"safe", Invalid, false},
		{"safe", Unknown, false},
		{"violation", Unknown, false},
		{"any", Valid, true},
		{"any", Invalid, true},
		{"any", Unknown, false},
		{"nonsense", Valid, false},
	}
	for _, tt := range tests {
		if got := AsExpected(tt.expect, tt.v); got != tt.want {
			t.Errorf("AsExpected(%q, %s) = %v, want %v", tt.expect, tt.v, got, tt.want)
		}
	}
}

// The liveness parts of an expectation read back as they were written,
// and each meets its promise's verdict on both sides of its edge.
func TestLivenessExpectations(t *testing.T) {
	for _, s := range []string{"liveness ok", "lock violation, liveness ok", "lock safe, resource safe, deadlock-freedom ok, fault-tolerance violation",
		"fault-tolerance any", "deadlock-freedom violation"} {
		e, err := ParseExpectation(s)
		if err != nil || e.String() != s || !e.Liveness() {
			t.Errorf("ParseExpectation(%q) = %+v, %v; reads back as %q", s, e, err, e.String())
		}
	}
	// "deadlock-freedom W, fault-tolerance W" is written as liveness W.
	if e, _ := ParseExpectation("deadlock-freedom ok, fault-tolerance ok"); e.String() != "liveness ok" {
		t.Errorf("both promises ok read back as %q", e.String())
	}
	for _, tc := range []struct{ s, want string }{
		{"liveness safe", `"safe" is not valid for liveness; want one of ok, violation, any`},
		{"lock ok", `"ok" is not valid for lock; want one of violation, safe, any`},
		{"liveness ok, deadlock-freedom ok", "deadlock-freedom given twice (liveness stands for"},
		{"lock safe, lock safe", "lock given twice"},
		{"liveliness ok", `unknown part "liveliness"`},
	} {
		if _, err := ParseExpectation(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseExpectation(%q): %v, want an error saying %q", tc.s, err, tc.want)
		}
	}

	res := func(p1, df, ft Verdict) Result {
		r := Result{Verdict: verdict.Worse(p1, verdict.Worse(df, ft)), Properties: []Property{{Name: PropLeaseLock, Verdict: p1, Decides: true}}}
		r.Liveness = &LivenessResult{DeadlockFreedom: LivenessPromise{Verdict: df}, FaultTolerance: LivenessPromise{Verdict: ft}}
		return r
	}
	for _, tc := range []struct {
		expect     string
		p1, df, ft Verdict
		met        bool
	}{
		{"lock violation, liveness ok", Invalid, Valid, Valid, true},
		{"lock violation, liveness ok", Invalid, Invalid, Valid, false},
		{"lock violation, liveness ok", Invalid, Valid, Invalid, false},
		{"lock violation, liveness ok", Invalid, Valid, Unknown, false},
		{"lock safe, deadlock-freedom ok", Valid, Valid, Unknown, false}, // the verdict is unknown
		{"deadlock-freedom violation", Valid, Invalid, Valid, true},
		{"deadlock-freedom violation", Valid, Valid, Valid, false},
		{"fault-tolerance any", Invalid, Valid, Invalid, true},
	} {
		r := res(tc.p1, tc.df, tc.ft)
		if got := Met(tc.expect, r); got != tc.met {
			t.Errorf("Met(%q, P1 %s, DF %s, FT %s) = %v, want %v", tc.expect, tc.p1, tc.df, tc.ft, got, tc.met)
		}
	}
	// A result judged before liveness was meets no liveness expectation.
	old := Result{Verdict: Valid, Properties: []Property{{Name: PropLeaseLock, Verdict: Valid, Decides: true}}}
	if Met("lock safe, liveness ok", old) || !Met("lock safe", old) {
		t.Error("a result without liveness answers met a liveness expectation, or failed a safety one")
	}
}
