// Package redlock implements the Redlock distributed lock over N independent
// Redis masters, faithful to the algorithm published on redis.io and to
// antirez's reference implementation: a random value per attempt, SET NX PX
// sent to all nodes in parallel with a per-node timeout, success only with a
// majority of grants and a positive validity (ttl − elapsed − clock drift),
// rollback on every node after a failed attempt, and release by a
// compare-and-delete script.
//
// The package depends on go-redis only, so any Go program can use it. Hooks
// let a test harness stop a client at exact points of the algorithm, which is
// how the pauses of the Kleppmann/antirez debate are reproduced.
//
// Build node clients with ClientOptions: go-redis's defaults retry commands,
// and a retried SET NX or release is not safe.
package redlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults used for zero-valued Options fields.
const (
	// DefaultNodeTimeout bounds each command to one node. It must be far
	// below the TTL: a slow node must not eat the validity of the lease.
	DefaultNodeTimeout = 50 * time.Millisecond
	// DefaultDriftFactor is the clock-drift allowance per unit of TTL from
	// the Redlock page (1%).
	DefaultDriftFactor = 0.01
	// DefaultDriftConst is the fixed part of the drift allowance from the
	// reference implementation; it covers the granularity of Redis expiry.
	DefaultDriftConst = 2 * time.Millisecond
)

// valueBytes is how much randomness identifies one acquisition: enough that
// two clients never pick the same value, so a release can never delete a key
// it did not write.
const valueBytes = 20

// releaseScript deletes the key only if it still holds our value; a plain DEL
// would delete the key of whoever acquired the lock after our lease expired.
const releaseScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// Options configures a Locker. The zero value selects every default.
type Options struct {
	// NodeTimeout bounds each SET or release script sent to one node,
	// including any dial. Zero selects DefaultNodeTimeout; it must not be
	// negative, and TryLock rejects a ttl that is not longer than it.
	NodeTimeout time.Duration
	// DriftFactor is the share of the TTL set aside for clock drift between
	// the client and the nodes. Zero selects DefaultDriftFactor; otherwise
	// 0 < DriftFactor < 1.
	DriftFactor float64
	// DriftConst is added to the drift allowance. Zero selects
	// DefaultDriftConst; it must not be negative.
	DriftConst time.Duration
	// Hooks run at fixed points of the algorithm; nil hooks are skipped.
	Hooks Hooks
}

// Hooks are functions run at named points of the algorithm so that a harness
// can pause a client exactly there. They run on the caller's goroutine with
// the caller's context and block the operation for as long as they run, just
// as a stop-the-world pause would; a nil hook costs one comparison.
type Hooks struct {
	// AfterReplies runs once every node has replied or timed out and before
	// the validity is computed. Time spent in it counts into the elapsed
	// time, which is what makes a pause here harmless: the attempt sees its
	// validity run out and fails.
	AfterReplies func(ctx context.Context, key string)
	// AfterAcquire runs after a successful attempt, before TryLock returns
	// the lease. A pause here is a pause inside the critical section: the
	// lease's Deadline is already fixed.
	AfterAcquire func(ctx context.Context, lease *Lease)
	// BeforeRelease runs at the start of Release, before any node is
	// contacted.
	BeforeRelease func(ctx context.Context, lease *Lease)
}

// Lease is a lock acquired by TryLock. Its fields describe the acquisition;
// the lock is only safe to rely on until Deadline.
type Lease struct {
	// Key is the lock key.
	Key string
	// Value is the random value written to the nodes; Release deletes only
	// keys that still hold it.
	Value string
	// TTL is the expiry set on each node (the requested ttl truncated to
	// whole milliseconds, the unit of PX).
	TTL time.Duration
	// Start was taken just before the first SET was sent. It carries a
	// monotonic clock reading, so wall-clock jumps do not move it.
	Start time.Time
	// Deadline is Start + TTL − drift: the instant the validity ends, as a
	// monotonic time. Compare with time.Now() or use Remaining.
	Deadline time.Time
	// Validity is the time the lease had left when TryLock judged it
	// (TTL − elapsed − drift).
	Validity time.Duration
	// Granted lists the indices (into the Locker's nodes) of the nodes that
	// answered OK to SET NX.
	Granted []int
}

// Remaining returns the validity left now; zero or negative means the lease
// must no longer be relied on.
func (l *Lease) Remaining() time.Duration { return time.Until(l.Deadline) }

// Locker acquires and releases Redlock leases on a fixed set of nodes. It is
// safe for concurrent use.
type Locker struct {
	nodes  []*redis.Client
	quorum int
	opts   Options
	script *redis.Script
}

// New returns a Locker over nodes, which should be independent masters
// (clients built with ClientOptions). The node order fixes the indices used
// in Lease.Granted, Release's result and the per-node errors.
func New(nodes []*redis.Client, opts Options) (*Locker, error) {
	if len(nodes) == 0 {
		return nil, errors.New("redlock: no nodes: need at least one *redis.Client")
	}
	for i, c := range nodes {
		if c == nil {
			return nil, fmt.Errorf("redlock: nodes[%d] is nil", i)
		}
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Locker{
		nodes:  append([]*redis.Client(nil), nodes...),
		quorum: len(nodes)/2 + 1,
		opts:   opts,
		script: redis.NewScript(releaseScript),
	}, nil
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.NodeTimeout < 0:
		return o, fmt.Errorf("redlock: Options.NodeTimeout = %v: must be > 0 (0 selects %v)", o.NodeTimeout, DefaultNodeTimeout)
	case o.NodeTimeout == 0:
		o.NodeTimeout = DefaultNodeTimeout
	}
	switch {
	case math.IsNaN(o.DriftFactor) || o.DriftFactor < 0 || o.DriftFactor >= 1:
		return o, fmt.Errorf("redlock: Options.DriftFactor = %v: must be in (0, 1) (0 selects %v)", o.DriftFactor, DefaultDriftFactor)
	case o.DriftFactor == 0:
		o.DriftFactor = DefaultDriftFactor
	}
	switch {
	case o.DriftConst < 0:
		return o, fmt.Errorf("redlock: Options.DriftConst = %v: must be >= 0 (0 selects %v)", o.DriftConst, DefaultDriftConst)
	case o.DriftConst == 0:
		o.DriftConst = DefaultDriftConst
	}
	return o, nil
}

// Quorum returns how many nodes must grant or delete a key: N/2+1.
func (l *Locker) Quorum() int { return l.quorum }

// Nodes returns how many nodes the Locker uses.
func (l *Locker) Nodes() int { return len(l.nodes) }

// Drift returns the clock-drift allowance for ttl: ttl·DriftFactor +
// DriftConst.
func (l *Locker) Drift(ttl time.Duration) time.Duration {
	return drift(ttl, l.opts.DriftFactor, l.opts.DriftConst)
}

func drift(ttl time.Duration, factor float64, c time.Duration) time.Duration {
	return time.Duration(math.Round(float64(ttl)*factor)) + c
}

// validity is what is left of ttl after elapsed and the drift allowance.
func validity(ttl, elapsed, drift time.Duration) time.Duration {
	return ttl - elapsed - drift
}

// TryLock makes one attempt to acquire key for ttl and returns the lease, or
// an error. It does not retry: a caller wanting to wait for the lock retries
// after a random delay.
//
// Attempts that ran but did not win the lock return an *AcquireError, which
// matches ErrNotAcquired; whatever the attempt wrote has then been deleted
// again on every node, with a context the caller's cancellation cannot cut
// short, because a node that did not answer may still have applied the SET.
// Other errors mean nothing was sent: the arguments were invalid or ctx had
// already ended.
//
// ttl is truncated to whole milliseconds and must be longer than both the
// node timeout and the drift allowance.
func (l *Locker) TryLock(ctx context.Context, key string, ttl time.Duration) (*Lease, error) {
	ttl = ttl.Truncate(time.Millisecond)
	if err := l.checkLockArgs(key, ttl); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redlock: lock %q: %w", key, err)
	}
	value, err := newValue()
	if err != nil {
		return nil, fmt.Errorf("redlock: lock %q: random value: %w", key, err)
	}
	d := l.Drift(ttl)
	ms := ttl.Milliseconds()

	start := time.Now()
	granted, nodeErrs := l.fanOut(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
		reply, err := c.Do(ctx, "set", key, value, "nx", "px", ms).Text()
		switch {
		case errors.Is(err, redis.Nil):
			return false, nil // held by someone else: a definite answer
		case err != nil:
			return false, err
		case reply != "OK":
			return false, fmt.Errorf("unexpected SET reply %q", reply)
		}
		return true, nil
	})
	if h := l.opts.Hooks.AfterReplies; h != nil {
		h(ctx, key)
	}
	elapsed := time.Since(start)
	v := validity(ttl, elapsed, d)

	if len(granted) < l.quorum || v <= 0 || ctx.Err() != nil {
		// The rollback must run even if the caller gave up: otherwise the
		// partial lock blocks everybody else until it expires.
		_, _ = l.deleteOwn(context.WithoutCancel(ctx), key, value)
		return nil, &AcquireError{
			Key:      key,
			Value:    value,
			Granted:  len(granted),
			Quorum:   l.quorum,
			Elapsed:  elapsed,
			Validity: v,
			NodeErrs: nodeErrs,
			CtxErr:   ctx.Err(),
		}
	}
	lease := &Lease{
		Key:      key,
		Value:    value,
		TTL:      ttl,
		Start:    start,
		Deadline: start.Add(ttl - d),
		Validity: v,
		Granted:  granted,
	}
	if h := l.opts.Hooks.AfterAcquire; h != nil {
		h(ctx, lease)
	}
	return lease, nil
}

func (l *Locker) checkLockArgs(key string, ttl time.Duration) error {
	if key == "" {
		return errors.New("redlock: empty key")
	}
	if ttl <= l.opts.NodeTimeout {
		return fmt.Errorf("redlock: ttl %v (truncated to ms) must be longer than Options.NodeTimeout %v", ttl, l.opts.NodeTimeout)
	}
	if d := l.Drift(ttl); ttl <= d {
		return fmt.Errorf("redlock: ttl %v must be longer than its drift allowance %v (Options.DriftFactor %v, Options.DriftConst %v)",
			ttl, d, l.opts.DriftFactor, l.opts.DriftConst)
	}
	return nil
}

// Release deletes the lease's key on every node where it still holds the
// lease's value, and returns the indices of those nodes. The error is nil
// when at least a quorum of nodes deleted the key; otherwise it is a
// *ReleaseError matching ErrNotHeld: the lease had expired or been lost, and
// any other client's key was left alone.
//
// The caller's cancellation does not cut a release short (a half-done
// release leaves the lock blocked until it expires); each node is bounded by
// Options.NodeTimeout instead.
func (l *Locker) Release(ctx context.Context, lease *Lease) (deleted []int, err error) {
	if lease == nil {
		return nil, errors.New("redlock: Release of a nil lease")
	}
	if h := l.opts.Hooks.BeforeRelease; h != nil {
		h(ctx, lease)
	}
	deleted, nodeErrs := l.deleteOwn(context.WithoutCancel(ctx), lease.Key, lease.Value)
	if len(deleted) < l.quorum {
		return deleted, &ReleaseError{
			Key:      lease.Key,
			Deleted:  deleted,
			Quorum:   l.quorum,
			NodeErrs: nodeErrs,
		}
	}
	return deleted, nil
}

// deleteOwn runs the compare-and-delete script on every node. EVALSHA falls
// back to EVAL on NOSCRIPT, which is safe without retries: NOSCRIPT means the
// script did not run.
func (l *Locker) deleteOwn(ctx context.Context, key, value string) ([]int, []error) {
	return l.fanOut(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
		n, err := l.script.Run(ctx, c, []string{key}, value).Int64()
		if err != nil {
			return false, err
		}
		return n == 1, nil
	})
}

// fanOut runs op on every node in parallel, each bounded by NodeTimeout, and
// waits for all of them. It returns, in node order, the indices where op
// reported true and one error per node (nil where the node answered).
func (l *Locker) fanOut(ctx context.Context, op func(context.Context, *redis.Client) (bool, error)) ([]int, []error) {
	hits := make([]bool, len(l.nodes))
	errs := make([]error, len(l.nodes))
	var wg sync.WaitGroup
	for i, c := range l.nodes {
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, l.opts.NodeTimeout)
			defer cancel()
			ok, err := op(nctx, c)
			hits[i] = ok
			if err != nil {
				errs[i] = fmt.Errorf("node %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	var idx []int
	for i, ok := range hits {
		if ok {
			idx = append(idx, i)
		}
	}
	return idx, errs
}

func newValue() (string, error) {
	b := make([]byte, valueBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
