package history

import (
	"strings"
	"testing"
)

func TestPair(t *testing.T) {
	ev := func(p string, typ Type, f Func, key string) Event {
		return Event{Process: p, Type: typ, F: f, Key: key}
	}
	fault := Event{Process: ProcessNemesis, Type: Info, F: Nemesis}
	end := Event{Process: ProcessHarness, Type: Info, F: End}
	stall := Event{Process: ProcessHarness, Type: Info, F: Stall}
	for _, tt := range []struct {
		name   string
		events []Event
		// ops are "invoke→completion" positions, -1 for none.
		ops      [][2]int
		pending  []int
		problems []string
	}{
		{name: "empty"},
		{
			name: "interleaved clients, faults, a stall and the end are no operations",
			events: []Event{ev("c1", Invoke, Acquire, "k"), fault, ev("c2", Invoke, Write, "r"), stall, ev("c1", OK, Acquire, "k"),
				ev("c2", Fail, Write, "r"), end},
			ops: [][2]int{{0, 4}, {2, 5}},
		},
		{
			name:    "pending at the end",
			events:  []Event{ev("c1", Invoke, Read, "r"), ev("c2", Invoke, Acquire, "k"), ev("c1", OK, Read, "r")},
			ops:     [][2]int{{0, 2}, {1, -1}},
			pending: []int{1},
		},
		{
			name:     "invoke while pending",
			events:   []Event{ev("c1", Invoke, Acquire, "k"), ev("c1", Invoke, Release, "k"), ev("c1", OK, Release, "k")},
			ops:      [][2]int{{0, -1}, {1, 2}},
			problems: []string{"process c1 invoked release (event 0) while its acquire (event 0) was still pending"},
		},
		{
			name:     "completion of nothing",
			events:   []Event{ev("c1", OK, Acquire, "k")},
			problems: []string{"completes no pending invoke"},
		},
		{
			name:     "completion of another function",
			events:   []Event{ev("c1", Invoke, Acquire, "k"), ev("c1", OK, Release, "k")},
			ops:      [][2]int{{0, -1}},
			problems: []string{"completes a acquire"},
		},
		{
			name:     "completion of another key",
			events:   []Event{ev("c1", Invoke, Acquire, "k"), ev("c1", OK, Acquire, "j")},
			ops:      [][2]int{{0, -1}},
			problems: []string{`is for key "j" but its invoke (event 0) was for "k"`},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := Pair(tt.events)
			pos := func(e *Event) int {
				for i := range tt.events {
					if &tt.events[i] == e {
						return i
					}
				}
				return -1
			}
			var got [][2]int
			for k, o := range p.Ops {
				got = append(got, [2]int{pos(o.Invoke), pos(o.Completion)})
				if p.OpOf(pos(o.Invoke)) != k || o.Done() && p.OpOf(pos(o.Completion)) != k {
					t.Errorf("OpOf does not lead back to op %d", k)
				}
				if o.Done() != (o.Type() != "") {
					t.Errorf("op %d: Done %v but Type %q", k, o.Done(), o.Type())
				}
			}
			if len(got) != len(tt.ops) {
				t.Fatalf("ops %v, want %v", got, tt.ops)
			}
			for i := range got {
				if got[i] != tt.ops[i] {
					t.Errorf("ops %v, want %v", got, tt.ops)
				}
			}
			if len(p.Pending) != len(tt.pending) || len(p.Pending) > 0 && p.Pending[0] != tt.pending[0] {
				t.Errorf("pending %v, want %v", p.Pending, tt.pending)
			}
			if len(p.Problems) != len(tt.problems) {
				t.Fatalf("problems %+v, want %q", p.Problems, tt.problems)
			}
			for i, want := range tt.problems {
				if !strings.Contains(p.Problems[i].Text, want) {
					t.Errorf("problem %q, want it to say %q", p.Problems[i].Text, want)
				}
			}
		})
	}
}

func TestOpDescribe(t *testing.T) {
	tok := int64(6)
	for _, tt := range []struct {
		op   Op
		want string
	}{
		{Op{Invoke: &Event{Process: "c1", F: Write, Key: "counter", Value: MustValue(5)}, Completion: &Event{Token: &tok}},
			`c1's write of 5 to "counter" with token 6`},
		{Op{Invoke: &Event{Process: "c2", F: Read, Key: "counter"}}, `c2's read of "counter"`},
		{Op{Invoke: &Event{Process: "c3", F: Add, Key: "s", Value: []byte(`{ "a" : 1 }`), Token: &tok}}, `c3's add of {"a":1} to "s" with token 6`},
		{Op{Invoke: &Event{Process: "c4", F: Write, Value: MustValue(strings.Repeat("x", 80))}}, `c4's write of "` + strings.Repeat("x", 56) + "…"},
	} {
		if got := tt.op.Describe(); got != tt.want {
			t.Errorf("Describe() = %q, want %q", got, tt.want)
		}
	}
}
