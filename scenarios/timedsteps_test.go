package scenarios_test

import (
	"context"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/scenarios"
)

// The steps a shrunk schedule is written in (package shrink) behave as the
// random schedule's faults did: a clock jump with for: goes back on its
// own, and a client pause that follows the client's previous one closer
// than that one's hold waits for it instead of failing the run.
func TestTimedClockAndBackToBackClientPauses(t *testing.T) {
	t.Parallel()
	const src = `name: timed-steps
expect: any
cluster: {nodes: 3}
lock: {kind: redlock, ttl: 300ms, node_timeout: 100ms}
workload: {kind: counter, clients: 2, duration: 1500ms}
steps:
  - wait: 100ms
  - clock: {node: n2, jump: 2s, for: 200ms}
  - pause: {client: c1, at: any, for: 400ms}
  - wait: 50ms
  - pause: {client: c1, at: any, for: 100ms}
`
	sc, err := scenarios.Parse([]byte(src), "timed-steps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := runScenario(t, context.Background(), sc, 1)
	var jumps, held []checker.FaultWindow
	for _, f := range out.Result.Faults {
		switch f.Kind {
		case "clock-jump":
			jumps = append(jumps, f)
		case "client-pause-held":
			held = append(held, f)
		}
	}
	if len(jumps) != 1 || !jumps[0].Healed || jumps[0].End-jumps[0].Start < int64(200*time.Millisecond) ||
		jumps[0].End-jumps[0].Start > int64(time.Second) {
		t.Errorf("clock jumps %+v, want one of n2, healed on its own after about 200ms", jumps)
	}
	if len(held) != 2 {
		t.Fatalf("c1 was held %d times (%+v), want twice: the second pause waits for the first", len(held), held)
	}
	if held[1].Start < held[0].End {
		t.Errorf("c1's second hold started at %d, before its first ended at %d", held[1].Start, held[0].End)
	}
}
