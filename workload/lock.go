package workload

import (
	"context"
	"errors"
	"time"

	"splitbrain/redlock"
)

// Lock is the lock under test as the workload drives it: ours, or a
// third-party lock behind an adapter. Implementations map their own errors
// onto ErrNotAcquired, ErrNotHeld and ErrNotExtended (wrapping the cause)
// so that the history can tell a lost attempt (fail) from an unknown
// outcome (info).
type Lock interface {
	// Acquire tries to take key for ttl: one attempt, unless the lock
	// was set up to retry.
	Acquire(ctx context.Context, key string, ttl time.Duration) (*Lease, error)
	// Release gives the lease up.
	Release(ctx context.Context, lease *Lease) error
	// Extend asks for ttl more from now and returns the extended lease;
	// the lease passed in stays as it was.
	Extend(ctx context.Context, lease *Lease, ttl time.Duration) (*Lease, error)
}

// Lease is a lock a client believes it holds.
type Lease struct {
	Key   string
	Value string
	// Deadline is when the lock's validity ends, on the monotonic clock;
	// zero when the lock tells its user none (Redisson's watchdog keeps
	// the lock until it is released): the belief then lasts until the
	// client releases.
	Deadline time.Time
	// Token is the fencing token, if the lock hands one out.
	Token *int64
	// Granted names the nodes that granted the lock, if known.
	Granted []string
	// Lost, when the lock has one, is closed when the lock tells its user
	// the lease is over (rueidislock cancels the context it handed out).
	// The client then ends its belief at once by releasing, as a user who
	// stops when told: the history has no "lock lost" event, and the
	// release's invoke marks when the client learned. Nil for locks that
	// tell nothing.
	Lost <-chan struct{}
	// impl is the adapter's own lease.
	impl any
}

var (
	// ErrNotAcquired: the attempt certainly did not take the lock.
	ErrNotAcquired = errors.New("lock not acquired")
	// ErrNotHeld: the release found the lease already lost.
	ErrNotHeld = errors.New("lock not held")
	// ErrNotExtended: the lease was not extended; the client may rely on
	// it until its old deadline at most.
	ErrNotExtended = errors.New("lease not extended")
	// ErrLeaseLost: the lock told the client its lease was over, the
	// client released it and stopped; a critical-section step after that
	// is skipped (nothing recorded), not a mistake of the caller.
	ErrLeaseLost = errors.New("the lock told the client it lost its lease")
)

// Redlock adapts our redlock.Locker to Lock.
type Redlock struct {
	Locker *redlock.Locker
	// Nodes names the Locker's nodes in its order.
	Nodes []string
	// Retry makes Acquire wait and retry with Locker.Lock, up to the
	// Locker's Options.MaxTries attempts, instead of TryLock's one.
	Retry bool
}

// Acquire implements Lock.
func (r *Redlock) Acquire(ctx context.Context, key string, ttl time.Duration) (*Lease, error) {
	try := r.Locker.TryLock
	if r.Retry {
		try = r.Locker.Lock
	}
	l, err := try(ctx, key, ttl)
	if err != nil {
		if errors.Is(err, redlock.ErrNotAcquired) {
			return nil, errors.Join(ErrNotAcquired, err)
		}
		return nil, err
	}
	return r.lease(l), nil
}

// Release implements Lock.
func (r *Redlock) Release(ctx context.Context, lease *Lease) error {
	l, err := r.own(lease)
	if err != nil {
		return err
	}
	_, err = r.Locker.Release(ctx, l)
	if errors.Is(err, redlock.ErrNotHeld) {
		return errors.Join(ErrNotHeld, err)
	}
	return err
}

// Extend implements Lock. An extension refused (the lease expired, lost
// its quorum, or reached the extension limit) is ErrNotExtended.
func (r *Redlock) Extend(ctx context.Context, lease *Lease, ttl time.Duration) (*Lease, error) {
	l, err := r.own(lease)
	if err != nil {
		return nil, err
	}
	ext, err := r.Locker.Extend(ctx, l, ttl)
	if err != nil {
		if errors.Is(err, redlock.ErrNotHeld) || errors.Is(err, redlock.ErrExtendLimit) {
			return nil, errors.Join(ErrNotExtended, err)
		}
		return nil, err
	}
	return r.lease(ext), nil
}

func (r *Redlock) own(lease *Lease) (*redlock.Lease, error) {
	l, ok := lease.impl.(*redlock.Lease)
	if !ok {
		return nil, errors.New("redlock adapter: lease was not acquired through this adapter")
	}
	return l, nil
}

func (r *Redlock) lease(l *redlock.Lease) *Lease {
	out := &Lease{Key: l.Key, Value: l.Value, Deadline: l.Deadline, Granted: r.names(l.Granted), impl: l}
	if r.Locker.Fencing() != redlock.FenceNone {
		token := l.Token
		out.Token = &token
	}
	return out
}

func (r *Redlock) names(idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = r.Nodes[j]
	}
	return out
}
