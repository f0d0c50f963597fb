package runner

import (
	"testing"

	"splitbrain/scenarios/spec"
)

func TestExpectErrorNamesTheStep(t *testing.T) {
	e := &ExpectError{Step: 5, Kind: spec.StepAcquire, Client: "c2", Want: spec.OutcomeAcquired, Got: spec.OutcomeRefused,
		Cause: errString("redlock: lock \"lock\" not acquired\nn1: timeout")}
	want := `step 5 (acquire c2): expected acquired, was refused: redlock: lock "lock" not acquired`
	if e.Error() != want {
		t.Errorf("got %q, want %q", e.Error(), want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
