// Package nemesis injects faults into a run and heals them: network faults
// on client↔node and replication links (drop, reset, refuse, delay) and the
// partitions built from them, clock jumps and strobes, node pauses, kills
// and restarts with or without their data, client pauses at the lock's hook
// points, and replica promotion. Every fault is one value behind the small
// Fault interface; Nemesis enforces the lifecycle (inject, record, heal,
// heal-all) in one place so that no fault can be left behind or go
// unrecorded. Random schedules (fault.Plan, RunSchedule) are drawn from the run's
// seed.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"splitbrain/history"
)

// healTimeout bounds a heal that runs on its own (a timed fault's end),
// when no caller's context is there to bound it.
const healTimeout = 30 * time.Second

// Fault is one injectable fault.
type Fault interface {
	// Inject applies the fault and returns what undoes it.
	Inject(ctx context.Context) (Heal, error)
	// Describe says what the fault does, for the history and reports.
	Describe() history.Fault
}

// Heal undoes one injected fault. It must succeed even when called with a
// context that is about to end, so heals should not block on the network.
type Heal func(ctx context.Context) error

// Recorder receives the nemesis events.
type Recorder interface {
	Record(history.Event) history.Event
}

// clock is a Recorder that tells the time in its history's time base,
// as history.Recorder does: the nemesis then records when it began to
// inject each fault (history.Fault.Began).
type clock interface{ Now() int64 }

// Nemesis tracks the active faults of one run.
type Nemesis struct {
	rec Recorder

	mu     sync.Mutex
	nextID int
	active map[int]activeFault
	closed bool
	// bgErrs are errors of heals that ran on their own (timed faults);
	// HealAll reports them.
	bgErrs []error
	// healing counts the timed faults healing on their own now, outside
	// the lock; HealAll waits for them.
	healing sync.WaitGroup
}

type activeFault struct {
	desc  history.Fault
	heal  Heal
	timer *time.Timer // ends a timed fault; nil otherwise
}

// New returns a Nemesis that records into rec.
func New(rec Recorder) *Nemesis {
	return &Nemesis{rec: rec, nextID: 1, active: map[int]activeFault{}}
}

// ErrClosed is returned by Start after HealAll has closed the nemesis.
var ErrClosed = errors.New("nemesis: closed, no new faults")

// Start injects f and records its start. It returns the fault's id for Stop.
// A fault that fails to inject is not recorded and leaves nothing to heal.
func (m *Nemesis) Start(ctx context.Context, f Fault) (int, error) {
	return m.start(ctx, f, 0)
}

// StartFor injects f and heals it d later, on its own: a pause for 3 s, a
// restart after a delay. Stop and HealAll may end it earlier. The recorded
// detail says for how long.
func (m *Nemesis) StartFor(ctx context.Context, f Fault, d time.Duration) (int, error) {
	if d <= 0 {
		return 0, fmt.Errorf("nemesis: StartFor %s: duration %v, want > 0 (use Start and Stop for an instant fault)", f.Describe().Kind, d)
	}
	return m.start(ctx, f, d)
}

func (m *Nemesis) start(ctx context.Context, f Fault, d time.Duration) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	desc := f.Describe()
	if c, ok := m.rec.(clock); ok {
		desc.Began = c.Now()
	}
	heal, err := f.Inject(ctx)
	if err != nil {
		return 0, fmt.Errorf("nemesis: injecting %s: %w", desc.Kind, err)
	}
	desc.ID = m.nextID
	m.nextID++
	desc.Phase = history.PhaseStart
	a := activeFault{desc: desc, heal: heal}
	if d > 0 {
		a.desc.Detail += " for " + d.String()
		desc = a.desc
		id := desc.ID
		// The heal outlives the caller's context (a step may return long
		// before the fault ends), so it gets its own bound.
		hctx := context.WithoutCancel(ctx)
		a.timer = time.AfterFunc(d, func() { m.healOnItsOwn(hctx, id) })
	}
	m.active[desc.ID] = a
	m.record(desc, nil)
	return desc.ID, nil
}

// healOnItsOwn ends timed fault id, unless something stopped it first.
// The heal runs without the lock, so that timed faults ending together
// heal side by side: restarting a killed ensemble member waits until it
// serves, and it serves only once a majority is up, so the restarts of
// a whole ensemble killed for a while must not wait for each other (in
// turn, the first waited its whole heal timeout for members the others'
// heals had not started yet).
func (m *Nemesis) healOnItsOwn(hctx context.Context, id int) {
	m.mu.Lock()
	a, ok := m.active[id]
	if !ok || m.closed {
		// Stopped meanwhile, or HealAll is ending every fault.
		m.mu.Unlock()
		return
	}
	delete(m.active, id)
	m.healing.Add(1)
	m.mu.Unlock()
	defer m.healing.Done()

	ctx, cancel := context.WithTimeout(hctx, healTimeout)
	defer cancel()
	err := a.heal(ctx)
	if err != nil {
		err = fmt.Errorf("nemesis: healing %s (fault %d): %w", a.desc.Kind, id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a.desc.Phase = history.PhaseStop
	m.record(a.desc, err)
	if err != nil {
		m.bgErrs = append(m.bgErrs, err)
	}
}

// ErrNotActive is returned by Stop for a fault that is not (or no longer)
// active.
var ErrNotActive = errors.New("not active")

// Stop heals fault id and records its end.
func (m *Nemesis) Stop(ctx context.Context, id int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopLocked(ctx, id)
}

func (m *Nemesis) stopLocked(ctx context.Context, id int) error {
	a, ok := m.active[id]
	if !ok {
		return fmt.Errorf("nemesis: fault %d: %w", id, ErrNotActive)
	}
	if a.timer != nil {
		a.timer.Stop()
	}
	err := a.heal(ctx)
	if err != nil {
		err = fmt.Errorf("nemesis: healing %s (fault %d): %w", a.desc.Kind, id, err)
	}
	// A heal that failed is still recorded as the end of the attempt, with
	// its error, and dropped: retrying a broken heal forever helps nobody,
	// and the error reaches the run's result.
	delete(m.active, id)
	a.desc.Phase = history.PhaseStop
	m.record(a.desc, err)
	return err
}

// StopKind heals every active fault of one kind, newest first.
func (m *Nemesis) StopKind(ctx context.Context, kind string) error {
	return m.StopMatching(ctx, func(f history.Fault) bool { return f.Kind == kind })
}

// StopMatching heals every active fault match selects, newest first.
func (m *Nemesis) StopMatching(ctx context.Context, match func(history.Fault) bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, id := range m.activeIDsLocked() {
		if match(m.active[id].desc) {
			errs = append(errs, m.stopLocked(ctx, id))
		}
	}
	return errors.Join(errs...)
}

// HealAll heals every active fault, newest first, and refuses new ones
// afterwards. It is what every run ends with, also on Ctrl-C. Its error
// includes those of timed faults that healed on their own.
func (m *Nemesis) HealAll(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	// Timed faults healing on their own finish first (none starts once
	// closed is set): the run's end must not race a restart under way.
	m.healing.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	errs := m.bgErrs
	m.bgErrs = nil
	for _, id := range m.activeIDsLocked() {
		errs = append(errs, m.stopLocked(ctx, id))
	}
	return errors.Join(errs...)
}

// Active describes the faults in effect now, oldest first.
func (m *Nemesis) Active() []history.Fault {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := m.activeIDsLocked()
	out := make([]history.Fault, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = m.active[id].desc
	}
	return out
}

// activeIDsLocked lists active fault ids, newest first.
func (m *Nemesis) activeIDsLocked() []int {
	ids := make([]int, 0, len(m.active))
	for id := range m.active {
		ids = append(ids, id)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ids)))
	return ids
}

func (m *Nemesis) record(f history.Fault, err error) {
	e := history.Event{
		Process: history.ProcessNemesis,
		Type:    history.Info,
		F:       history.Nemesis,
		Value:   history.MustValue(f),
	}
	if err != nil {
		e.Err = err.Error()
	}
	m.rec.Record(e)
}

// Limited is a fault that says itself whether its targets can take it:
// Available refuses, with a *cluster.UnsupportedError, a fault whose
// node's kind or backend lacks the capability it acts through (a node
// fault's node, a link fault's links' nodes), before anything is
// injected.
type Limited interface {
	Fault
	Available() error
}
