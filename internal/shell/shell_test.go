package shell

import (
	"slices"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"clock-jump", "clock-jump"},
		{"store/a_b.c:d,e=f+g@h%i", "store/a_b.c:d,e=f+g@h%i"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$(x)", "'$(x)'"},
		{"~", "'~'"},
	} {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// What Command writes, Split reads back; anything else, and a word with
// a control character, it refuses.
func TestSplit(t *testing.T) {
	for _, args := range [][]string{
		{"splitbrain", "run", "clock-jump", "--seed", "7"},
		{"splitbrain", "run", "/tmp/my scenarios/it's $HOME & *.yaml", "--store", ""},
		{"splitbrain", "suite", "a'b'c", "'", "''"},
	} {
		got, ok := Split(Command(args...))
		if !ok || !slices.Equal(got, args) {
			t.Errorf("Split(Command(%q)) = %q, %v", args, got, ok)
		}
	}
	for _, line := range []string{
		"",
		"splitbrain run x; rm -rf ~",
		"splitbrain run $(touch pwned)",
		"splitbrain  run x",
		"splitbrain run x ",
		"splitbrain run 'unclosed",
		"splitbrain run 'a'b",
		"splitbrain run 'clock-jump'",
		"splitbrain run '\x1b]0;owned\x07'",
		"splitbrain run 'new\nline'",
		"splitbrain\trun",
	} {
		if got, ok := Split(line); ok {
			t.Errorf("Split(%q) = %q, want it refused", line, got)
		}
	}
}
