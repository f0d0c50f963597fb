package adapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"splitbrain/locks"
	"splitbrain/redlock"
	"splitbrain/workload"
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
func (r *Redlock) Acquire(ctx context.Context, key string, ttl time.Duration) (*workload.Lease, error) {
	try := r.Locker.TryLock
	if r.Retry {
		try = r.Locker.Lock
	}
	l, err := try(ctx, key, ttl)
	if err != nil {
		// An attempt whose rollback went unanswered somewhere did not
		// take the lock, yet its key may keep others out until it
		// expires there: the history says where.
		var ae *redlock.AcquireError
		if errors.As(err, &ae) && len(ae.Stranded) > 0 {
			return nil, &workload.RefusedError{Remain: r.names(ae.Stranded), Err: err}
		}
		if errors.Is(err, redlock.ErrNotAcquired) {
			return nil, errors.Join(workload.ErrNotAcquired, err)
		}
		return nil, err
	}
	return r.lease(l), nil
}

// Release implements Lock.
func (r *Redlock) Release(ctx context.Context, lease *workload.Lease) error {
	l, err := r.own(lease)
	if err != nil {
		return err
	}
	_, err = r.Locker.Release(ctx, l)
	if errors.Is(err, redlock.ErrNotHeld) {
		return errors.Join(workload.ErrNotHeld, err)
	}
	return err
}

// Extend implements Lock. An extension refused (the lease expired, lost
// its quorum, or reached the extension limit) is ErrNotExtended.
func (r *Redlock) Extend(ctx context.Context, lease *workload.Lease, ttl time.Duration) (*workload.Lease, error) {
	l, err := r.own(lease)
	if err != nil {
		return nil, err
	}
	ext, err := r.Locker.Extend(ctx, l, ttl)
	if err != nil {
		if errors.Is(err, redlock.ErrNotHeld) || errors.Is(err, redlock.ErrExtendLimit) {
			return nil, errors.Join(workload.ErrNotExtended, err)
		}
		return nil, err
	}
	return r.lease(ext), nil
}

func (r *Redlock) own(lease *workload.Lease) (*redlock.Lease, error) {
	l, ok := lease.Impl.(*redlock.Lease)
	if !ok {
		return nil, errors.New("redlock adapter: lease was not acquired through this adapter")
	}
	return l, nil
}

func (r *Redlock) lease(l *redlock.Lease) *workload.Lease {
	out := &workload.Lease{Key: l.Key, Value: l.Value, Deadline: l.Deadline, Granted: r.names(l.Granted), Impl: l}
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

// buildRedlock is our Redlock over the client's connections to the lock's
// nodes, in the variant k names (Kind.Redlock), with the client's hooks.
func buildRedlock(ctx context.Context, k *locks.Kind, env Env) (workload.Lock, error) {
	conns, names, err := redisConns(ctx, env, 0)
	if err != nil {
		return nil, err
	}
	opts := redlock.Options{NodeTimeout: env.NodeTimeout, Hooks: env.Hooks, MaxTries: env.Retries,
		SkipElapsedCheck: k.Redlock.SkipElapsedCheck}
	switch k.Redlock.Fencing {
	case locks.FenceSimple:
		opts.Fencing = redlock.FenceSimple
	case locks.FenceTwoRound:
		opts.Fencing = redlock.FenceTwoRound
	}
	l, err := redlock.New(conns, opts)
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", env.Client, err)
	}
	return &Redlock{Locker: l, Nodes: names, Retry: env.Retries > 1}, nil
}
