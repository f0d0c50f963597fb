package adapter

import (
	"context"
	"errors"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"splitbrain/locks"
	"splitbrain/workload"
)

// Redsync adapts go-redsync/redsync v4, the Go Redlock most users run, to
// Lock, so that any scenario can run against it as it is: its own
// algorithm, drift (1%), retries (none unless Tries says: by default the
// workload makes one attempt) and its per-node timeout (TimeoutFactor·TTL),
// set here to match ours.
// It hands out no fencing tokens and does not say which nodes granted.
type Redsync struct {
	rs          *redsync.Redsync
	nodeTimeout time.Duration
	// Tries is how many attempts Acquire makes (redsync's WithTries, with
	// its own random delay between them); 0 or 1 means one.
	Tries int
}

// NewRedsync returns redsync over clients (one per node, in node order;
// build them with redlock.ClientOptions so both locks run on the same
// go-redis settings). nodeTimeout is the per-node timeout to match; zero
// keeps redsync's default of 5% of the TTL.
func NewRedsync(clients []*redis.Client, nodeTimeout time.Duration) *Redsync {
	pools := make([]rsredis.Pool, len(clients))
	for i, c := range clients {
		pools[i] = goredis.NewPool(c)
	}
	return &Redsync{rs: redsync.New(pools...), nodeTimeout: nodeTimeout}
}

// mutex is redsync's handle on key; with value set, it takes over a lease
// acquired earlier (redsync's WithValue).
func (r *Redsync) mutex(key string, ttl time.Duration, value string) *redsync.Mutex {
	opts := []redsync.Option{redsync.WithExpiry(ttl), redsync.WithTries(max(r.Tries, 1))}
	if r.nodeTimeout > 0 {
		opts = append(opts, redsync.WithTimeoutFactor(float64(r.nodeTimeout)/float64(ttl)))
	}
	if value != "" {
		opts = append(opts, redsync.WithValue(value))
	}
	return r.rs.NewMutex(key, opts...)
}

// Acquire implements Lock. Every failed attempt is ErrNotAcquired: redsync
// rolls back and reports no lease whatever the cause.
func (r *Redsync) Acquire(ctx context.Context, key string, ttl time.Duration) (*workload.Lease, error) {
	m := r.mutex(key, ttl, "")
	if err := m.LockContext(ctx); err != nil {
		return nil, errors.Join(workload.ErrNotAcquired, err)
	}
	return &workload.Lease{Key: key, Value: m.Value(), Deadline: m.Until(), Impl: m}, nil
}

// Release implements Lock.
func (r *Redsync) Release(ctx context.Context, lease *workload.Lease) error {
	m, err := r.own(lease)
	if err != nil {
		return err
	}
	if ok, err := m.UnlockContext(ctx); !ok {
		return errors.Join(workload.ErrNotHeld, err)
	}
	return nil
}

// Extend implements Lock, with redsync's ExtendContext on a handle for ttl.
func (r *Redsync) Extend(ctx context.Context, lease *workload.Lease, ttl time.Duration) (*workload.Lease, error) {
	if _, err := r.own(lease); err != nil {
		return nil, err
	}
	m := r.mutex(lease.Key, ttl, lease.Value)
	if ok, err := m.ExtendContext(ctx); !ok {
		return nil, errors.Join(workload.ErrNotExtended, err)
	}
	return &workload.Lease{Key: lease.Key, Value: lease.Value, Deadline: m.Until(), Impl: m}, nil
}

func (r *Redsync) own(lease *workload.Lease) (*redsync.Mutex, error) {
	m, ok := lease.Impl.(*redsync.Mutex)
	if !ok {
		return nil, errors.New("redsync adapter: lease was not acquired through this adapter")
	}
	return m, nil
}

// buildRedsync is redsync over the client's connections to every node,
// with the client's gate at the three points (see gate.go): after-replies
// once a SET NX reply has arrived.
func buildRedsync(ctx context.Context, _ *locks.Kind, env Env) (workload.Lock, error) {
	conns, _, err := redisConns(ctx, env, 0)
	if err != nil {
		return nil, err
	}
	for _, c := range conns {
		c.AddHook(replyHook{gate: env.Gate, is: isSetNX})
	}
	rs := NewRedsync(conns, env.NodeTimeout)
	rs.Tries = env.Retries
	return gatedLock{Lock: rs, gate: env.Gate}, nil
}
