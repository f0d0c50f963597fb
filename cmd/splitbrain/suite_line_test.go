package main

import (
	"testing"

	"splitbrain/checker"
)

// A play's one-line verdict names every deciding property that was not
// valid besides the lock's promise and the resource, which the line already
// names; properties that do not decide, or that held, stay out.
func TestOtherAnswers(t *testing.T) {
	prop := func(name string, v checker.Verdict, decides bool) checker.Property {
		return checker.Property{Name: name, Verdict: v, Decides: decides}
	}
	tests := []struct {
		name  string
		props []checker.Property
		want  string
	}{
		{"all valid", []checker.Property{
			prop(checker.PropLeaseLock, checker.Valid, true),
			prop(checker.PropCriticalSection, checker.Valid, true),
		}, ""},
		{"critical section overran", []checker.Property{
			prop(checker.PropLeaseLock, checker.Valid, true),
			prop(checker.PropCriticalSection, checker.Invalid, true),
		}, ", critical-section (P2) invalid"},
		{"critical section unknown", []checker.Property{
			prop(checker.PropCriticalSection, checker.Unknown, true),
		}, ", critical-section (P2) unknown"},
		{"does not decide", []checker.Property{
			prop(checker.PropCriticalSection, checker.Invalid, false),
		}, ""},
		{"lock and resource are named elsewhere", []checker.Property{
			prop(checker.PropLeaseLock, checker.Invalid, true),
			prop(checker.PropCounter, checker.Invalid, true),
			prop(checker.PropFencing, checker.Invalid, true),
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := otherAnswers(checker.Result{Properties: tc.props}); got != tc.want {
				t.Errorf("otherAnswers = %q, want %q", got, tc.want)
			}
		})
	}
}
