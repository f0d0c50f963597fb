package shrink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"splitbrain/scenarios/spec"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func span(d time.Duration) spec.Span { return spec.Span{Min: d, Max: d} }

// tenFaults is a candidate like a random schedule's: ten clock jumps, one
// every 500ms from 250ms, each 400ms long, three clients, two keys.
func tenFaults() *candidate {
	c := &candidate{clients: []string{"c1", "c2", "c3"}, keys: 2, duration: 5500 * time.Millisecond}
	for i := range 10 {
		c.faults = append(c.faults, fault{id: i, at: ms(250 + 500*i),
			step: spec.Step{Kind: spec.StepClock, Node: fmt.Sprintf("n%d", i%5+1), Span: span(time.Second), For: span(ms(400)), HasFor: true}})
	}
	return c
}

func ids(c *candidate) []int {
	var out []int
	for _, f := range c.faults {
		out = append(out, f.id)
	}
	return out
}

func has(c *candidate, id int) (fault, bool) {
	for _, f := range c.faults {
		if f.id == id {
			return f, true
		}
	}
	return fault{}, false
}

// fakeSearch is a search whose replays are an oracle: a candidate
// violates, in every replay, when violates says so.
func fakeSearch(base *candidate, violates func(*candidate) bool, at func(*candidate) time.Duration) *search {
	const k = 3
	return &search{
		k: k, slack: ms(700), best: base, bestV: verdict{violated: k, runs: k, at: at(base)}, chain: []*candidate{base},
		notes: map[string]note{}, cache: map[string]verdict{},
		test: func(_ context.Context, c *candidate, early bool) (verdict, error) {
			if violates(c) {
				return verdict{violated: k, runs: k, at: at(c)}, nil
			}
			return verdict{violated: 0, runs: 1, at: -1}, nil
		},
		key:  func(c *candidate) (string, error) { return fmt.Sprintf("%+v", *c), nil },
		logf: func(string, ...any) {},
	}
}

// The search finds what an oracle says the violation needs, and says in
// its notes why each part it kept is kept.
func TestSearchFindsWhatTheViolationNeeds(t *testing.T) {
	noTime := func(*candidate) time.Duration { return -1 }
	for _, tc := range []struct {
		name     string
		violates func(*candidate) bool
		at       func(*candidate) time.Duration
		check    func(t *testing.T, s *search)
	}{
		{"two faults of ten, each at least 300ms", func(c *candidate) bool {
			f3, ok3 := has(c, 3)
			f7, ok7 := has(c, 7)
			return ok3 && ok7 && f3.step.For.Min >= ms(300) && f7.step.For.Min >= ms(300) && len(c.clients) >= 2
		}, noTime, func(t *testing.T, s *search) {
			if got := ids(s.best); !slices.Equal(got, []int{3, 7}) {
				t.Errorf("faults %v, want [3 7]", got)
			}
			if len(s.best.clients) != 2 || s.best.keys != 1 {
				t.Errorf("%d clients, %d keys; want 2 and 1", len(s.best.clients), s.best.keys)
			}
			for _, id := range []int{3, 7} {
				if n := s.notes[noteFault(id)]; !strings.Contains(n.text, "without it, 0 of 1") {
					t.Errorf("fault %d's note %q, want what its removal did", id, n.text)
				}
				if n := s.notes[noteFor(id)]; !strings.Contains(n.text, "for 200ms, 0 of 1") {
					t.Errorf("fault %d's length note %q, want what halving it did", id, n.text)
				}
			}
			if s.best.duration >= 5500*time.Millisecond || s.best.duration < s.best.lastEnd() {
				t.Errorf("workload %v, want shorter than 5.5s and past its last fault (%v)", s.best.duration, s.best.lastEnd())
			}
		}},
		{"one fault, three clients", func(c *candidate) bool {
			_, ok := has(c, 5)
			return ok && len(c.clients) == 3
		}, noTime, func(t *testing.T, s *search) {
			if got := ids(s.best); !slices.Equal(got, []int{5}) {
				t.Errorf("faults %v, want [5]", got)
			}
			if len(s.best.clients) != 3 {
				t.Errorf("clients %v, want all three", s.best.clients)
			}
			for _, c := range []string{"c1", "c2", "c3"} {
				if n := s.notes[noteClient(c)]; !strings.Contains(n.text, "without it, 0 of 1") {
					t.Errorf("client %s's note %q", c, n.text)
				}
			}
		}},
		{"the workload alone", func(c *candidate) bool { return true }, noTime, func(t *testing.T, s *search) {
			if len(s.best.faults) != 0 || len(s.best.clients) != 2 || s.best.keys != 1 {
				t.Errorf("best %s, want no fault, 2 clients, 1 key", s.best.size())
			}
			if s.best.duration > ms(100) {
				t.Errorf("workload %v, want it as short as the search goes", s.best.duration)
			}
		}},
		{"a fault at its time, not sooner", func(c *candidate) bool {
			f, ok := has(c, 4)
			return ok && f.at >= ms(2000) && len(c.clients) >= 2
		}, noTime, func(t *testing.T, s *search) {
			f, ok := has(s.best, 4)
			if !ok || len(s.best.faults) != 1 || f.at < ms(2000) || f.at > ms(2250) {
				t.Fatalf("best %+v, want fault 4 alone at 2s to 2.25s", s.best.faults)
			}
			if n := s.notes[noteWait(4)]; !strings.Contains(n.text, "a wait of") || !strings.Contains(n.text, "0 of 1") {
				t.Errorf("its wait's note %q, want what a shorter wait did", n.text)
			}
		}},
		{"cut after the violation", func(c *candidate) bool {
			_, ok := has(c, 1)
			return ok && len(c.clients) >= 2
		}, func(c *candidate) time.Duration { return ms(1000) }, func(t *testing.T, s *search) {
			if got := ids(s.best); !slices.Equal(got, []int{1}) {
				t.Errorf("faults %v, want [1]", got)
			}
			if s.tried > 25 {
				t.Errorf("%d candidates tried; cutting after the violation at 1s should spare most", s.tried)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeSearch(tenFaults(), tc.violates, tc.at)
			if err := s.run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !tc.violates(s.best) {
				t.Fatalf("the best, %s, does not violate", s.best.size())
			}
			if len(s.chain) != s.version+1 || s.chain[len(s.chain)-1] != s.best {
				t.Errorf("chain of %d with version %d, want every accepted candidate, the best last", len(s.chain), s.version)
			}
			t.Logf("%d candidates tried, %d accepted: %s", s.tried, s.version, s.best.size())
			tc.check(t, s)
		})
	}
}

// When the budget is spent, the search stops with the best so far; when
// ctx ends, with ctx's error.
func TestSearchStops(t *testing.T) {
	violates := func(c *candidate) bool { _, ok := has(c, 2); return ok }
	s := fakeSearch(tenFaults(), violates, func(*candidate) time.Duration { return -1 })
	left := 3
	s.fits = func() bool { left--; return left >= 0 }
	if err := s.run(context.Background()); !errors.Is(err, errBudget) {
		t.Fatalf("error %v, want errBudget", err)
	}
	if s.tried != 3 || !violates(s.best) {
		t.Errorf("%d tried, best %v; want 3 tried and a best that violates", s.tried, ids(s.best))
	}

	ctx, cancel := context.WithCancel(context.Background())
	s = fakeSearch(tenFaults(), violates, func(*candidate) time.Duration { return -1 })
	inner := s.test
	s.test = func(ctx context.Context, c *candidate, early bool) (verdict, error) {
		if s.tried == 2 {
			cancel()
			return verdict{}, ctx.Err()
		}
		return inner(ctx, c, early)
	}
	if err := s.run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// A candidate tried before is not replayed again.
func TestSearchCachesCandidates(t *testing.T) {
	replayed := map[string]int{}
	s := fakeSearch(tenFaults(), func(c *candidate) bool { _, ok := has(c, 6); return ok && len(c.clients) >= 2 },
		func(*candidate) time.Duration { return -1 })
	inner := s.test
	s.test = func(ctx context.Context, c *candidate, early bool) (verdict, error) {
		k, _ := s.key(c)
		replayed[k]++
		return inner(ctx, c, early)
	}
	if err := s.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for k, n := range replayed {
		if n > 1 {
			t.Errorf("replayed %d times: %s", n, k)
		}
	}
	if s.tried != len(replayed) {
		t.Errorf("tried %d, replayed %d distinct candidates", s.tried, len(replayed))
	}
}

func TestSplit(t *testing.T) {
	fs := tenFaults().faults
	for _, tc := range []struct {
		n    int
		want []int
	}{{1, []int{10}}, {2, []int{5, 5}}, {3, []int{3, 3, 4}}, {4, []int{2, 3, 2, 3}}, {10, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}} {
		var got []int
		total := 0
		for _, ch := range split(fs, tc.n) {
			got = append(got, len(ch))
			total += len(ch)
		}
		if !slices.Equal(got, tc.want) || total != len(fs) {
			t.Errorf("split into %d: sizes %v, want %v", tc.n, got, tc.want)
		}
	}
}
