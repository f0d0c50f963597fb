package runner

import (
	"splitbrain/fault"
	"splitbrain/nemesis"
	"splitbrain/scenarios/spec"
)

// touchesLinks reports whether a fault of sc can reach a link between a
// client (or a replica, a sentinel) and a node, so that its run needs a
// proxy on every link (nemesis.NewNet). A run whose faults are all of
// nodes, clocks and clients dials its nodes directly instead
// (nemesis.NewDirectNet): proxies were a tenth to a sixth of such a run's
// CPU, servers included, and change nothing in it. The steps that cannot
// touch a link are listed one by one, so that a step kind added later
// keeps its proxies until someone decides otherwise; and a link fault
// that does reach a direct net fails the run (nemesis.DirectLinkError),
// it is never a fault that did nothing.
func touchesLinks(sc *spec.Scenario) bool {
	if sc.Sentinel != nil {
		return true
	}
	for _, st := range sc.Steps {
		switch st.Kind {
		case spec.StepAcquire, spec.StepRelease, spec.StepExtend, spec.StepWait, spec.StepHeal,
			spec.StepClock, spec.StepStrobe, spec.StepClockReset,
			spec.StepPause, spec.StepResume, spec.StepKill, spec.StepStop, spec.StepRestart, spec.StepStarve, spec.StepFsync:
		case spec.StepRandom:
			for _, k := range st.Schedule.Kinds {
				switch k {
				case fault.RandomClock, fault.RandomClockRate, fault.RandomPause, fault.RandomKill, fault.RandomAmnesia, fault.RandomPower, fault.RandomStarve, fault.RandomFsync, fault.RandomClientPause:
				default:
					return true
				}
			}
		default:
			return true
		}
	}
	return false
}

// newNet is the constructor of sc's links: proxies where a fault of sc can
// touch a link, direct links where none can (touchesLinks).
func newNet(sc *spec.Scenario) func(clients []string, nodes []nemesis.Endpoint) (*nemesis.Net, error) {
	if touchesLinks(sc) {
		return nemesis.NewNet
	}
	return nemesis.NewDirectNet
}
