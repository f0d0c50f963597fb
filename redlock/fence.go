package redlock

import (
	"context"
	"fmt"
)

// FenceError reports that the second round of FenceTwoRound did not make
// the token safe to hand out. The acquisition then fails and is rolled back.
type FenceError struct {
	// Token is the token the attempt tried to write.
	Token int64
	// Acks is how many nodes hold the token now; a quorum is needed.
	Acks int
	// Higher is the largest counter found above the token, or 0. A higher
	// counter means another client wrote a larger token, so handing this
	// one out could make tokens go backwards.
	Higher int64
	// NodeErrs has one entry per node: nil where the node answered.
	NodeErrs []error
}

func (e *FenceError) Error() string {
	if e.Higher > 0 {
		return fmt.Sprintf("fencing token %d not written: a node already holds %d", e.Token, e.Higher)
	}
	return fmt.Sprintf("fencing token %d written on %d nodes, short of a quorum", e.Token, e.Acks)
}

// Is makes errors.Is(err, ErrLostQuorum) true when the token fell short of
// a quorum.
func (e *FenceError) Is(target error) bool { return target == ErrLostQuorum && e.Higher == 0 }

// Unwrap exposes the per-node causes.
func (e *FenceError) Unwrap() []error { return nonNil(e.NodeErrs) }

// writeFence is the second round of FenceTwoRound: raise every node's
// counter to token (set-if-greater) and return token once a quorum holds it.
func (l *Locker) writeFence(ctx context.Context, key string, token int64) (int64, error) {
	req := request{script: &fenceWriteScript, keys: []string{CounterKey(key)}, args: []any{token}}
	res := l.fanOut(ctx, nil, req)
	fe := &FenceError{Token: token, NodeErrs: make([]error, len(l.nodes))}
	for i, r := range res {
		n, ok := r.int64()
		switch {
		case !ok:
			fe.NodeErrs[i] = r.unexpected(i)
		case n == token:
			fe.Acks++
		case n > token:
			fe.Higher = max(fe.Higher, n)
		}
	}
	if fe.Higher > 0 || fe.Acks < l.quorum {
		return 0, fe
	}
	return token, nil
}
