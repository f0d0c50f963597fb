package workload

import (
	"context"
	"errors"
	"time"
)

// Lock is the lock under test as the workload drives it (package
// locks/adapter adapts each lock kind to it): ours, or a
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
	// Impl is the adapter's own lease, which only the adapter that made
	// the lease reads (its type is the adapter's business).
	Impl any
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

// RefusedError is a refused acquire (it matches ErrNotAcquired) that may
// have left its key behind: it was set on some nodes and the attempt's
// rollback got no answer there (a node too slow for the lock's timeout,
// a client starved of CPU), so it may keep others out there until it
// expires. The history records the nodes on the refusal, and the
// liveness checker counts the key they may hold.
type RefusedError struct {
	// Remain names the nodes where the key may remain.
	Remain []string
	Err    error
}

func (e *RefusedError) Error() string { return e.Err.Error() }

func (e *RefusedError) Unwrap() []error { return []error{ErrNotAcquired, e.Err} }
