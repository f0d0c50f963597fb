package paired

import (
	"strings"
	"testing"

	"splitbrain/history"
	"splitbrain/history/historytest"
)

func TestClientBeliefsCovering(t *testing.T) {
	at := historytest.Sec
	b := func(key string, start, end float64, reason string) *Belief {
		return &Belief{Client: "c1", Key: key, Start: at(start), End: at(end), EndReason: reason}
	}
	// A long belief on one key and short ones on another, interleaved.
	c := &clientBeliefs{bs: []*Belief{
		b("b", 2.0, 2.2, EndRelease),
		b("a", 0.0, 5.0, EndDeadline),
		b("b", 1.0, 1.1, EndRelease),
		b("c", 6.0, 6.0, EndOpen),
	}}
	c.index()
	for _, tt := range []struct {
		t    float64
		want string
	}{
		{-1, ""}, {0.5, "a"}, {1.05, "a b"}, {2.1, "a b"}, {4.9, "a"}, {5.5, ""}, {6.0, "c"}, {100, "c"},
	} {
		got, ok := c.covering(at(tt.t))
		if (tt.want == "") == ok || ok && !strings.Contains(tt.want, got.Key) {
			t.Errorf("covering(%vs) = %q, %v; want %q", tt.t, got.Key, ok, tt.want)
		}
	}
	w := history.Op{Invoke: &history.Event{Process: "c1", F: history.Write, Key: "k", Time: at(5.5)}, Completion: &history.Event{Time: at(5.6)}}
	if s, ok := c.outside(w); !ok || !strings.Contains(s.Text, `c1's belief in "a" had ended at 5.00s`) || s.Belief == nil || s.Belief.Key != "a" || s.Late {
		t.Errorf("outside = %+v, want the latest-ending belief before the write", s)
	}
	none := &clientBeliefs{}
	none.index()
	if s, ok := none.outside(w); !ok || !strings.Contains(s.Text, "although c1 held no lock") || s.Belief != nil {
		t.Errorf("outside without beliefs = %+v", s)
	}
}
