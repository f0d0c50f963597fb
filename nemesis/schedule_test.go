package nemesis_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"splitbrain/cluster"
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
	env := testEnv{net: links, nodes: map[string]cluster.Node{}, gates: map[string]*nemesis.ClientGate{}}
	var names []string
	for _, n := range cl.Processes() {
		env.nodes[n.Name()] = n
		names = append(names, n.Name())
	}
	for _, c := range clients {
		env.gates[c] = nemesis.NewClientGate(c)
	}
	s := fault.ScheduleSpec{
		Kinds:    fault.RandomKinds,
		Interval: 200 * time.Millisecond,
		MinFor:   50 * time.Millisecond,
		MaxFor:   150 * time.Millisecond,
		Total:    3 * time.Second,
	}
	run := func() []history.Fault {
		// Seed 179 draws every kind in these fifteen ops.
		ops, err := fault.Plan(s, clients, names, rand.New(rand.NewPCG(179, 1)))
		if err != nil {
			t.Fatal(err)
		}
		rec := &memRecorder{}
		nem := nemesis.New(rec)
		var started []string
		ctx, cancel := within(time.Minute)
		defer cancel()
		if err := nem.RunSchedule(ctx, env.timed(t, ops), func(op nemesis.Timed) { started = append(started, op.What) }); err != nil {
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
	cl, _, nem, _ := setup(t, 1, "c1")
	ops := []nemesis.Timed{{At: 0, For: time.Hour, Faults: []nemesis.Fault{nemesis.Pause{Node: cl.Processes()[0]}}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// Cancel once the op's fault is in effect, as Ctrl-C in its middle would.
	go func() {
		for len(nem.Active()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	go func() { done <- nem.RunSchedule(ctx, ops, nil) }()
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

// testEnv turns a schedule's ops into faults as the runner does from the
// schedule's steps (runner/play_faults.go), which a test of the
// schedule's timing needs without a runner.
type testEnv struct {
	net   *nemesis.Net
	nodes map[string]cluster.Node
	gates map[string]*nemesis.ClientGate
	procs map[string]nemesis.ProcessPauser
}

func (e testEnv) timed(t *testing.T, ops []fault.Op) []nemesis.Timed {
	t.Helper()
	var out []nemesis.Timed
	for i, op := range ops {
		within := op.For
		if i+1 < len(ops) {
			within = max(ops[i+1].At-op.At, time.Millisecond)
		}
		tm := nemesis.Timed{At: op.At, For: op.For, Within: within, What: op.Kind}
		switch op.Kind {
		case fault.RandomPartition:
			tm.Faults = []nemesis.Fault{nemesis.Partition{Net: e.net, Shape: op.Shape, Links: op.Links}}
		case fault.RandomClientPause:
			for _, c := range op.Clients {
				tm.Faults = append(tm.Faults, nemesis.ScheduledClientPause(e.gates[c], e.procs[c], op.Point, op.For)...)
			}
		}
		if op.Kind == fault.RandomLostReply {
			tm.Faults = []nemesis.Fault{nemesis.LoseReply{Net: e.net, Links: fault.Isolate(op.Clients, op.Nodes)}}
			out = append(out, tm)
			continue
		}
		for j, name := range op.Nodes {
			n := e.nodes[name]
			var f nemesis.Fault
			switch {
			case op.Kind == fault.RandomClock && op.Strobe > 0:
				f = nemesis.ClockStrobe{Node: n, Delta: op.Offsets[0], Period: op.Strobe}
			case op.Kind == fault.RandomClock:
				f = nemesis.ClockJump{Node: n, By: op.Offsets[j]}
			case op.Kind == fault.RandomPause:
				f = nemesis.Pause{Node: n}
			case op.Kind == fault.RandomKill && op.Graceful:
				f = nemesis.Stop{Node: n}
			case op.Kind == fault.RandomClockRate:
				f = nemesis.ClockRate{Node: n, Rate: op.Rates[j]}
			case op.Kind == fault.RandomStarve:
				f = nemesis.Starve{Node: n, Share: op.Share}
			case op.Kind == fault.RandomPower:
				f = nemesis.Kill{Node: n, Power: true}
			case op.Kind == fault.RandomFsync:
				f = nemesis.SlowFsync{Node: n, Delay: op.For}
			default:
				f = nemesis.Kill{Node: n, Amnesia: op.Kind == fault.RandomAmnesia}
			}
			tm.Faults = append(tm.Faults, f)
		}
		out = append(out, tm)
	}
	return out
}
