package runner

import (
	"testing"

	"splitbrain/scenarios/spec"
)

// Every kind of step the parser reads is played: the workload's steps by
// step, every other by the fault registry, and no kind is both a play and
// a build unless its play uses the build (clock, pause).
func TestEveryStepKindIsPlayed(t *testing.T) {
	workload := map[spec.StepKind]bool{spec.StepAcquire: true, spec.StepRelease: true, spec.StepExtend: true, spec.StepWait: true}
	for _, k := range spec.StepKinds() {
		_, play := faultPlays[k]
		_, build := faultBuilds[k]
		switch {
		case workload[k] && (play || build):
			t.Errorf("%s: a workload step in the fault registry", k)
		case !workload[k] && !play && !build:
			t.Errorf("%s: no play and no build in the fault registry", k)
		}
	}
	for k := range faultBuilds {
		if _, play := faultPlays[k]; play && k != spec.StepClock && k != spec.StepPause {
			t.Errorf("%s: both a play and a build", k)
		}
	}
}
