// Package nemesis injects faults into a run and heals them: network cuts
// between clients and nodes, clock jumps, and (later) pauses, kills and
// failovers. Every fault is one value behind the small Fault interface;
// Nemesis enforces the lifecycle (inject, record, heal, heal-all) in one
// place so that no fault can be left behind or go unrecorded.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"splitbrain/history"
)

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

// Nemesis tracks the active faults of one run.
type Nemesis struct {
	rec Recorder

	mu     sync.Mutex
	nextID int
	active map[int]activeFault
	closed bool
}

type activeFault struct {
	desc history.Fault
	heal Heal
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	desc := f.Describe()
	heal, err := f.Inject(ctx)
	if err != nil {
		return 0, fmt.Errorf("nemesis: injecting %s: %w", desc.Kind, err)
	}
	desc.ID = m.nextID
	m.nextID++
	desc.Phase = history.PhaseStart
	m.active[desc.ID] = activeFault{desc: desc, heal: heal}
	m.record(desc, nil)
	return desc.ID, nil
}

// Stop heals fault id and records its end.
func (m *Nemesis) Stop(ctx context.Context, id int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopLocked(ctx, id)
}

func (m *Nemesis) stopLocked(ctx context.Context, id int) error {
	a, ok := m.active[id]
	if !ok {
		return fmt.Errorf("nemesis: fault %d is not active", id)
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
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, id := range m.activeIDsLocked() {
		if m.active[id].desc.Kind == kind {
			errs = append(errs, m.stopLocked(ctx, id))
		}
	}
	return errors.Join(errs...)
}

// HealAll heals every active fault, newest first, and refuses new ones
// afterwards. It is what every run ends with, also on Ctrl-C.
func (m *Nemesis) HealAll(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	var errs []error
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
