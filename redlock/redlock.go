// Package redlock implements the Redlock distributed lock over N independent
// Redis masters, faithful to the algorithm published on redis.io and to
// antirez's reference implementation, with what the best implementations
// add on top:
//
//   - TryLock makes one attempt: a fresh random value, SET NX PX sent to all
//     nodes in parallel with a per-node timeout far below the TTL, success
//     only with a majority (N/2+1) of grants and a positive validity
//     ttl − elapsed − (ttl·DriftFactor + DriftConst), measured on the
//     monotonic clock. A failed attempt deletes its value again on every
//     node that granted it or did not answer (the reply may have been lost,
//     not the write), with a context the caller's cancellation cannot cut
//     short.
//   - Lock retries until its context ends (or Options.MaxTries), after a
//     random delay, and is woken as soon as the holder releases: Release
//     publishes on a pub/sub channel and waiters in this process queue up
//     behind one another, so a hand-off costs about one round trip after
//     the release, and concurrent waiters do not split the nodes' votes
//     between them.
//   - Release deletes the key on all nodes by compare-and-delete; Extend
//     moves the expiry by compare-and-pexpire, needs a quorum and a positive
//     recomputed validity, never re-acquires an expired key and is capped;
//     Do runs a function while the lease is kept alive and cancels the
//     function's context before the validity runs out, not after.
//   - Fencing tokens, in two schemes whose guarantees differ (see Fencing).
//   - Variants for experiments, as options rather than copies: a single
//     node (N=1), the "naive" lock that skips the elapsed-time check
//     (Options.SkipElapsedCheck), and hooks at named points of the algorithm
//     where a test harness can pause a client.
//
// Build one Locker per process over clients made with ClientOptions and
// share it: concurrent operations on one node are combined into pipelines,
// and waiters of one Locker queue up instead of competing, so a shared
// Locker is much faster than one per goroutine. Then either TryLock or
// Lock, work until the lease's Deadline, and Release; or let Do do all of
// that around a function (see the example).
//
// The package depends on go-redis only, so any Go program can use it. Build
// node clients with ClientOptions: go-redis's defaults retry commands, and a
// retried SET NX or release is not safe.
//
// Redlock is safe only under its timing assumptions: bounded clock drift on
// the nodes, no process pause longer than the validity between checking it
// and using the lock, and nodes that do not forget keys on restart. Where
// these matter, use fencing tokens and have the protected resource reject
// stale ones.
package redlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"slices"
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
	// DefaultRetryDelay is the mean wait between Lock's attempts when no
	// release wakes it up.
	DefaultRetryDelay = 100 * time.Millisecond
	// DefaultMaxExtensions caps the extensions of one lease.
	DefaultMaxExtensions = 16
)

// valueBytes is how much randomness identifies one acquisition: enough that
// two clients never pick the same value, so a release can never delete a key
// it did not write.
const valueBytes = 20

// Fencing selects how a Locker makes fencing tokens: numbers that grow with
// every acquisition, which a protected resource can use to reject a client
// whose lease has run out (Kleppmann's fencing). Counters live on the lock
// nodes under CounterKey(key), without expiry.
type Fencing int

const (
	// FenceNone hands out no tokens (Lease.Token is 0).
	FenceNone Fencing = iota
	// FenceSimple increments a per-key counter on every node inside the
	// acquire script, on every attempt that reaches the node, and takes
	// the largest counter among the nodes that answered (the granting
	// quorum, and any node that refused) as the token. It costs nothing
	// extra. The token of an attempt that began after the previous holder
	// was granted, and that reached every node, is larger than the previous
	// token: the node that gave the previous token its value counted that
	// acquisition before this one. Under faults the tokens do NOT strictly
	// increase:
	//
	//   - A node that some attempts could not reach falls behind, a node
	//     that others reached runs ahead, and a later acquisition that
	//     reaches only lagging nodes (a quorum of them) hands out a token
	//     lower than an earlier one, because the node that holds the larger
	//     counter is not among them. Quorum intersection does not help: the
	//     intersecting node need not be the one that held the maximum.
	//   - Asynchrony alone does it too: an attempt whose commands reach
	//     some nodes before and others after another client's whole
	//     acquire–release (a slow link, a paused client, a busy scheduler)
	//     can repeat or lower that client's token.
	//
	// Taking the maximum over the granting quorum only, as the scheme is
	// usually written, is weaker still: a node held by a losing contender
	// at that moment can carry the maximum, and tokens repeat under mere
	// contention.
	FenceSimple
	// FenceTwoRound reads the counters of the granting quorum (in the
	// acquire script), then writes their maximum + 1 to the nodes with a
	// set-if-greater script, and hands out that token only once a quorum
	// holds it and no node holds a larger one (which would mean another
	// client got past the first round at the same time; the attempt then
	// fails). Every token handed out is on a quorum, every later read
	// quorum intersects it, and counters never go down, so tokens strictly
	// increase under link faults, pauses and clock jumps. It costs a
	// second round trip, and it still depends on the counters surviving:
	// a node restarted without persistence forgets its counter.
	FenceTwoRound
)

func (f Fencing) String() string {
	switch f {
	case FenceNone:
		return "none"
	case FenceSimple:
		return "simple"
	case FenceTwoRound:
		return "two-round"
	}
	return fmt.Sprintf("Fencing(%d)", int(f))
}

// CounterKey is the key that holds key's fencing counter on each node.
func CounterKey(key string) string { return key + ":fence" }

// Channel is the pub/sub channel on which releases of key are published.
func Channel(key string) string { return "redlock:released:" + key }

// Options configures a Locker. The zero value selects every default.
type Options struct {
	// NodeTimeout bounds each command sent to one node, including any
	// dial. Zero selects DefaultNodeTimeout; it must not be negative, and
	// TryLock rejects a ttl that is not longer than it.
	NodeTimeout time.Duration
	// DriftFactor is the share of the TTL set aside for clock drift between
	// the client and the nodes. Zero selects DefaultDriftFactor; otherwise
	// 0 < DriftFactor < 1.
	DriftFactor float64
	// DriftConst is added to the drift allowance. Zero selects
	// DefaultDriftConst; it must not be negative.
	DriftConst time.Duration
	// Fencing selects the fencing-token scheme; the zero value hands out
	// no tokens.
	Fencing Fencing
	// SkipElapsedCheck grants a lease whenever a quorum granted the key,
	// even when the attempt took so long that no validity is left — the
	// bug of implementations that compute the validity but never check it
	// (node-redlock's acquire). The lease then has a Deadline in the past.
	// It exists to show what the check buys; never set it otherwise.
	SkipElapsedCheck bool
	// RetryDelay is the mean wait between Lock's attempts while nobody
	// wakes it by releasing; each wait is drawn from [RetryDelay/2,
	// 3·RetryDelay/2). Zero selects DefaultRetryDelay; it must not be
	// negative.
	RetryDelay time.Duration
	// MaxTries bounds Lock's attempts. Zero means no bound: Lock tries
	// until its context ends. It must not be negative.
	MaxTries int
	// MaxExtensions caps how many times one lease can be extended, so a
	// holder that is stuck but still running cannot keep the lock forever.
	// Zero selects DefaultMaxExtensions; it must not be negative.
	MaxExtensions int
	// Rand draws the retry jitter; nil uses math/rand/v2's global source.
	// A harness that must replay a run passes a seeded generator; the
	// Locker serialises its use.
	Rand *mrand.Rand
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
	// validity run out and fails (unless Options.SkipElapsedCheck is set).
	AfterReplies func(ctx context.Context, key string)
	// AfterAcquire runs after a successful attempt, before TryLock returns
	// the lease. A pause here is a pause inside the critical section: the
	// lease's Deadline is already fixed.
	AfterAcquire func(ctx context.Context, lease *Lease)
	// BeforeRelease runs at the start of Release, before any node is
	// contacted.
	BeforeRelease func(ctx context.Context, lease *Lease)
}

// Lease is a lock acquired by TryLock or Lock, or extended by Extend. It is
// never modified after it has been returned; Extend returns a new one.
type Lease struct {
	// Key is the lock key.
	Key string
	// Value is the random value written to the nodes; Release and Extend
	// touch only keys that still hold it.
	Value string
	// TTL is the expiry set on each node (the requested ttl truncated to
	// whole milliseconds, the unit of PX).
	TTL time.Duration
	// Start was taken just before the first command of the acquisition (or
	// extension) was sent. It carries a monotonic clock reading, so
	// wall-clock jumps do not move it.
	Start time.Time
	// Deadline is Start + TTL − drift: the instant the validity ends, as a
	// monotonic time. Compare with time.Now() or use Remaining.
	Deadline time.Time
	// Validity is the time the lease had left when it was judged
	// (TTL − elapsed − drift).
	Validity time.Duration
	// Granted lists the indices (into the Locker's nodes) of the nodes that
	// granted the key (or, after Extend, extended it).
	Granted []int
	// Token is the fencing token, or 0 when the Locker hands out none.
	Token int64
	// Extensions counts the extensions that led to this lease.
	Extensions int
}

// Remaining returns the validity left now; zero or negative means the lease
// must no longer be relied on.
func (l *Lease) Remaining() time.Duration { return time.Until(l.Deadline) }

// Locker acquires and releases Redlock leases on a fixed set of nodes. It is
// safe for concurrent use, and is meant to be shared: concurrent operations
// are pipelined, and Lock's waiters queue up instead of competing.
type Locker struct {
	nodes  []*node
	all    []int
	quorum int
	opts   Options
	randMu sync.Mutex

	waits waits
}

// New returns a Locker over nodes, which should be independent masters
// (clients built with ClientOptions). The node order fixes the indices used
// in Lease.Granted, Release's result and the per-node errors. One node
// gives the single-instance lock (quorum 1).
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
	l := &Locker{quorum: len(nodes)/2 + 1, opts: opts}
	for i, c := range nodes {
		l.nodes = append(l.nodes, &node{c: c})
		l.all = append(l.all, i)
	}
	l.waits.init(l)
	return l, nil
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
	switch o.Fencing {
	case FenceNone, FenceSimple, FenceTwoRound:
	default:
		return o, fmt.Errorf("redlock: Options.Fencing = %d: want FenceNone, FenceSimple or FenceTwoRound", int(o.Fencing))
	}
	switch {
	case o.RetryDelay < 0:
		return o, fmt.Errorf("redlock: Options.RetryDelay = %v: must be > 0 (0 selects %v)", o.RetryDelay, DefaultRetryDelay)
	case o.RetryDelay == 0:
		o.RetryDelay = DefaultRetryDelay
	}
	if o.MaxTries < 0 {
		return o, fmt.Errorf("redlock: Options.MaxTries = %d: must be >= 0 (0 means until the context ends)", o.MaxTries)
	}
	switch {
	case o.MaxExtensions < 0:
		return o, fmt.Errorf("redlock: Options.MaxExtensions = %d: must be > 0 (0 selects %d)", o.MaxExtensions, DefaultMaxExtensions)
	case o.MaxExtensions == 0:
		o.MaxExtensions = DefaultMaxExtensions
	}
	return o, nil
}

// Quorum returns how many nodes must grant or delete a key: N/2+1.
func (l *Locker) Quorum() int { return l.quorum }

// Nodes returns how many nodes the Locker uses.
func (l *Locker) Nodes() int { return len(l.nodes) }

// Fencing returns the Locker's fencing scheme.
func (l *Locker) Fencing() Fencing { return l.opts.Fencing }

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
// an error. It does not retry or wait; Lock does.
//
// Attempts that ran but did not win the lock return an *AcquireError, which
// matches ErrNotAcquired; whatever the attempt wrote has then been deleted
// again on every node that granted it or did not answer, with a context the
// caller's cancellation cannot cut short, because a node that did not answer
// may still have applied the SET. Other errors mean nothing was sent: the
// arguments were invalid or ctx had already ended.
//
// ttl is truncated to whole milliseconds and must be longer than both the
// node timeout and the drift allowance.
func (l *Locker) TryLock(ctx context.Context, key string, ttl time.Duration) (*Lease, error) {
	ttl, err := l.prepare(ctx, key, ttl)
	if err != nil {
		return nil, err
	}
	value, err := newValue()
	if err != nil {
		return nil, fmt.Errorf("redlock: lock %q: random value: %w", key, err)
	}
	return l.attempt(ctx, key, value, ttl, false)
}

// prepare checks TryLock's arguments and returns the ttl truncated to ms.
func (l *Locker) prepare(ctx context.Context, key string, ttl time.Duration) (time.Duration, error) {
	ttl = ttl.Truncate(time.Millisecond)
	if key == "" {
		return 0, errors.New("redlock: empty key")
	}
	if ttl <= l.opts.NodeTimeout {
		return 0, fmt.Errorf("redlock: ttl %v (truncated to ms) must be longer than Options.NodeTimeout %v", ttl, l.opts.NodeTimeout)
	}
	if d := l.Drift(ttl); ttl <= d {
		return 0, fmt.Errorf("redlock: ttl %v must be longer than its drift allowance %v (Options.DriftFactor %v, Options.DriftConst %v)",
			ttl, d, l.opts.DriftFactor, l.opts.DriftConst)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("redlock: lock %q: %w", key, err)
	}
	return ttl, nil
}

// attempt is one acquisition with a given value; every variant goes
// through it. With holders set, refusals say who holds the lock (Lock needs
// that); otherwise the unfenced lock sends a plain SET NX PX, the cheapest
// command there is.
func (l *Locker) attempt(ctx context.Context, key, value string, ttl time.Duration, holders bool) (*Lease, error) {
	d := l.Drift(ttl)
	ms := ttl.Milliseconds()
	req := l.acquireRequest(key, value, ms, holders)

	start := time.Now()
	res := l.fanOut(ctx, nil, req)
	ae := &AcquireError{Key: key, Value: value, Quorum: l.quorum, NodeErrs: make([]error, len(l.nodes))}
	var granted []int
	var maxCounter int64
	byHolder := map[string]int{}
	refused := func(counter int64, holder string) {
		ae.Held++ // held by someone else: a definite answer
		maxCounter = max(maxCounter, counter)
		byHolder[holder]++
		ae.HeldByOne = max(ae.HeldByOne, byHolder[holder])
	}
	for i, r := range res {
		switch v := r.val.(type) {
		case int64: // a script's grant, with the counter
			if r.err == nil {
				granted = append(granted, i)
				maxCounter = max(maxCounter, v)
				continue
			}
		case string: // SET's grant
			if r.err == nil && v == "OK" {
				granted = append(granted, i)
				continue
			}
		case []any:
			if n, holder, ok := refusal(v); ok && r.err == nil {
				refused(n, holder)
				continue
			}
		}
		if errors.Is(r.err, redis.Nil) && req.script == nil {
			refused(0, "") // SET NX does not say who holds it
			continue
		}
		ae.NodeErrs[i] = r.unexpected(i)
	}
	ae.Granted = len(granted)
	if h := l.opts.Hooks.AfterReplies; h != nil {
		h(ctx, key)
	}

	var token int64
	if len(granted) >= l.quorum && ctx.Err() == nil {
		switch l.opts.Fencing {
		case FenceSimple:
			token = maxCounter
		case FenceTwoRound:
			token, ae.FenceErr = l.writeFence(ctx, key, maxCounter+1)
		}
	}
	ae.Elapsed = time.Since(start)
	ae.Validity = validity(ttl, ae.Elapsed, d)
	ae.CtxErr = ctx.Err()

	if len(granted) < l.quorum || (ae.Validity <= 0 && !l.opts.SkipElapsedCheck) || ae.CtxErr != nil || ae.FenceErr != nil {
		var written []int // where the value may be: granted, or unknown
		for i := range res {
			if ae.NodeErrs[i] != nil || slices.Contains(granted, i) {
				written = append(written, i)
			}
		}
		ae.Stranded = l.rollback(ctx, key, value, written, len(granted) >= l.quorum)
		return nil, ae
	}
	lease := &Lease{
		Key:      key,
		Value:    value,
		TTL:      ttl,
		Start:    start,
		Deadline: start.Add(ttl - d),
		Validity: ae.Validity,
		Granted:  granted,
		Token:    token,
	}
	if h := l.opts.Hooks.AfterAcquire; h != nil {
		h(ctx, lease)
	}
	return lease, nil
}

func (l *Locker) acquireRequest(key, value string, ms int64, holders bool) request {
	switch l.opts.Fencing {
	case FenceSimple:
		return request{script: &acquireSimpleScript, keys: []string{key, CounterKey(key)}, args: []any{value, ms}}
	case FenceTwoRound:
		return request{script: &acquireReadScript, keys: []string{key, CounterKey(key)}, args: []any{value, ms}}
	}
	if !holders {
		return request{args: []any{"set", key, value, "nx", "px", ms}}
	}
	return request{script: &acquireScript, keys: []string{key}, args: []any{value, ms}}
}

// refusal decodes an acquire script's refusal: the node's counter and the
// holder's value.
func refusal(v []any) (counter int64, holder string, ok bool) {
	if len(v) != 2 {
		return 0, "", false
	}
	counter, ok = v[0].(int64)
	holder, _ = v[1].(string)
	return counter, holder, ok
}

// rollback deletes a failed attempt's value wherever it may have been
// written: on the nodes that granted it and on those whose outcome is
// unknown; a node that refused certainly did not write it. The rollback
// must run even if the caller gave up, or the partial lock blocks everybody
// until it expires. It announces itself to waiters only when the attempt
// had a quorum: others then saw the lock as held, while after a split vote
// they back off on their own. It returns the nodes where the value may
// still be: those whose delete got no answer (a timeout on a slow node or
// a starved client): there the key blocks everyone until it expires.
func (l *Locker) rollback(ctx context.Context, key, value string, written []int, hadQuorum bool) (stranded []int) {
	if len(written) == 0 {
		return nil
	}
	res := l.deleteOwn(context.WithoutCancel(ctx), written, key, value, hadQuorum)
	_, _, errs := compared(res)
	for _, i := range written {
		if errs[i] != nil {
			stranded = append(stranded, i)
		}
	}
	return stranded
}

// Release deletes the lease's key on every node where it still holds the
// lease's value, and returns the indices of those nodes. The error is nil
// when at least a quorum of nodes deleted the key; otherwise it is a
// *ReleaseError matching ErrNotHeld: the lease had expired or been lost, and
// any other client's key was left alone.
//
// Release publishes the release so that waiters (Lock, here or in other
// processes) retry at once. The caller's cancellation does not cut a
// release short (a half-done release leaves the lock blocked until it
// expires); each node is bounded by Options.NodeTimeout instead.
func (l *Locker) Release(ctx context.Context, lease *Lease) (deleted []int, err error) {
	if lease == nil {
		return nil, errors.New("redlock: Release of a nil lease")
	}
	if h := l.opts.Hooks.BeforeRelease; h != nil {
		h(ctx, lease)
	}
	res := l.deleteOwn(context.WithoutCancel(ctx), nil, lease.Key, lease.Value, true)
	re := &ReleaseError{Key: lease.Key, Quorum: l.quorum}
	re.Deleted, re.Foreign, re.NodeErrs = compared(res)
	if len(re.Deleted) < l.quorum {
		return re.Deleted, re
	}
	return re.Deleted, nil
}

// deleteOwn runs the compare-and-delete script on targets (nil: all nodes)
// and, if announce is set, wakes this Locker's own waiters for key once the
// deletes are done (other processes hear of it by pub/sub).
func (l *Locker) deleteOwn(ctx context.Context, targets []int, key, value string, announce bool) []result {
	channel := ""
	if announce {
		channel = Channel(key)
	}
	req := request{script: &releaseScript, keys: []string{key}, args: []any{value, channel}}
	res := l.fanOut(ctx, targets, req)
	if announce {
		l.waits.released(key, value, true)
	}
	return res
}

// jitter returns a random duration in [lo, hi).
func (l *Locker) jitter(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	span := int64(hi - lo)
	if r := l.opts.Rand; r != nil {
		l.randMu.Lock()
		defer l.randMu.Unlock()
		return lo + time.Duration(r.Int64N(span))
	}
	return lo + time.Duration(mrand.Int64N(span))
}

func newValue() (string, error) {
	b := make([]byte, valueBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
