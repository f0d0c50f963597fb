package runner_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/scenarios/spec"
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
	sc, err := spec.Parse([]byte(src), "timed-steps.yaml")
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
	if len(jumps) != 1 || !jumps[0].Healed || jumps[0].End-jumps[0].Start < int64(150*time.Millisecond) ||
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

// Unroll draws what the runner draws: after steps that draw ranges from
// the same streams (a random pause point, a strobe's delta, a random
// grudge, a delay, a jump, a wait), a random schedule of every kind
// unrolls into exactly the faults a real run with that seed records, in
// the order it starts them.
func TestUnrollMatchesRun(t *testing.T) {
	t.Parallel()
	const src = `name: unroll-matches
expect: any
cluster: {nodes: 3}
lock: {kind: redlock, ttl: 300ms, node_timeout: 100ms}
workload: {kind: mutex, clients: 2, duration: 2s}
steps:
  - pause: {client: c1, at: random, for: 50ms..150ms, within: 100ms}
  - wait: 20ms..80ms
  - strobe: {node: n2, delta: 1s..2s, period: 20ms, for: 50ms..100ms}
  - partition: {shape: random, for: 30ms..60ms}
  - net: {client: c2, nodes: [n1], fault: delay, delay: 5ms..20ms, for: 30ms..50ms}
  - clock: {node: n3, jump: -2s..2s, for: 40ms..80ms}
  - wait: 100ms
  - random: {faults: [clock, pause, partition, client-pause, kill, amnesia], interval: 150ms, duration: 40ms..120ms, for: 1500ms, max_clock: 1s}
`
	sc, err := spec.Parse([]byte(src), "unroll-matches.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const seed = 7
	faults, _, err := sc.Unroll(seed)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range faults {
		for _, r := range f.Records {
			want = append(want, checker.FaultLabel(r))
		}
	}
	out := runScenario(t, context.Background(), sc, seed)
	var got []string
	for _, f := range out.Result.Faults {
		if f.Kind != "client-pause-held" {
			f.Detail = ""
			got = append(got, checker.FaultLabel(f.Fault))
		}
	}
	if len(want) < 12 {
		t.Fatalf("only %d faults unrolled: %v", len(want), want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the run recorded\n  %s\nUnroll drew\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
