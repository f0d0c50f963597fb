package spec

import (
	"strings"
	"testing"
	"time"
)

func TestParseSentinel(t *testing.T) {
	t.Parallel()
	const head = "name: s\nexpect: any\nlock: {kind: single}\nworkload: {clients: 2}\n"
	tests := []struct {
		name, cluster, steps string
		wantErr              string // empty: parses
		check                func(*testing.T, *Scenario)
	}{
		{name: "timings from the file",
			cluster: "cluster: {nodes: 1, replicas: {n1: 2}, sentinel: {down_after: 500ms, failover_timeout: 2s}}\n",
			steps:   "steps:\n  - partition: {shape: sides, sides: [[n1, s1, c1], [r1, r1b, s2, s3, c2]]}\n  - wait: {until: promoted, timeout: 5s}\n",
			check: func(t *testing.T, sc *Scenario) {
				want := SentinelSpec{Count: 3, Quorum: 2, DownAfter: 500 * time.Millisecond, FailoverTimeout: 2 * time.Second}
				if *sc.Sentinel != want {
					t.Errorf("Sentinel = %+v, want %+v", *sc.Sentinel, want)
				}
				if got := sc.Steps[0].Sides; len(got) != 2 || len(got[1]) != 5 {
					t.Errorf("sides = %v", got)
				}
			}},
		{name: "needs replicas of n1", cluster: "cluster: {nodes: 1, sentinel: {}}\n", steps: "steps:\n  - wait: 1s\n",
			wantErr: "cluster.replicas with n1"},
		{name: "quorum within the sentinels", cluster: "cluster: {nodes: 1, replicas: [n1], sentinel: {sentinels: 3, quorum: 4}}\n",
			steps: "steps:\n  - wait: 1s\n", wantErr: "cluster.sentinel.quorum"},
		{name: "unknown name on a side", cluster: "cluster: {nodes: 1, replicas: [n1], sentinel: {}}\n",
			steps: "steps:\n  - partition: {shape: sides, sides: [[n1, s9], [r1]]}\n", wantErr: `unknown name "s9"`},
		{name: "a name on two sides", cluster: "cluster: {nodes: 1, replicas: [n1], sentinel: {}}\n",
			steps: "steps:\n  - partition: {shape: sides, sides: [[n1, s1], [s1]]}\n", wantErr: "s1 is on two sides"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc, err := Parse([]byte(head+tt.cluster+tt.steps), "s.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, sc)
		})
	}
}
