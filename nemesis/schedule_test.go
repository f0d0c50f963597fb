package nemesis_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/nemesis"
)

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
	s := fault.ScheduleSpec{
		Kinds:    fault.RandomKinds,
		Interval: 200 * time.Millisecond,
		MinFor:   50 * time.Millisecond,
		MaxFor:   150 * time.Millisecond,
		Total:    3 * time.Second,
	}
	s.Total = 2 * time.Second
	s.MaxFor = 150 * time.Millisecond
	run := func() []history.Fault {
		// Seed 1 draws every kind in these ten ops.
		ops, err := fault.Plan(s, clients, names, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		rec := &memRecorder{}
		nem := nemesis.New(rec)
		var started []string
		ctx, cancel := within(time.Minute)
		defer cancel()
		if err := nem.RunSchedule(ctx, ops, env, func(op fault.Op) { started = append(started, op.Kind) }); err != nil {
			t.Fatal(err)
		}
		if len(started) != len(ops) || len(nem.Active()) != 0 {
			t.Errorf("started %d of %d ops, %d faults still active", len(started), len(ops), len(nem.Active()))
		}
		for _, k := range fault.RandomKinds {
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
	ops := []fault.Op{{At: 0, For: time.Hour, Kind: fault.RandomPause, Nodes: []string{"n1"}}}
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
	if act := nem.Active(); len(act) != 1 || act[0].Kind != fault.KindPause {
		t.Fatalf("after cancel: active %+v, want the pause left for HealAll", act)
	}
	if err := nem.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cl.Processes()[0].Paused() {
		t.Error("paused after HealAll")
	}
}
