package nemesis_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/nemesis"
)

// timedRecorder records events with their wall time, from any goroutine.
type timedRecorder struct {
	mu     sync.Mutex
	start  time.Time
	events []history.Event
}

func (r *timedRecorder) Record(e history.Event) history.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Index = int64(len(r.events))
	e.Time = int64(time.Since(r.start))
	r.events = append(r.events, e)
	return e
}

// windows returns each fault kind's [start, stop] times.
func (r *timedRecorder) windows(t *testing.T) map[string][2]time.Duration {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][2]time.Duration{}
	for _, e := range r.events {
		f, err := e.Fault()
		if err != nil {
			t.Fatal(err)
		}
		w := out[f.Kind]
		if f.Phase == history.PhaseStart {
			w[0] = time.Duration(e.Time)
		} else {
			w[1] = time.Duration(e.Time)
		}
		out[f.Kind] = w
	}
	return out
}

// A client pause's "for" counts from when the client reaches its point:
// armed 800 ms before c1 gets there, it still holds c1 for its full 600
// ms — with the old meaning (counted from the arming) c1 would not have
// stopped at all. The history says when c1 actually stopped and resumed.
func TestClientPauseForCountsFromThePoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &timedRecorder{start: time.Now()}
	nem := nemesis.New(rec)
	defer nem.HealAll(ctx)
	g := nemesis.NewClientGate("c1")
	const hold, late = 600 * time.Millisecond, 800 * time.Millisecond
	_, over, err := nem.StartClientPause(ctx, nemesis.ClientPause{Gate: g, At: fault.BeforeWrite, For: hold}, 0)
	if err != nil {
		t.Fatal(err)
	}
	armed := time.Now()
	time.Sleep(late)
	g.At(ctx, fault.AfterAcquire) // another point: passes
	reached := time.Now()
	g.At(ctx, fault.BeforeWrite)
	stopped := time.Since(reached)
	if stopped < hold {
		t.Errorf("c1 stopped for %v after reaching its point, want at least %v", stopped, hold)
	}
	if reached.Sub(armed) < late {
		t.Fatalf("reached after %v", reached.Sub(armed))
	}
	select {
	case <-over:
	case <-time.After(10 * time.Second):
		t.Fatal("the pause is not over after its hold")
	}
	g.At(ctx, fault.BeforeWrite) // over: passes at once
	w := rec.windows(t)
	armedW, held := w[fault.KindClientPause], w[fault.KindClientHeld]
	// The client's own clock above says it stopped for the whole hold; the
	// recorded stretch starts when the nemesis notes the stop, a moment
	// after the client got there (20 µs short of the hold once in CI).
	const noting = 50 * time.Millisecond
	if held[0] < armedW[0]+late || held[1]-held[0] < hold-noting || armedW[1] < held[1] {
		t.Errorf("armed %v, held %v: want the held stretch to start once c1 got there (≥ %v after arming), last ≥ %v, and end the armed pause",
			armedW, held, late, hold)
	}
	if len(nem.Active()) != 0 {
		t.Errorf("faults still active: %v", nem.Active())
	}
}

// within bounds how long a pause waits: a client that does not reach the
// point in time is never stopped, and nothing says it was.
func TestClientPauseWithinDisarms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &timedRecorder{start: time.Now()}
	nem := nemesis.New(rec)
	defer nem.HealAll(ctx)
	g := nemesis.NewClientGate("c1")
	_, over, err := nem.StartClientPause(ctx, nemesis.ClientPause{Gate: g, At: fault.AfterAcquire, For: time.Hour}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-over:
	case <-time.After(10 * time.Second):
		t.Fatal("the pause is still armed past its bound")
	}
	done := make(chan struct{})
	go func() { g.At(ctx, fault.AfterAcquire); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a disarmed pause held the client")
	}
	w := rec.windows(t)
	if _, ok := w[fault.KindClientHeld]; ok {
		t.Errorf("a held stretch was recorded for a client that never stopped: %v", w)
	}
	if a := w[fault.KindClientPause]; a[1] < 200*time.Millisecond {
		t.Errorf("armed window %v, want it to end at its bound", a)
	}
	// Healed while the client is held: it resumes at once, not after its hold.
	_, over, err = nem.StartClientPause(ctx, nemesis.ClientPause{Gate: g, At: fault.AfterAcquire, For: time.Hour}, 0)
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{})
	go func() { g.At(ctx, fault.AfterAcquire); close(held) }()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := g.WaitBlocked(wctx); err != nil {
		t.Fatal(err)
	}
	if err := nem.StopKind(ctx, fault.KindClientPause); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the healed pause still holds the client")
	}
	<-over
}

// A lock's background work passes the gate at fault.Background: it
// never sets a pause off, not even one armed at any point, yet once the
// client is stopped it is held with the rest of the client, and goes on
// when the client does.
func TestClientPauseHoldsBackgroundWork(t *testing.T) {
	t.Parallel()
	for _, at := range []fault.Point{fault.AfterAcquire, fault.AnyPoint} {
		t.Run(string(at), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			g := nemesis.NewClientGate("c1")
			nem := nemesis.New(&timedRecorder{start: time.Now()})
			defer nem.HealAll(ctx)
			id, err := nem.Start(ctx, nemesis.ClientPause{Gate: g, At: at})
			if err != nil {
				t.Fatal(err)
			}
			// Armed, not reached: the background passes.
			passed := make(chan struct{})
			go func() { g.At(ctx, fault.Background); close(passed) }()
			select {
			case <-passed:
			case <-time.After(5 * time.Second):
				t.Fatal("background work held by a pause the client has not reached")
			}
			if g.Blocked() != 0 {
				t.Fatalf("%d goroutines held after the background passed", g.Blocked())
			}
			// The client stops; the background is held with it.
			go g.At(ctx, fault.AfterAcquire)
			wctx, cancel := within(5 * time.Second)
			defer cancel()
			if err := g.WaitBlocked(wctx); err != nil {
				t.Fatal(err)
			}
			held := make(chan struct{})
			go func() { g.At(ctx, fault.Background); close(held) }()
			select {
			case <-held:
				t.Fatal("background work went on while the client was stopped")
			case <-time.After(200 * time.Millisecond):
			}
			if err := nem.Stop(ctx, id); err != nil {
				t.Fatal(err)
			}
			select {
			case <-held:
			case <-time.After(5 * time.Second):
				t.Fatal("background work still held after the pause healed")
			}
		})
	}
}
