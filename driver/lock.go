package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"splitbrain/workload"
)

// Lock adapts one driver process to workload.Lock: each call is one
// request, its reply mapped onto the workload's errors — fail onto
// ErrNotAcquired, ErrNotHeld or ErrNotExtended, unknown (and no answer
// in time, a broken or dead driver) onto an unknown outcome.
//
// The belief. A driver reports the lease's remaining validity at the
// moment it wrote its reply, and stamps the reply with the machine's
// monotonic clock (mono_ns); the harness puts the deadline at that moment
// plus the validity. Without a stamp it uses the moment it read the
// reply, late by at most the time since the request was sent (or, after
// a point, the go-ahead; Reply.Slack) — on an idle machine tens of
// microseconds, under 32 plays on 2 cores a few milliseconds, more than
// some locks' margin (a false overlap of 1.4 ms, delayed-write against
// symfony-redis, 2026-11-29). The transcript records which, per reply.
// A driver that claims lost ends the belief earlier, when it says the
// lock told its user the lease is over (Lease.Lost).
type Lock struct {
	Proc *Proc
	// Gate holds the client at the points the driver announces; nil: none
	// is held.
	Gate Gate
}

var _ workload.Lock = (*Lock)(nil)

// Acquire implements workload.Lock.
func (l *Lock) Acquire(ctx context.Context, key string, ttl time.Duration) (*workload.Lease, error) {
	r, err := l.Proc.Call(ctx, Request{Op: OpAcquire, Key: key, TTLMS: ms(ttl)}, l.Gate)
	if err != nil {
		return nil, err
	}
	switch r.Result {
	case ResultFail:
		return nil, errors.Join(workload.ErrNotAcquired, l.detail(r))
	case ResultUnknown:
		return nil, fmt.Errorf("acquire %q: outcome unknown: %w", key, l.detail(r))
	}
	if r.Value == "" {
		return nil, l.Proc.fail(fmt.Sprintf(`answered acquire #%d ok without "value", the lease's value`, r.ID))
	}
	return l.lease(key, r), nil
}

// Release implements workload.Lock.
func (l *Lock) Release(ctx context.Context, lease *workload.Lease) error {
	defer l.Proc.ForgetLost(lease.Value)
	r, err := l.Proc.Call(ctx, Request{Op: OpRelease, Key: lease.Key, Value: lease.Value}, l.Gate)
	if err != nil {
		return err
	}
	switch r.Result {
	case ResultFail:
		return errors.Join(workload.ErrNotHeld, l.detail(r))
	case ResultUnknown:
		return fmt.Errorf("release %q: outcome unknown: %w", lease.Key, l.detail(r))
	}
	return nil
}

// Extend implements workload.Lock.
func (l *Lock) Extend(ctx context.Context, lease *workload.Lease, ttl time.Duration) (*workload.Lease, error) {
	r, err := l.Proc.Call(ctx, Request{Op: OpExtend, Key: lease.Key, Value: lease.Value, TTLMS: ms(ttl)}, l.Gate)
	if err != nil {
		return nil, err
	}
	switch r.Result {
	case ResultFail:
		return nil, errors.Join(workload.ErrNotExtended, l.detail(r))
	case ResultUnknown:
		return nil, fmt.Errorf("extend %q: outcome unknown: %w", lease.Key, l.detail(r))
	}
	if r.Value == "" {
		r.Value = lease.Value
	}
	return l.lease(lease.Key, r), nil
}

func (l *Lock) lease(key string, r Reply) *workload.Lease {
	// A driver that tells loss (ready's lost) gives the lease a Lost
	// channel: the client releases the moment the driver says lost.
	out := &workload.Lease{Key: key, Value: r.Value, Token: r.Token, Lost: l.Proc.LostChan(r.Value)}
	if v, ok := r.Validity(); ok {
		out.Deadline = r.Written.Add(v)
		if r.MonoNS != nil {
			l.Proc.logf("# %s #%d: validity %.3fms counted from its writing (mono_ns), %v before its reading", OpReply, r.ID, ms(v), r.At.Sub(r.Written))
		} else {
			l.Proc.logf("# %s #%d: validity %.3fms converted at the reply's reading, late by at most %v", OpReply, r.ID, ms(v), r.Slack)
		}
	}
	return out
}

func (l *Lock) detail(r Reply) error {
	d := r.Detail
	if d == "" {
		d = "no detail"
	}
	return fmt.Errorf("driver %s of %s: %s", l.Proc.Name(), l.Proc.cfg.Client, d)
}
