package main

import "testing"

// Several plays exit with the worst: an internal error, then invalid,
// then unknown; valid only when all are.
func TestWorstExit(t *testing.T) {
	tests := []struct {
		codes []int
		want  int
	}{
		{[]int{exitValid}, exitValid},
		{[]int{exitValid, exitValid}, exitValid},
		{[]int{exitValid, exitUnknown}, exitUnknown},
		{[]int{exitUnknown, exitInvalid}, exitInvalid},
		{[]int{exitInvalid, exitValid}, exitInvalid},
		{[]int{exitInvalid, exitInternal, exitUnknown}, exitInternal},
		{nil, exitValid},
	}
	for _, tt := range tests {
		if got := worstExit(tt.codes); got != tt.want {
			t.Errorf("worstExit(%v) = %d, want %d", tt.codes, got, tt.want)
		}
	}
}
