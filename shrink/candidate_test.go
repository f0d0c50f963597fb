package shrink

import (
	"strings"
	"testing"
	"time"

	"splitbrain/scenarios/spec"

	"go.yaml.in/yaml/v3"
)

const runScenario = `name: pauses
description: >
  Pauses, every second. # not a comment
# about the lock
expect: any
cluster: {nodes: 5, persistence: {default: none, n3: aof-always}}
lock:
  kind: [redlock, redsync]
  # Short, so that a pause outlasts it.
  ttl: 600ms
workload: {kind: counter, clients: 3, duration: 5500ms}
steps:
  - wait: 250ms
  - random: {faults: [pause, client-pause], interval: 1s, duration: 200ms..1s, for: 5s}
`

func testWriter(t *testing.T) *writer {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(runScenario), &doc); err != nil {
		t.Fatal(err)
	}
	return &writer{doc: &doc, name: "pauses-shrunk", lock: "redsync"}
}

// A candidate is written as the run's scenario with its own name,
// description, expectation, lock, workload size and steps — the faults
// at their times with the waits between, clients renamed c1..cN — and
// reads back as exactly that; what it does not change stays as the file
// had it.
func TestCandidateFile(t *testing.T) {
	w := testWriter(t)
	c := &candidate{clients: []string{"c1", "c3"}, keys: 1, duration: 1800 * time.Millisecond, faults: []fault{
		{id: 4, at: ms(250), step: spec.Step{Kind: spec.StepPause, Client: "c3", ClientPause: spec.ClientPause{Point: "before-write", Within: time.Second}, For: span(ms(844)), HasFor: true}},
		{id: 5, at: ms(250), step: spec.Step{Kind: spec.StepPause, Node: "n2", For: span(ms(300)), HasFor: true}},
		{id: 9, at: ms(1250), step: spec.Step{Kind: spec.StepStrobe, Node: "n4", Span: span(-ms(1802)), Period: ms(36), For: span(ms(761)), HasFor: true}},
	}}
	comments := map[string]string{noteFault(4): "needed: without it, 0 of 1 replays violated", noteWait(9): "a wait of 500ms, 1 of 2", noteClients: "3 in the run"}
	src, err := w.file(c, "Shrunk from a run.\n\nIt reproduces.\n", comments)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	sc, err := spec.Parse(src, "pauses-shrunk.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if sc.Name != "pauses-shrunk" || sc.Expect != spec.ExpectViolation || sc.Lock.Kind != "redsync" || len(sc.Locks) != 1 ||
		sc.Lock.TTL != ms(600) || sc.Persistence["n3"] != "aof-always" || sc.Description != "Shrunk from a run.\n\nIt reproduces." {
		t.Errorf("read back as %+v\n%s", sc, text)
	}
	if len(sc.Clients) != 2 || sc.Workload.Keys != 1 || sc.Workload.Duration != 1800*time.Millisecond || sc.Workload.Kind != "counter" {
		t.Errorf("workload %+v, clients %v", sc.Workload, sc.Clients)
	}
	want := []spec.Step{
		{Kind: spec.StepWait, Span: span(ms(250))},
		{Kind: spec.StepPause, Client: "c2", ClientPause: spec.ClientPause{Point: "before-write", Within: time.Second}, For: span(ms(844)), HasFor: true},
		{Kind: spec.StepPause, Node: "n2", For: span(ms(300)), HasFor: true},
		{Kind: spec.StepWait, Span: span(time.Second)},
		{Kind: spec.StepStrobe, Node: "n4", Span: span(-ms(1802)), Period: ms(36), For: span(ms(761)), HasFor: true},
	}
	if len(sc.Steps) != len(want) {
		t.Fatalf("%d steps, want %d:\n%s", len(sc.Steps), len(want), text)
	}
	for i, st := range sc.Steps {
		st.Line = 0
		if !equalStep(st, want[i]) {
			t.Errorf("step %d: %+v\nwant %+v", i, st, want[i])
		}
	}
	for _, s := range []string{
		"# needed: without it, 0 of 1 replays violated\n  - pause: {client: c2,",
		"# a wait of 500ms, 1 of 2\n  - wait: 1s",
		"clients: 2 # 3 in the run",
		"# Short, so that a pause outlasts it.\n  ttl: 600ms",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("the file lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "random:") || strings.Contains(text, "every second") {
		t.Errorf("the run's steps or description are left in:\n%s", text)
	}
}

func equalStep(a, b spec.Step) bool {
	return a.Kind == b.Kind && a.Client == b.Client && a.Node == b.Node && a.Point == b.Point && a.Span == b.Span &&
		a.Period == b.Period && a.For == b.For && a.HasFor == b.HasFor && a.Within == b.Within
}

// Without faults the file still reads back: the workload alone.
func TestCandidateFileWithoutFaults(t *testing.T) {
	src, err := testWriter(t).file(&candidate{clients: []string{"c2", "c3"}, keys: 1, duration: ms(500)}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := spec.Parse(src, "s.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	if len(sc.Steps) != 0 || len(sc.Clients) != 2 || !strings.Contains(string(src), "no fault") {
		t.Errorf("read back %+v from\n%s", sc, src)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"a b c", 72, "a b c"},
		{"aaa bbb ccc", 7, "aaa bbb\nccc"},
		{"a-very-long-word-past-the-width and more", 10, "a-very-long-word-past-the-width\nand more"},
		{"", 10, ""},
	} {
		if got := wrap(tc.in, tc.width); got != tc.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}

func TestTimeFlag(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want time.Duration
		bad  bool
	}{
		{"splitbrain run random-clock-counter --seed 1 --lock redlock", 0, false},
		{"splitbrain run x --seed 1 --time 30s --lock redsync", 30 * time.Second, false},
		{"splitbrain run x --time=2m", 2 * time.Minute, false},
		{"splitbrain run x --time soon", 0, true},
	} {
		got, err := timeFlag(tc.cmd)
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("timeFlag(%q) = %v, %v; want %v (error: %v)", tc.cmd, got, err, tc.want, tc.bad)
		}
	}
}
