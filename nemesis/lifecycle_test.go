package nemesis_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"splitbrain/history"
	"splitbrain/nemesis"
)

// fakeFault counts its heals; the lifecycle has nothing to do with Redis.
type fakeFault struct {
	kind    string
	mu      sync.Mutex
	heals   int
	healErr error
}

func (f *fakeFault) Describe() history.Fault {
	return history.Fault{Kind: f.kind, Detail: f.kind}
}

func (f *fakeFault) Inject(context.Context) (nemesis.Heal, error) {
	return func(context.Context) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.heals++
		return f.healErr
	}, nil
}

func (f *fakeFault) healed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.heals
}

func TestStartForHealsOnItsOwnOnce(t *testing.T) {
	ctx := context.Background()
	rec := &lockedRecorder{}
	nem := nemesis.New(rec)
	timed := &fakeFault{kind: "timed"}
	if _, err := nem.StartFor(ctx, timed, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	eventually(t, "timed heal", func() error {
		if timed.healed() != 1 {
			return errors.New("not healed")
		}
		return nil
	})
	if len(nem.Active()) != 0 {
		t.Errorf("active after the timed heal: %+v", nem.Active())
	}
	// Stopped early: the timer must not heal a second time.
	early := &fakeFault{kind: "early"}
	id, err := nem.StartFor(ctx, early, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := nem.Stop(ctx, id); !errors.Is(err, nemesis.ErrNotActive) {
		t.Errorf("second Stop: %v, want ErrNotActive", err)
	}
	time.Sleep(100 * time.Millisecond) // past the timer: it must not fire a heal
	if early.healed() != 1 {
		t.Errorf("early-stopped fault healed %d times", early.healed())
	}
	if _, err := nem.StartFor(ctx, &fakeFault{kind: "x"}, 0); err == nil {
		t.Error("StartFor with no duration accepted")
	}
	fs := rec.faults(t)
	if len(fs) != 4 || fs[0].Detail != "timed for 20ms" || fs[1].Phase != history.PhaseStop {
		t.Errorf("recorded %+v", fs)
	}
}

// A timed heal that fails is not lost: HealAll reports it.
func TestHealAllReportsFailedTimedHeals(t *testing.T) {
	ctx := context.Background()
	nem := nemesis.New(&lockedRecorder{})
	bad := &fakeFault{kind: "bad", healErr: errors.New("node gone")}
	if _, err := nem.StartFor(ctx, bad, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	eventually(t, "timed heal", func() error {
		if bad.healed() == 0 {
			return errors.New("not yet")
		}
		return nil
	})
	pending := &fakeFault{kind: "pending"}
	if _, err := nem.StartFor(ctx, pending, time.Hour); err != nil {
		t.Fatal(err)
	}
	err := nem.HealAll(ctx)
	if err == nil || !strings.Contains(err.Error(), "node gone") {
		t.Errorf("HealAll: %v, want the failed timed heal", err)
	}
	if pending.healed() != 1 {
		t.Errorf("HealAll healed the pending timed fault %d times", pending.healed())
	}
}

func TestStopMatching(t *testing.T) {
	ctx := context.Background()
	nem := nemesis.New(&lockedRecorder{})
	a, b := &fakeFault{kind: "a"}, &fakeFault{kind: "b"}
	for _, f := range []nemesis.Fault{a, b, a} {
		if _, err := nem.Start(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := nem.StopKind(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if a.healed() != 2 || b.healed() != 0 || len(nem.Active()) != 1 {
		t.Errorf("after StopKind(a): a healed %d, b %d, active %d", a.healed(), b.healed(), len(nem.Active()))
	}
}

// lockedRecorder is memRecorder for faults healed on timer goroutines.
type lockedRecorder struct {
	mu sync.Mutex
	memRecorder
}

func (l *lockedRecorder) Record(e history.Event) history.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.memRecorder.Record(e)
}

func (l *lockedRecorder) faults(t *testing.T) []history.Fault {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.memRecorder.faults(t)
}

// meetingFault's heal waits until every fault of its meeting is healing:
// restarts of ensemble members, each waiting until its member serves,
// which it does only once a majority is up.
type meetingFault struct {
	kind    string
	meeting *sync.WaitGroup
}

func (f meetingFault) Describe() history.Fault { return history.Fault{Kind: f.kind, Detail: f.kind} }

func (f meetingFault) Inject(context.Context) (nemesis.Heal, error) {
	return func(ctx context.Context) error {
		f.meeting.Done()
		done := make(chan struct{})
		go func() { f.meeting.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
			return errors.New("healed alone: the other heals did not start")
		}
	}, nil
}

// Timed faults that end together heal side by side, and HealAll waits for
// heals under way: a whole ensemble killed for a while restarts (one
// restart at a time, the first waited for members not yet restarted).
func TestTimedHealsRunSideBySide(t *testing.T) {
	ctx := context.Background()
	rec := &lockedRecorder{}
	nem := nemesis.New(rec)
	var meeting sync.WaitGroup
	meeting.Add(3)
	for _, k := range []string{"n1", "n2", "n3"} {
		if _, err := nem.StartFor(ctx, meetingFault{kind: k, meeting: &meeting}, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "three heals", func() error {
		if n := len(nem.Active()); n != 0 {
			return errors.New("still active")
		}
		return nil
	})
	// A heal that ran alone failed; HealAll reports the timed heals' errors.
	if err := nem.HealAll(ctx); err != nil {
		t.Fatalf("the heals: %v", err)
	}
	stops := 0
	for _, f := range rec.faults(t) {
		if f.Phase == history.PhaseStop {
			stops++
		}
	}
	if stops != 3 {
		t.Errorf("%d stops recorded, want 3", stops)
	}
}
