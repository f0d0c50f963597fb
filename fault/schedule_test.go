package fault_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"splitbrain/fault"
)

func spec() fault.ScheduleSpec {
	return fault.ScheduleSpec{
		Kinds:    fault.RandomKinds,
		Interval: 200 * time.Millisecond,
		MinFor:   50 * time.Millisecond,
		MaxFor:   150 * time.Millisecond,
		Total:    3 * time.Second,
	}
}

func TestScheduleSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*fault.ScheduleSpec)
		want string
	}{
		{"no kinds", func(s *fault.ScheduleSpec) { s.Kinds = nil }, "no fault kinds"},
		{"unknown kind", func(s *fault.ScheduleSpec) { s.Kinds = []string{"meteor"} }, `"meteor"`},
		{"unknown target", func(s *fault.ScheduleSpec) { s.Targets = []fault.Target{"half"} }, `target "half"`},
		{"no interval", func(s *fault.ScheduleSpec) { s.Interval = 0 }, "interval"},
		{"min above max", func(s *fault.ScheduleSpec) { s.MinFor = time.Second }, "0 < min ≤ max"},
		{"overlapping", func(s *fault.ScheduleSpec) { s.MaxFor = time.Second }, "must not overlap"},
		{"too short", func(s *fault.ScheduleSpec) { s.Total = time.Millisecond }, "shorter than one fault"},
		{"unknown pause point", func(s *fault.ScheduleSpec) { s.Points = []fault.Point{"lunch"} }, `point "lunch"`},
		{"any as a pause point", func(s *fault.ScheduleSpec) { s.Points = []fault.Point{fault.AnyPoint} }, `point "any"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			tc.edit(&s)
			_, err := fault.Plan(s, []string{"c1"}, five, rand.New(rand.NewPCG(1, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if err := spec().Validate(); err != nil {
		t.Errorf("good spec: %v", err)
	}
}

func TestPlanFollowsSeedAndSpec(t *testing.T) {
	clients := []string{"c1", "c2", "c3"}
	plan := func(seed uint64) []fault.Op {
		ops, err := fault.Plan(spec(), clients, five, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return ops
	}
	if a, b := plan(7), plan(7); !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed planned two schedules")
	}
	if reflect.DeepEqual(plan(7), plan(8)) {
		t.Fatal("two seeds planned the same schedule")
	}
	sizes := map[fault.Target]int{fault.TargetOne: 1, fault.TargetMinority: 2, fault.TargetMajority: 3, fault.TargetAll: 5}
	ofThree := map[fault.Target]int{fault.TargetOne: 1, fault.TargetMinority: 1, fault.TargetMajority: 2, fault.TargetAll: 3}
	kinds := map[string]bool{}
	for seed := range uint64(20) {
		ops := plan(seed)
		if len(ops) != 15 {
			t.Fatalf("seed %d: %d ops in 3s at 200ms, want 15", seed, len(ops))
		}
		for i, op := range ops {
			kinds[op.Kind] = true
			if op.For < 50*time.Millisecond || op.For > 150*time.Millisecond || op.At != time.Duration(i)*200*time.Millisecond {
				t.Fatalf("seed %d op %d: at %v for %v", seed, i, op.At, op.For)
			}
			switch op.Kind {
			case fault.RandomPause, fault.RandomKill, fault.RandomAmnesia:
				if len(op.Nodes) != sizes[op.Target] {
					t.Errorf("%v: %d nodes", op, len(op.Nodes))
				}
			case fault.RandomClock:
				if len(op.Nodes) != sizes[op.Target] || (op.Strobe == 0 && len(op.Offsets) != len(op.Nodes)) {
					t.Errorf("%v: nodes %v offsets %v", op, op.Nodes, op.Offsets)
				}
				for _, o := range op.Offsets {
					if o == 0 || o > 10*time.Second || o < -10*time.Second {
						t.Errorf("%v: offset %v", op, o)
					}
				}
			case fault.RandomClientPause:
				if len(op.Clients) != ofThree[op.Target] {
					t.Errorf("%v: %d clients", op, len(op.Clients))
				}
				if !fault.ValidPoint(op.Point) {
					t.Errorf("%v: point %q", op, op.Point)
				}
			case fault.RandomPartition:
				if len(op.Links) == 0 {
					t.Errorf("%v: no links", op)
				}
			}
		}
	}
	if len(kinds) != len(fault.RandomKinds) {
		t.Errorf("20 seeds drew kinds %v, want all of %v", kinds, fault.RandomKinds)
	}
	// The last fault ends with the schedule.
	s := spec()
	s.Total = 250 * time.Millisecond
	ops, err := fault.Plan(s, clients, five, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if last := ops[len(ops)-1]; last.At+last.For > s.Total {
		t.Errorf("last op %v ends after the schedule's %v", last, s.Total)
	}
}

// Client pauses are drawn from the spec's points (and any), the lock's hook
// points when it names none.
func TestPlanDrawsPausePoints(t *testing.T) {
	for _, tc := range []struct {
		points []fault.Point
		want   []fault.Point
	}{
		{nil, append(slices.Clone(fault.HookPoints), fault.AnyPoint)},
		{fault.ResourcePoints, append(slices.Clone(fault.ResourcePoints), fault.AnyPoint)},
	} {
		s := spec()
		s.Kinds = []string{fault.RandomClientPause}
		s.Points = tc.points
		drawn := map[fault.Point]bool{}
		for seed := range uint64(20) {
			ops, err := fault.Plan(s, []string{"c1", "c2"}, five, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range ops {
				if !slices.Contains(tc.want, op.Point) {
					t.Errorf("points %v: drew %q", tc.points, op.Point)
				}
				drawn[op.Point] = true
			}
		}
		if len(drawn) != len(tc.want) {
			t.Errorf("points %v: 20 seeds drew %v, want each of %v", tc.points, drawn, tc.want)
		}
	}
}
