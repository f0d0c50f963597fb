package nemesis_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"splitbrain/fault"
	"splitbrain/nemesis"
)

// fakeProc records the signals a client process would get; what is
// tested is the schedule's logic, not signals (driver's tests send real
// ones).
type fakeProc struct {
	mu      sync.Mutex
	signals []string
	fail    error
}

func (p *fakeProc) Pause() error  { return p.record("STOP") }
func (p *fakeProc) Resume() error { return p.record("CONT") }

func (p *fakeProc) record(s string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.signals = append(p.signals, s)
	return nil
}

// A client pause drawn at any point stops a client that runs as a process
// by signal at once, records it in the client's lane with the stretch it
// held the client, and continues it at the end; drawn at a named point,
// it stays a pause at the gate, and a client without a process is paused
// at its gate whatever the point.
func TestClientStopBySignal(t *testing.T) {
	t.Parallel()
	c1, c2 := &fakeProc{}, &fakeProc{}
	env := testEnv{
		gates: map[string]*nemesis.ClientGate{"c1": nemesis.NewClientGate("c1"), "c2": nemesis.NewClientGate("c2"), "c3": nemesis.NewClientGate("c3")},
		procs: map[string]nemesis.ProcessPauser{"c1": c1, "c2": c2},
	}
	tests := []struct {
		point   fault.Point
		clients []string
		want    []string // the faults' types
	}{
		{fault.AnyPoint, []string{"c1"}, []string{"nemesis.ClientStop", "held"}},
		{fault.AfterAcquire, []string{"c1"}, []string{"nemesis.ClientPause"}},
		{fault.AnyPoint, []string{"c3"}, []string{"nemesis.ClientPause"}},
	}
	for _, tc := range tests {
		var fs []nemesis.Fault
		for _, c := range tc.clients {
			fs = append(fs, nemesis.ScheduledClientPause(env.gates[c], env.procs[c], tc.point, time.Second)...)
		}
		var got []string
		for _, f := range fs {
			switch f.(type) {
			case nemesis.ClientStop:
				got = append(got, "nemesis.ClientStop")
			case nemesis.ClientPause:
				got = append(got, "nemesis.ClientPause")
			default:
				if f.Describe().Kind == fault.KindClientHeld {
					got = append(got, "held")
				}
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v at %s: faults %v, want %v", tc.clients, tc.point, got, tc.want)
		}
	}

	rec := &memRecorder{}
	nem := nemesis.New(rec)
	ops := []fault.Op{{Kind: fault.RandomClientPause, Clients: []string{"c2"}, Point: fault.AnyPoint, For: 50 * time.Millisecond}}
	if err := nem.RunSchedule(context.Background(), env.timed(t, ops), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c2.signals, []string{"STOP", "CONT"}) {
		t.Errorf("c2's process got %v, want STOP then CONT", c2.signals)
	}
	var kinds []string
	for _, f := range rec.faults(t) {
		if !slices.Equal(f.Nodes, []string{"c2"}) {
			t.Errorf("fault %s recorded in lanes %v, want c2's", f.Kind, f.Nodes)
		}
		kinds = append(kinds, f.Phase+" "+f.Kind)
	}
	want := []string{"start client-pause", "start client-pause-held", "stop client-pause-held", "stop client-pause"}
	if !slices.Equal(kinds, want) {
		t.Errorf("recorded %v, want %v", kinds, want)
	}

	// A process that cannot be stopped fails the schedule, recording
	// nothing active.
	env.procs["c1"] = &fakeProc{fail: errors.New("no such process")}
	nem = nemesis.New(&memRecorder{})
	ops[0].Clients = []string{"c1"}
	if err := nem.RunSchedule(context.Background(), env.timed(t, ops), nil); err == nil {
		t.Error("a process that could not be stopped did not fail the schedule")
	}
	if len(nem.Active()) != 0 {
		t.Errorf("active after a failed stop: %+v", nem.Active())
	}
}

// A client pause with the client's process stops that process by signal
// when the client reaches its point, instead of holding it at the gate:
// the caller goes on at once, the client counts as held until SIGCONT,
// and the held stretch is recorded as a stop by signal.
func TestClientPauseStopsProcessAtPoint(t *testing.T) {
	t.Parallel()
	proc := &fakeProc{}
	g := nemesis.NewClientGate("c1")
	rec := &memRecorder{}
	nem := nemesis.New(rec)
	ctx := context.Background()
	_, over, err := nem.StartClientPause(ctx, nemesis.ClientPause{Gate: g, At: fault.AfterAcquire, For: 50 * time.Millisecond, Proc: proc}, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.At(ctx, fault.AfterReplies) // not its point: nothing happens
	if len(proc.signals) != 0 {
		t.Fatalf("signals %v before the point", proc.signals)
	}
	g.At(ctx, fault.AfterAcquire) // returns at once: the process is stopped instead
	if err := g.WaitBlocked(ctx); err != nil {
		t.Fatal(err)
	}
	<-over
	proc.mu.Lock()
	got := slices.Clone(proc.signals)
	proc.mu.Unlock()
	if !slices.Equal(got, []string{"STOP", "CONT"}) {
		t.Errorf("signals %v, want STOP then CONT", got)
	}
	if g.Blocked() != 0 {
		t.Errorf("still counted held after SIGCONT")
	}
	var details []string
	for _, f := range rec.faults(t) {
		if f.Phase == "start" {
			details = append(details, f.Detail)
		}
	}
	want := []string{"c1's process stopped (SIGSTOP) at after-acquire for 50ms once there", "c1's process stopped by SIGSTOP at after-acquire for 50ms"}
	if !slices.Equal(details, want) {
		t.Errorf("recorded %q, want %q", details, want)
	}
}
