package nemesis_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"splitbrain/history"
	"splitbrain/nemesis"
)

func spec() nemesis.ScheduleSpec {
	return nemesis.ScheduleSpec{
		Kinds:    nemesis.RandomKinds,
		Interval: 200 * time.Millisecond,
		MinFor:   50 * time.Millisecond,
		MaxFor:   150 * time.Millisecond,
		Total:    3 * time.Second,
	}
}

func TestScheduleSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*nemesis.ScheduleSpec)
		want string
	}{
		{"no kinds", func(s *nemesis.ScheduleSpec) { s.Kinds = nil }, "no fault kinds"},
		{"unknown kind", func(s *nemesis.ScheduleSpec) { s.Kinds = []string{"meteor"} }, `"meteor"`},
		{"unknown target", func(s *nemesis.ScheduleSpec) { s.Targets = []nemesis.Target{"half"} }, `target "half"`},
		{"no interval", func(s *nemesis.ScheduleSpec) { s.Interval = 0 }, "interval"},
		{"min above max", func(s *nemesis.ScheduleSpec) { s.MinFor = time.Second }, "0 < min ≤ max"},
		{"overlapping", func(s *nemesis.ScheduleSpec) { s.MaxFor = time.Second }, "must not overlap"},
		{"too short", func(s *nemesis.ScheduleSpec) { s.Total = time.Millisecond }, "shorter than one fault"},
		{"unknown pause point", func(s *nemesis.ScheduleSpec) { s.Points = []nemesis.Point{"lunch"} }, `point "lunch"`},
		{"any as a pause point", func(s *nemesis.ScheduleSpec) { s.Points = []nemesis.Point{nemesis.AnyPoint} }, `point "any"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			tc.edit(&s)
			_, err := nemesis.Plan(s, []string{"c1"}, five, rand.New(rand.NewPCG(1, 1)))
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
	plan := func(seed uint64) []nemesis.Op {
		ops, err := nemesis.Plan(spec(), clients, five, rand.New(rand.NewPCG(seed, 1)))
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
	sizes := map[nemesis.Target]int{nemesis.TargetOne: 1, nemesis.TargetMinority: 2, nemesis.TargetMajority: 3, nemesis.TargetAll: 5}
	ofThree := map[nemesis.Target]int{nemesis.TargetOne: 1, nemesis.TargetMinority: 1, nemesis.TargetMajority: 2, nemesis.TargetAll: 3}
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
			case nemesis.RandomPause, nemesis.RandomKill, nemesis.RandomAmnesia:
				if len(op.Nodes) != sizes[op.Target] {
					t.Errorf("%v: %d nodes", op, len(op.Nodes))
				}
			case nemesis.RandomClock:
				if len(op.Nodes) != sizes[op.Target] || (op.Strobe == 0 && len(op.Offsets) != len(op.Nodes)) {
					t.Errorf("%v: nodes %v offsets %v", op, op.Nodes, op.Offsets)
				}
				for _, o := range op.Offsets {
					if o == 0 || o > 10*time.Second || o < -10*time.Second {
						t.Errorf("%v: offset %v", op, o)
					}
				}
			case nemesis.RandomClientPause:
				if len(op.Clients) != ofThree[op.Target] {
					t.Errorf("%v: %d clients", op, len(op.Clients))
				}
				if !nemesis.ValidPoint(op.Point) {
					t.Errorf("%v: point %q", op, op.Point)
				}
			case nemesis.RandomPartition:
				if len(op.Links) == 0 {
					t.Errorf("%v: no links", op)
				}
			}
		}
	}
	if len(kinds) != len(nemesis.RandomKinds) {
		t.Errorf("20 seeds drew kinds %v, want all of %v", kinds, nemesis.RandomKinds)
	}
	// The last fault ends with the schedule.
	s := spec()
	s.Total = 250 * time.Millisecond
	ops, err := nemesis.Plan(s, clients, five, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if last := ops[len(ops)-1]; last.At+last.For > s.Total {
		t.Errorf("last op %v ends after the schedule's %v", last, s.Total)
	}
}

// A schedule of every kind on real nodes: each fault is recorded with its
// start and end, everything is healed after it, and the same ops give the
// same recorded faults in the same order.
func TestRunScheduleHealsAndRepeats(t *testing.T) {
	clients := []string{"c1", "c2"}
	cl, links, _, _ := setup(t, 3, clients...)
	env := nemesis.Env{Net: links, Nodes: map[string]nemesis.ScheduleNode{}, Gates: map[string]*nemesis.ClientGate{}}
	var names []string
	for _, n := range cl.Processes() {
		env.Nodes[n.Name()] = n
		names = append(names, n.Name())
	}
	for _, c := range clients {
		env.Gates[c] = nemesis.NewClientGate(c)
	}
	s := spec()
	s.Total = 2 * time.Second
	s.MaxFor = 150 * time.Millisecond
	run := func() []history.Fault {
		// Seed 1 draws every kind in these ten ops.
		ops, err := nemesis.Plan(s, clients, names, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		rec := &memRecorder{}
		nem := nemesis.New(rec)
		var started []string
		ctx, cancel := within(time.Minute)
		defer cancel()
		if err := nem.RunSchedule(ctx, ops, env, func(op nemesis.Op) { started = append(started, op.Kind) }); err != nil {
			t.Fatal(err)
		}
		if len(started) != len(ops) || len(nem.Active()) != 0 {
			t.Errorf("started %d of %d ops, %d faults still active", len(started), len(ops), len(nem.Active()))
		}
		for _, k := range nemesis.RandomKinds {
			if !slices.Contains(started, k) {
				t.Errorf("no %s among the ops run: %v", k, started)
			}
		}
		for _, n := range cl.Processes() {
			if !n.Running() || n.Paused() || n.ClockOffset() != 0 {
				t.Errorf("%s after the schedule: running %v, paused %v, offset %v", n.Name(), n.Running(), n.Paused(), n.ClockOffset())
			}
		}
		for _, c := range clients {
			for _, n := range names {
				eventually(t, c+"→"+n+" after the schedule", func() error { return ping(t, links, cl.Password(), c, n) })
			}
		}
		fs := rec.faults(t)
		open := map[int]bool{}
		for _, f := range fs {
			open[f.ID] = f.Phase == history.PhaseStart
		}
		for id, o := range open {
			if o {
				t.Errorf("fault %d started and never stopped", id)
			}
		}
		return fs
	}
	// Faults start in the schedule's order; two that end at the same
	// instant (client pauses of equal length whose clients never reach
	// their point) may record their ends either way round, so ends are
	// compared in ID order.
	inOrder := func(fs []history.Fault) []history.Fault {
		var starts, stops []history.Fault
		for _, f := range fs {
			if f.Phase == history.PhaseStart {
				starts = append(starts, f)
			} else {
				stops = append(stops, f)
			}
		}
		slices.SortStableFunc(stops, func(x, y history.Fault) int { return x.ID - y.ID })
		return append(starts, stops...)
	}
	a, b := run(), run()
	if !reflect.DeepEqual(inOrder(a), inOrder(b)) {
		t.Errorf("the same ops recorded different faults:\n%+v\n%+v", a, b)
	}
}

func TestRunScheduleStopsWithContext(t *testing.T) {
	cl, links, nem, _ := setup(t, 1, "c1")
	env := nemesis.Env{Net: links, Nodes: map[string]nemesis.ScheduleNode{"n1": cl.Processes()[0]}}
	ops := []nemesis.Op{{At: 0, For: time.Hour, Kind: nemesis.RandomPause, Nodes: []string{"n1"}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// Cancel once the op's fault is in effect, as Ctrl-C in its middle would.
	go func() {
		for len(nem.Active()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	go func() { done <- nem.RunSchedule(ctx, ops, env, nil) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if act := nem.Active(); len(act) != 1 || act[0].Kind != nemesis.KindPause {
		t.Fatalf("after cancel: active %+v, want the pause left for HealAll", act)
	}
	if err := nem.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cl.Processes()[0].Paused() {
		t.Error("paused after HealAll")
	}
}

// Client pauses are drawn from the spec's points (and any), the lock's hook
// points when it names none.
func TestPlanDrawsPausePoints(t *testing.T) {
	for _, tc := range []struct {
		points []nemesis.Point
		want   []nemesis.Point
	}{
		{nil, append(slices.Clone(nemesis.HookPoints), nemesis.AnyPoint)},
		{nemesis.ResourcePoints, append(slices.Clone(nemesis.ResourcePoints), nemesis.AnyPoint)},
	} {
		s := spec()
		s.Kinds = []string{nemesis.RandomClientPause}
		s.Points = tc.points
		drawn := map[nemesis.Point]bool{}
		for seed := range uint64(20) {
			ops, err := nemesis.Plan(s, []string{"c1", "c2"}, five, rand.New(rand.NewPCG(seed, 1)))
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
