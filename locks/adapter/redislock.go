package adapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"splitbrain/locks"
	"splitbrain/workload"
)

// Redislock adapts bsm/redislock (v0.9.x) to Lock: one Redis deployment,
// an obtain script (SET NX PX, or an override when the holder's value
// starts with the same token), Refresh and Release by Lua, TTL asked of the
// server. It hands out no fencing tokens.
//
// Its belief. redislock's Obtain returns a *Lock and nothing about time:
// no deadline, no validity, and it does not check how much of the TTL the
// obtain itself used. What its API tells a user is "you hold key for the
// ttl you asked", so the lease's Deadline is the instant Obtain returned,
// on the monotonic clock, plus that ttl; a Refresh likewise gives the
// instant it returned plus its ttl. The time the obtain took (a slow
// reply, a pause after it, retries) is not subtracted: the belief can end
// after the key expired on the server — the lock's known gap, which the
// harness shows rather than mends. A user who asks Lock.TTL knows better;
// the workload, like most callers, does not ask.
type Redislock struct {
	client *redislock.Client
	// Tries is how many attempts Acquire makes (redislock's LimitRetry
	// of a LinearBackoff of RetryDelay); 0 or 1 means one, redislock's
	// default (NoRetry).
	Tries int
	// RetryDelay is the wait between attempts; zero means 10ms.
	RetryDelay time.Duration
}

// NewRedislock returns redislock over c, the client of the one deployment
// (build it with redlock.ClientOptions: no retried commands, context
// deadlines honoured, as for the other locks).
func NewRedislock(c *redis.Client) *Redislock {
	return &Redislock{client: redislock.New(c)}
}

func (r *Redislock) options() *redislock.Options {
	if r.Tries <= 1 {
		return nil // redislock's default: one attempt
	}
	delay := r.RetryDelay
	if delay <= 0 {
		delay = 10 * time.Millisecond
	}
	return &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(delay), r.Tries-1)}
}

// Acquire implements Lock. redislock's ErrNotObtained (the key is held by
// another value) is ErrNotAcquired; any other error — a timeout, a broken
// connection — leaves the outcome unknown: the script may have run.
func (r *Redislock) Acquire(ctx context.Context, key string, ttl time.Duration) (*workload.Lease, error) {
	l, err := r.client.Obtain(ctx, key, ttl, r.options())
	if err != nil {
		if errors.Is(err, redislock.ErrNotObtained) {
			return nil, errors.Join(workload.ErrNotAcquired, err)
		}
		return nil, fmt.Errorf("redislock obtain %q: %w", key, err)
	}
	// The belief starts now, with the whole ttl: see the type's comment.
	return &workload.Lease{Key: key, Value: l.Token(), Deadline: time.Now().Add(ttl), Impl: l}, nil
}

// Release implements Lock: ErrLockNotHeld (the key is gone or someone
// else's) is ErrNotHeld.
func (r *Redislock) Release(ctx context.Context, lease *workload.Lease) error {
	l, err := r.own(lease)
	if err != nil {
		return err
	}
	if err := l.Release(ctx); err != nil {
		if errors.Is(err, redislock.ErrLockNotHeld) {
			return errors.Join(workload.ErrNotHeld, err)
		}
		return fmt.Errorf("redislock release %q: %w", lease.Key, err)
	}
	return nil
}

// Extend implements Lock with redislock's Refresh: ErrNotObtained (the key
// is gone or someone else's) is ErrNotExtended; the new deadline is the
// instant Refresh returned plus ttl.
func (r *Redislock) Extend(ctx context.Context, lease *workload.Lease, ttl time.Duration) (*workload.Lease, error) {
	l, err := r.own(lease)
	if err != nil {
		return nil, err
	}
	if err := l.Refresh(ctx, ttl, nil); err != nil {
		if errors.Is(err, redislock.ErrNotObtained) {
			return nil, errors.Join(workload.ErrNotExtended, err)
		}
		return nil, fmt.Errorf("redislock refresh %q: %w", lease.Key, err)
	}
	return &workload.Lease{Key: lease.Key, Value: lease.Value, Deadline: time.Now().Add(ttl), Impl: l}, nil
}

func (r *Redislock) own(lease *workload.Lease) (*redislock.Lock, error) {
	l, ok := lease.Impl.(*redislock.Lock)
	if !ok {
		return nil, errors.New("redislock adapter: lease was not acquired through this adapter")
	}
	return l, nil
}

// buildRedislock is bsm/redislock over the client's connection to n1 with
// the client's gate at the same three points; after-replies is after the
// obtain script's reply (its only command during an acquire), before
// redislock hands back the lock.
func buildRedislock(ctx context.Context, _ *locks.Kind, env Env) (workload.Lock, error) {
	conns, _, err := redisConns(ctx, env, 0)
	if err != nil {
		return nil, err
	}
	conns[0].AddHook(replyHook{gate: env.Gate, is: isScriptRun})
	rl := NewRedislock(conns[0])
	rl.Tries = env.Retries
	return gatedLock{Lock: rl, gate: env.Gate}, nil
}
