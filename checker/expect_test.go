package checker

import "testing"

// A verdict meets a word of expectation: violation wants invalid, safe
// valid, any either; unknown meets none, and neither does a word that is
// not one.
func TestAsExpected(t *testing.T) {
	tests := []struct {
		expect string
		v      Verdict
		want   bool
	}{
		{"violation", Invalid, true},
		{"violation", Valid, false},
		{"safe", Valid, true},
		{"safe", Invalid, false},
		{"safe", Unknown, false},
		{"violation", Unknown, false},
		{"any", Valid, true},
		{"any", Invalid, true},
		{"any", Unknown, false},
		{"nonsense", Valid, false},
	}
	for _, tt := range tests {
		if got := AsExpected(tt.expect, tt.v); got != tt.want {
			t.Errorf("AsExpected(%q, %s) = %v, want %v", tt.expect, tt.v, got, tt.want)
		}
	}
}
