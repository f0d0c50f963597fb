package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Extend moves the expiry of the lease's key to ttl from now (zero: the
// lease's TTL) on every node that still holds the lease's value, and returns
// the extended lease, whose Deadline is recomputed from the moment the
// extension started. The lease passed in is left as it was.
//
// Extend refuses, without contacting any node, a lease whose validity is
// already gone (an *ExtendError matching ErrExpired) and a lease extended
// Options.MaxExtensions times (ErrExtendLimit). It never re-creates a key
// that has expired: a node that no longer holds the value is not extended.
// It succeeds only if a quorum extended the key and validity is left after
// the round trip; otherwise it returns an *ExtendError matching ErrNotHeld,
// and the caller should stop relying on the lease at its old Deadline.
func (l *Locker) Extend(ctx context.Context, lease *Lease, ttl time.Duration) (*Lease, error) {
	if lease == nil {
		return nil, errors.New("redlock: Extend of a nil lease")
	}
	if ttl == 0 {
		ttl = lease.TTL
	}
	ttl, err := l.prepare(ctx, lease.Key, ttl)
	if err != nil {
		return nil, err
	}
	if lease.Extensions >= l.opts.MaxExtensions {
		return nil, fmt.Errorf("redlock: lock %q extended %d times: %w", lease.Key, lease.Extensions, ErrExtendLimit)
	}
	if r := lease.Remaining(); r <= 0 {
		return nil, &ExtendError{Key: lease.Key, Quorum: l.quorum, Validity: r}
	}
	req := request{script: &extendScript, keys: []string{lease.Key}, args: []any{lease.Value, ttl.Milliseconds()}}
	start := time.Now()
	res := l.fanOut(ctx, nil, req)
	ee := &ExtendError{Key: lease.Key, Quorum: l.quorum}
	ee.Extended, ee.Foreign, ee.NodeErrs = compared(res)
	d := l.Drift(ttl)
	ee.Validity = validity(ttl, time.Since(start), d)
	ee.CtxErr = ctx.Err()
	if len(ee.Extended) < l.quorum || ee.Validity <= 0 || ee.CtxErr != nil {
		return nil, ee
	}
	return &Lease{
		Key:        lease.Key,
		Value:      lease.Value,
		TTL:        ttl,
		Start:      start,
		Deadline:   start.Add(ttl - d),
		Validity:   ee.Validity,
		Granted:    ee.Extended,
		Token:      lease.Token,
		Extensions: lease.Extensions + 1,
	}, nil
}

// LeaseLostError is the cause (context.Cause) of the context Do gives its
// function when Do ends it because the lease cannot be kept: an extension
// failed for good, the extension limit was reached, or no extension
// succeeded in time. Deadline is when the lease's validity ends; the
// context ends before it, so the function has until then to stop.
type LeaseLostError struct {
	Key      string
	Deadline time.Time
	// Err is why: an *ExtendError, ErrExtendLimit, or ErrExpired when time
	// ran out while extensions kept failing.
	Err error
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("redlock: lease on %q cannot be kept past %v from now: %v",
		e.Key, time.Until(e.Deadline).Round(time.Millisecond), e.Err)
}

// Unwrap returns why the lease could not be kept.
func (e *LeaseLostError) Unwrap() error { return e.Err }

// Do acquires key as Lock does, runs fn while keeping the lease alive, and
// releases the lease when fn returns, as node-redlock's using and Redisson's
// watchdog do — but safely: fn's context ends before the lease's validity
// does, never after. The lease is extended whenever half its TTL has passed
// (up to Options.MaxExtensions times); once an extension fails for good, or
// none can succeed before the validity ends, fn's context is cancelled with
// a *LeaseLostError cause, at the latest TTL/10 before the Deadline, which
// leaves fn that long to stop touching the protected resource.
//
// The error joins fn's error, the *LeaseLostError if the lease was lost
// while fn ran, and the release's error.
func (l *Locker) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context, lease *Lease) error) error {
	lease, err := l.Lock(ctx, key, ttl)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	last := make(chan *Lease, 1)
	go func() { last <- l.keepAlive(fctx, lease, cancel, done) }()
	fnErr := fn(fctx, lease)
	close(done)
	final := <-last

	var lost *LeaseLostError
	if !errors.As(context.Cause(fctx), &lost) {
		lost = nil
	}
	_, relErr := l.Release(ctx, final)
	errs := []error{fnErr, relErr}
	if lost != nil {
		errs = append(errs, lost)
	}
	return errors.Join(errs...)
}

// keepAlive extends lease until done is closed or fctx ends, and cancels
// fctx (through cancel) once the lease cannot be kept. It returns the last
// lease, for the release.
func (l *Locker) keepAlive(fctx context.Context, lease *Lease, cancel context.CancelCauseFunc, done <-chan struct{}) *Lease {
	guard := lease.TTL / 10
	// arm ends fn's context guard before ls's deadline, giving why.
	arm := func(ls *Lease, why error) *time.Timer {
		deadline := ls.Deadline
		return time.AfterFunc(time.Until(deadline)-guard, func() {
			cancel(&LeaseLostError{Key: ls.Key, Deadline: deadline, Err: why})
		})
	}
	cur := lease
	timer := arm(cur, ErrExpired)
	defer func() { timer.Stop() }()
	// wait returns false when fn is done or its context has ended.
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-done:
			return false
		case <-fctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for {
		if !wait(time.Until(cur.Deadline.Add(-cur.TTL / 2))) {
			return cur
		}
		for {
			next, err := l.Extend(fctx, cur, cur.TTL)
			if err == nil {
				if !timer.Stop() {
					return next // the deadline timer fired: fctx is ending
				}
				cur, timer = next, arm(next, ErrExpired)
				break
			}
			if errors.Is(err, ErrExtendLimit) {
				// Nothing more to do but end fn's context before the
				// current deadline, saying why.
				if !timer.Stop() {
					return cur
				}
				timer = arm(cur, err)
				wait(time.Until(cur.Deadline))
				return cur
			}
			if l.extensionHopeless(err) {
				cancel(&LeaseLostError{Key: cur.Key, Deadline: cur.Deadline, Err: err})
				return cur
			}
			// Unknown outcomes (timeouts, a node down): try again while an
			// extension can still complete before fn's context must end.
			if time.Until(cur.Deadline)-guard <= l.opts.NodeTimeout {
				wait(time.Until(cur.Deadline))
				return cur
			}
			if !wait(l.jitter(l.opts.NodeTimeout/2, l.opts.NodeTimeout)) {
				return cur
			}
		}
	}
}

// extensionHopeless reports whether a failed Extend cannot succeed when
// retried: the validity is gone, or too few nodes still hold the value even
// if every node that did not answer did.
func (l *Locker) extensionHopeless(err error) bool {
	var ee *ExtendError
	if !errors.As(err, &ee) {
		return false
	}
	if ee.Validity <= 0 && len(ee.NodeErrs) == 0 {
		return true
	}
	possible := len(ee.Extended)
	for _, e := range ee.NodeErrs {
		if e != nil {
			possible++
		}
	}
	return possible < l.quorum
}
