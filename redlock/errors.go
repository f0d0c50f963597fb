package redlock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors callers can branch on with errors.Is. The typed errors below match
// the sentinels that apply to them and wrap their per-node causes, and a
// context that ended is matched by context.Canceled or
// context.DeadlineExceeded.
var (
	// ErrNotAcquired reports that a lock attempt did not produce a lease:
	// too few nodes granted the key, the validity ran out before the
	// attempt finished, the fencing round failed, or the caller's context
	// ended. Argument errors (bad key or ttl) do not match it: retrying
	// those cannot help.
	ErrNotAcquired = errors.New("redlock: lock not acquired")
	// ErrNotHeld reports that a release or extension did not find the
	// lease's value on a quorum of nodes, or that the lease's validity was
	// gone: the lock may already belong to someone else (whose key was left
	// alone).
	ErrNotHeld = errors.New("redlock: lock not held")
	// ErrLostQuorum reports that fewer than a quorum of nodes did what was
	// asked (release, extend, fencing write).
	ErrLostQuorum = errors.New("redlock: quorum lost")
	// ErrExpired reports that a lease's validity ran out: before Extend
	// started, or during the attempt or extension itself.
	ErrExpired = errors.New("redlock: validity expired")
	// ErrNotOwner reports that some node holds the key with another
	// client's value: the lease was lost and the lock taken over.
	ErrNotOwner = errors.New("redlock: lock owned by another client")
	// ErrExtendLimit reports that a lease has been extended
	// Options.MaxExtensions times already; it stays valid until its
	// Deadline.
	ErrExtendLimit = errors.New("redlock: extension limit reached")
)

// AcquireError describes a failed lock attempt in enough detail for a
// harness to record what each node did. It matches ErrNotAcquired, and also
// ErrExpired when a quorum granted the key but the validity was gone.
type AcquireError struct {
	// Key is the lock key.
	Key string
	// Value is the random value the attempt wrote; after the rollback no
	// node should hold it, but a node whose rollback was lost keeps it until
	// the TTL runs out.
	Value string
	// Granted is how many nodes granted the key.
	Granted int
	// Held is how many nodes answered that someone else holds the key.
	Held int
	// HeldByOne is the largest number of nodes held by one other client:
	// a quorum means the lock is in use, less means a split vote. TryLock
	// without fencing does not learn who holds a node and counts every
	// refusal as the same holder's.
	HeldByOne int
	// Quorum is how many grants were needed (N/2+1).
	Quorum int
	// Elapsed is the time from just before the first command was sent until
	// the attempt was judged, including any AfterReplies hook and the
	// fencing round.
	Elapsed time.Duration
	// Validity is ttl − Elapsed − drift; the attempt needs it positive.
	Validity time.Duration
	// NodeErrs has one entry per node, in node order: nil when the node
	// answered (granted, or held by someone else), otherwise why the
	// outcome on that node is unknown.
	NodeErrs []error
	// FenceErr is why the second round of FenceTwoRound failed, if it did.
	FenceErr error
	// CtxErr is the caller's context error when the context ended before the
	// attempt was judged. Such an attempt fails even with a quorum and
	// positive validity: nobody would be left to use or release the lease.
	CtxErr error
	// Tries is how many attempts Lock made (1 for TryLock).
	Tries int
	// Stranded lists the nodes where the attempt's value may still be
	// set: it was granted there or the outcome was unknown, and the
	// rollback's delete got no answer. The attempt did not take the lock
	// (ErrNotAcquired), but its key may keep others out there until it
	// expires.
	Stranded []int
}

// Error summarises the attempt and the per-node causes on one line.
func (e *AcquireError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: lock %q not acquired: granted by %d of %d nodes (quorum %d), validity %v",
		e.Key, e.Granted, len(e.NodeErrs), e.Quorum, e.Validity)
	if e.Tries > 1 {
		fmt.Fprintf(&b, ", after %d tries", e.Tries)
	}
	if e.FenceErr != nil {
		fmt.Fprintf(&b, ": %v", e.FenceErr)
	}
	if e.CtxErr != nil {
		fmt.Fprintf(&b, ": %v", e.CtxErr)
	}
	if len(e.Stranded) > 0 {
		fmt.Fprintf(&b, "; its rollback got no answer from %d node(s), where its key may stay until it expires", len(e.Stranded))
	}
	writeNodeErrs(&b, e.NodeErrs)
	return b.String()
}

// Is makes errors.Is(err, ErrNotAcquired) true for every AcquireError, and
// errors.Is(err, ErrExpired) when a quorum granted but no validity was left.
func (e *AcquireError) Is(target error) bool {
	switch target {
	case ErrNotAcquired:
		return true
	case ErrExpired:
		return e.Granted >= e.Quorum && e.Validity <= 0
	}
	return false
}

// Unwrap exposes the per-node causes, the fencing error and the context
// error, so that for example errors.Is(err, context.DeadlineExceeded) works.
func (e *AcquireError) Unwrap() []error {
	errs := nonNil(e.NodeErrs)
	if e.FenceErr != nil {
		errs = append(errs, e.FenceErr)
	}
	if e.CtxErr != nil {
		errs = append(errs, e.CtxErr)
	}
	return errs
}

// ReleaseError describes a release that did not delete the key on a quorum
// of nodes. It matches ErrNotHeld and ErrLostQuorum, and ErrNotOwner when
// some node holds another client's value.
type ReleaseError struct {
	// Key is the lock key.
	Key string
	// Deleted lists the indices of the nodes where our value was found and
	// deleted.
	Deleted []int
	// Foreign lists the nodes where the key holds another client's value.
	Foreign []int
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
	if len(e.Foreign) > 0 {
		fmt.Fprintf(&b, ", owned by another client on %d", len(e.Foreign))
	}
	writeNodeErrs(&b, e.NodeErrs)
	return b.String()
}

// Is matches ErrNotHeld and ErrLostQuorum, and ErrNotOwner when another
// client's value was found.
func (e *ReleaseError) Is(target error) bool {
	switch target {
	case ErrNotHeld, ErrLostQuorum:
		return true
	case ErrNotOwner:
		return len(e.Foreign) > 0
	}
	return false
}

// Unwrap exposes the per-node causes.
func (e *ReleaseError) Unwrap() []error { return nonNil(e.NodeErrs) }

// ExtendError describes an extension that did not produce a new lease. It
// matches ErrNotHeld; ErrExpired when the validity was gone (before the
// extension started, or by the time a quorum had answered); ErrLostQuorum
// when fewer than a quorum extended the key; ErrNotOwner when some node
// holds another client's value.
type ExtendError struct {
	// Key is the lock key.
	Key string
	// Extended lists the nodes where our key's expiry was moved. Those keys
	// now outlive the old lease; release the lease to free them.
	Extended []int
	// Foreign lists the nodes where the key holds another client's value.
	Foreign []int
	// Quorum is how many extensions were needed (N/2+1).
	Quorum int
	// Validity is the recomputed validity (ttl − elapsed − drift), or, when
	// the lease had expired before the extension started, its Remaining
	// time then (≤ 0); no node was contacted in that case.
	Validity time.Duration
	// NodeErrs has one entry per node: nil when the node answered,
	// otherwise why the outcome on that node is unknown.
	NodeErrs []error
	// CtxErr is the caller's context error if the context ended.
	CtxErr error
}

// Error summarises the extension and the per-node causes on one line.
func (e *ExtendError) Error() string {
	var b strings.Builder
	if len(e.NodeErrs) == 0 {
		fmt.Fprintf(&b, "redlock: lock %q not extended: lease expired %v ago", e.Key, -e.Validity)
		return b.String()
	}
	fmt.Fprintf(&b, "redlock: lock %q not extended: extended on %d of %d nodes (quorum %d), validity %v",
		e.Key, len(e.Extended), len(e.NodeErrs), e.Quorum, e.Validity)
	if len(e.Foreign) > 0 {
		fmt.Fprintf(&b, ", owned by another client on %d", len(e.Foreign))
	}
	if e.CtxErr != nil {
		fmt.Fprintf(&b, ": %v", e.CtxErr)
	}
	writeNodeErrs(&b, e.NodeErrs)
	return b.String()
}

// Is matches the sentinels that describe the failure.
func (e *ExtendError) Is(target error) bool {
	switch target {
	case ErrNotHeld:
		return true
	case ErrExpired:
		return e.Validity <= 0
	case ErrLostQuorum:
		return len(e.NodeErrs) > 0 && len(e.Extended) < e.Quorum
	case ErrNotOwner:
		return len(e.Foreign) > 0
	}
	return false
}

// Unwrap exposes the per-node causes and the context error.
func (e *ExtendError) Unwrap() []error {
	errs := nonNil(e.NodeErrs)
	if e.CtxErr != nil {
		errs = append(errs, e.CtxErr)
	}
	return errs
}

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
