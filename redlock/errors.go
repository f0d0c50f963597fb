package redlock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNotAcquired reports that a lock attempt did not produce a lease: too few
// nodes granted the key, the validity ran out before the attempt finished, or
// the caller's context ended. Errors returned by TryLock for such attempts are
// *AcquireError values that match ErrNotAcquired with errors.Is. Argument
// errors (bad key or ttl) do not match it: retrying those cannot help.
var ErrNotAcquired = errors.New("redlock: lock not acquired")

// ErrNotHeld reports that a release did not delete the key on a quorum of
// nodes: the lease had expired or been lost, so the lock may already belong
// to someone else (whose key Release leaves alone). Errors returned by
// Release for such releases are *ReleaseError values that match ErrNotHeld
// with errors.Is.
var ErrNotHeld = errors.New("redlock: lock not held")

// AcquireError describes a failed lock attempt in enough detail for a
// harness to record what each node did.
type AcquireError struct {
	// Key is the lock key.
	Key string
	// Value is the random value the attempt wrote; after the rollback no
	// node should hold it, but a node whose rollback was lost keeps it until
	// the TTL runs out.
	Value string
	// Granted is how many nodes answered OK to SET NX.
	Granted int
	// Quorum is how many grants were needed (N/2+1).
	Quorum int
	// Elapsed is the time from just before the first SET was sent until the
	// attempt was judged, including any AfterReplies hook.
	Elapsed time.Duration
	// Validity is ttl − Elapsed − drift; the attempt needs it positive.
	Validity time.Duration
	// NodeErrs has one entry per node, in node order: nil when the node
	// answered (OK, or the key is held by someone else), otherwise why the
	// outcome on that node is unknown.
	NodeErrs []error
	// CtxErr is the caller's context error when the context ended before the
	// attempt was judged. Such an attempt fails even with a quorum and
	// positive validity: nobody would be left to use or release the lease.
	CtxErr error
}

// Error summarises the attempt and the per-node causes on one line.
func (e *AcquireError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: lock %q not acquired: granted by %d of %d nodes (quorum %d), validity %v",
		e.Key, e.Granted, len(e.NodeErrs), e.Quorum, e.Validity)
	if e.CtxErr != nil {
		fmt.Fprintf(&b, ": %v", e.CtxErr)
	}
	writeNodeErrs(&b, e.NodeErrs)
	return b.String()
}

// Is makes errors.Is(err, ErrNotAcquired) true for every AcquireError.
func (e *AcquireError) Is(target error) bool { return target == ErrNotAcquired }

// Unwrap exposes the per-node causes and the context error, so that for
// example errors.Is(err, context.DeadlineExceeded) works.
func (e *AcquireError) Unwrap() []error {
	errs := nonNil(e.NodeErrs)
	if e.CtxErr != nil {
		errs = append(errs, e.CtxErr)
	}
	return errs
}

// ReleaseError describes a release that did not delete the key on a quorum
// of nodes.
type ReleaseError struct {
	// Key is the lock key.
	Key string
	// Deleted lists the indices of the nodes where our value was found and
	// deleted.
	Deleted []int
	// Quorum is how many deletions were needed (N/2+1).
	Quorum int
	// NodeErrs has one entry per node, in node order: nil when the node
	// answered (deleted, or found the key absent or someone else's),
	// otherwise why the outcome on that node is unknown.
	NodeErrs []error
}

// Error summarises the release and the per-node causes on one line.
func (e *ReleaseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: lock %q not held: deleted on %d of %d nodes (quorum %d)",
		e.Key, len(e.Deleted), len(e.NodeErrs), e.Quorum)
	writeNodeErrs(&b, e.NodeErrs)
	return b.String()
}

// Is makes errors.Is(err, ErrNotHeld) true for every ReleaseError.
func (e *ReleaseError) Is(target error) bool { return target == ErrNotHeld }

// Unwrap exposes the per-node causes.
func (e *ReleaseError) Unwrap() []error { return nonNil(e.NodeErrs) }

func writeNodeErrs(b *strings.Builder, errs []error) {
	for _, err := range errs {
		if err != nil {
			fmt.Fprintf(b, "; %v", err)
		}
	}
}

func nonNil(errs []error) []error {
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}
