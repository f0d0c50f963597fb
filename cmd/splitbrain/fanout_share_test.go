package main

import "testing"

// Tasks pinned to one node share what the suite would play at once on
// it; a --parallel the user gives, in any of its spellings, is theirs.
func TestSwarmShare(t *testing.T) {
	for _, tc := range []struct {
		perMachine, tasks, want int
	}{
		{32, 4, 8}, // this project's 2 cores, the 4 tasks
		{32, 3, 10},
		{32, 1, 32},
		{32, 40, 1}, // more tasks than the machine's plays: one each
		{48, 0, 48}, // no tasks counted: the whole
	} {
		if got := swarmShare(tc.perMachine, tc.tasks); got != tc.want {
			t.Errorf("swarmShare(%d, %d) = %d, want %d", tc.perMachine, tc.tasks, got, tc.want)
		}
	}
	for _, tc := range []struct {
		raw  []string
		want bool
	}{
		{[]string{"--seed", "5", "--runs", "3"}, false},
		{[]string{"--parallel", "2"}, true},
		{[]string{"-parallel", "2"}, true},
		{[]string{"--parallel=2"}, true},
		{[]string{"-parallel=2"}, true},
		{[]string{"--parallelism", "2"}, false},
	} {
		if got := parallelGiven(tc.raw); got != tc.want {
			t.Errorf("parallelGiven(%q) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}
