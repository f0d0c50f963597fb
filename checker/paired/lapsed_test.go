package paired

import (
	"strings"
	"testing"

	"splitbrain/history"
	"splitbrain/history/historytest"
)

// A grant whose deadline is at or before its OK is noted, once for the
// history with the count and the first; a grant with validity left, or
// a late extension's lapsed lease (noted on its own), is not counted.
func TestLapsedGrantsNoted(t *testing.T) {
	for _, tt := range []struct {
		name string
		b    *historytest.Builder
		want string // in the note; "" for no note
	}{
		{"validity left", (&historytest.Builder{}).
			Add("c1", history.Invoke, history.Acquire, "k", 0.1).
			Add("c1", history.OK, history.Acquire, "k", 0.3, historytest.Deadline(0.31)), ""},
		{"deadline at the OK", (&historytest.Builder{}).
			Add("c1", history.Invoke, history.Acquire, "k", 0.1).
			Add("c1", history.OK, history.Acquire, "k", 0.3, historytest.Deadline(0.3)),
			`1 grant(s) came with no validity left`},
		{"two lapsed, the first named", (&historytest.Builder{}).
			Add("c2", history.Invoke, history.Acquire, "k", 0.1).
			Add("c2", history.OK, history.Acquire, "k", 0.5, historytest.Deadline(0.2)).
			Add("c1", history.Invoke, history.Acquire, "j", 0.6).
			Add("c1", history.OK, history.Acquire, "j", 0.9, historytest.Deadline(0.7)),
			`2 grant(s) came with no validity left (the lease's deadline at or before its OK): the lock said yes, the client held nothing; first: acquire by c2 on "k" at event 1, valid until 0.200s, told at 0.500s (0.300s late)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := Analyze(tt.b.Events())
			notes := strings.Join(h.Notes, "\n")
			if got := strings.Contains(notes, "came with no validity left"); got != (tt.want != "") || !strings.Contains(notes, tt.want) {
				t.Errorf("notes %q, want %q", notes, tt.want)
			}
		})
	}
}
