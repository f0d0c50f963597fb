package adapter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/fault"
	"splitbrain/locks"
	"splitbrain/workload"
)

// WaitReplicas is Redisson's RLock scheme (Redisson 3.17+, 4.x), written in
// Go from its documented behaviour and its source, since Redisson itself is
// Java: one master with asynchronous replicas, every lock, renewal and
// unlock script sent to the master and followed, in the same pipeline, by
// WAIT <replicas> <timeout>.
//
//   - The lock is a hash: field "<client id>:<thread>" → re-entrancy
//     counter. Lock: if the key does not exist or has our field, HINCRBY
//     it and PEXPIRE the key to the lease time, reply nil; else reply its
//     PTTL (refused). Renewal: PEXPIRE if our field is there. Unlock:
//     HINCRBY −1; at zero DEL and PUBLISH to the lock's channel.
//   - syncedEval: the number of replicas to wait for is the master's
//     connected_slaves (INFO replication), cached until a WAIT answers
//     with another count. The command fails only when checkLockSyncedSlaves
//     is on (Redisson's default) and zero replicas acknowledged while some
//     are connected; one acknowledgement of two is success. A lock whose
//     WAIT failed so is unlocked at once (handleNoSync) and refused.
//   - The watchdog: a lock taken without a lease time lives
//     lockWatchdogTimeout (here the TTL asked) and is renewed every third
//     of it; a renewal that finds the field gone stops it, an error is
//     logged and the renewal rescheduled.
//
// Its belief. lock() returns nothing about time: the lock is the caller's
// until unlock(), the watchdog keeping the key alive behind its back. So a
// lease has no Deadline (zero) and the harness ends the belief at the
// release — whatever happened to the key meanwhile (a failover, a renewal
// that could not reach the master, a process pause that froze the
// watchdog). The watchdog passes Hooks.Background before each renewal, so
// a paused client's watchdog stops with it, as a frozen JVM's does.
//
// No fencing tokens (RFencedLock's INCR is as asynchronously replicated as
// the lock).
type WaitReplicas struct {
	c *redis.Client
	// field is Redisson's lock name, "<client id>:<thread id>": this
	// harness client is one thread of one Redisson instance.
	field string
	// WaitTimeout is Redisson's slavesSyncTimeout: how long WAIT blocks
	// for the acknowledgements; zero means 1s, Redisson's default.
	WaitTimeout time.Duration
	// SkipSyncCheck turns off checkLockSyncedSlaves: no acknowledgement
	// needed at all.
	SkipSyncCheck bool
	// Tries is how many lock attempts Acquire makes, RetryDelay apart
	// (Redisson's tryLock(waitTime) subscribes and retries; the harness
	// polls); 0 or 1 means one.
	Tries      int
	RetryDelay time.Duration
	Hooks      WaitReplicasHooks
	// Logf receives the watchdog's errors, which Redisson logs and goes
	// on; nil discards them.
	Logf func(format string, args ...any)

	mu sync.Mutex
	// replicas is the cached connected_slaves; -1: ask the master.
	replicas int
	// dogs are the running watchdogs by key.
	dogs map[string]*watchdog
}

// WaitReplicasHooks are where the harness can stop the client; nil
// functions are skipped.
type WaitReplicasHooks struct {
	// AfterReplies runs once a lock attempt's script and WAIT replies are
	// in, before they are judged.
	AfterReplies func(ctx context.Context)
	// Background runs before each watchdog renewal.
	Background func(ctx context.Context)
}

// ErrNoneSynced is Redisson's "None of slaves were synced": WAIT counted
// no acknowledgement while replicas were connected.
var ErrNoneSynced = errors.New("none of the replicas were synced")

// NewWaitReplicas returns the lock over c, the client of the master (give
// it a read timeout longer than WaitTimeout: WAIT blocks that long).
func NewWaitReplicas(c *redis.Client) (*WaitReplicas, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("wait-replicas: client id: %w", err)
	}
	// A UUID's worth of randomness, as Redisson's ServiceManager id, and
	// one thread.
	return &WaitReplicas{c: c, field: hex.EncodeToString(id) + ":1", replicas: -1, dogs: map[string]*watchdog{}}, nil
}

// The scripts, as Redisson's RedissonLock and RedissonBaseLock run them
// (the unlock without the 4.x unlock-latch key, which only makes a retried
// unlock idempotent; nothing here retries).
var (
	waitLockScript = redis.NewScript(`
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`)
	waitRenewScript = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0`)
	waitUnlockScript = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`)
)

func (w *WaitReplicas) waitTimeout() time.Duration {
	if w.WaitTimeout > 0 {
		return w.WaitTimeout
	}
	return time.Second
}

// connected is the number of replicas to wait for: cached, or the
// master's connected_slaves.
func (w *WaitReplicas) connected(ctx context.Context) (int, error) {
	w.mu.Lock()
	n := w.replicas
	w.mu.Unlock()
	if n >= 0 {
		return n, nil
	}
	info, err := w.c.Info(ctx, "replication").Result()
	if err != nil && connLost(err) && ctx.Err() == nil {
		// Once more on a fresh connection, as Redisson (retryAttempts 3)
		// does: after a failover Sentinel kills the new master's client
		// connections, and the pool hands out one of them first. INFO
		// changes nothing, so asking again is harmless; the lock script
		// itself is never retried.
		info, err = w.c.Info(ctx, "replication").Result()
	}
	if err != nil {
		return 0, fmt.Errorf("wait-replicas: INFO replication: %w", err)
	}
	n = 0
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			if n, err = strconv.Atoi(v); err != nil {
				return 0, fmt.Errorf("wait-replicas: connected_slaves %q: %w", v, err)
			}
		}
	}
	w.mu.Lock()
	w.replicas = n
	w.mu.Unlock()
	return n, nil
}

// synced runs script on the master followed by WAIT, as Redisson's
// syncedEval: the script's reply, or ErrNoneSynced (wrapped) when no
// replica acknowledged it. A script that ran is not undone by the error.
func (w *WaitReplicas) synced(ctx context.Context, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	replicas, err := w.connected(ctx)
	if err != nil {
		return nil, err
	}
	// EVAL with the script's text, as Redisson does without its script
	// cache: one round trip, and no NOSCRIPT after a restart.
	pipe := w.c.Pipeline()
	res := script.Eval(ctx, pipe, keys, args...)
	// Not go-redis's Wait, which pipelines do not offer; the client's read
	// timeout must outlast the WAIT (see NewWaitReplicas).
	wait := pipe.Do(ctx, "wait", replicas, w.waitTimeout().Milliseconds())
	_, _ = pipe.Exec(ctx)
	if err := res.Err(); err != nil && err != redis.Nil {
		return res, err
	}
	acked, err := wait.Int64()
	if err != nil {
		return res, fmt.Errorf("wait-replicas: WAIT: %w", err)
	}
	if int(acked) != replicas {
		// Redisson asks the master again next time.
		w.mu.Lock()
		w.replicas = -1
		w.mu.Unlock()
	}
	if !w.SkipSyncCheck && acked == 0 && replicas > 0 {
		return res, fmt.Errorf("%w: WAIT %d %d answered 0", ErrNoneSynced, replicas, w.waitTimeout().Milliseconds())
	}
	return res, nil
}

// Acquire implements Lock: one lock attempt (or Tries), the lease time
// ttl. A refusal (the key held by another field) is ErrNotAcquired; so is
// a grant no replica acknowledged, once its unlock ran (Redisson unlocks
// and throws); any other error leaves the outcome unknown.
func (w *WaitReplicas) Acquire(ctx context.Context, key string, ttl time.Duration) (*workload.Lease, error) {
	for try := 1; ; try++ {
		lease, err := w.try(ctx, key, ttl)
		if err == nil || !errors.Is(err, workload.ErrNotAcquired) || try >= w.Tries {
			return lease, err
		}
		delay := w.RetryDelay
		if delay <= 0 {
			delay = 10 * time.Millisecond
		}
		workload.Sleep(ctx, delay)
		if ctx.Err() != nil {
			return nil, err
		}
	}
}

func (w *WaitReplicas) try(ctx context.Context, key string, ttl time.Duration) (*workload.Lease, error) {
	res, err := w.synced(ctx, waitLockScript, []string{key}, ttl.Milliseconds(), w.field)
	if w.Hooks.AfterReplies != nil {
		w.Hooks.AfterReplies(ctx)
	}
	if errors.Is(err, ErrNoneSynced) {
		// handleNoSync: unlock what was granted, and fail.
		if _, uerr := w.unlock(ctx, key, ttl); uerr != nil && !errors.Is(uerr, ErrNoneSynced) && !errors.Is(uerr, workload.ErrNotHeld) {
			return nil, fmt.Errorf("wait-replicas lock %q: %w; its unlock: %w", key, err, uerr)
		}
		return nil, errors.Join(workload.ErrNotAcquired, err)
	}
	if err != nil {
		return nil, fmt.Errorf("wait-replicas lock %q: %w", key, err)
	}
	if err := res.Err(); err != redis.Nil {
		// A PTTL: held by another field.
		return nil, errors.Join(workload.ErrNotAcquired, fmt.Errorf("wait-replicas lock %q: held, %v ms left", key, res.Val()))
	}
	w.startWatchdog(key, ttl)
	return &workload.Lease{Key: key, Value: w.field, Impl: &waitLease{ttl: ttl}}, nil
}

// Release implements Lock: the unlock script (synced); the watchdog stops
// whatever the outcome, as Redisson's unlockAsync cancels the renewal.
// A field already gone is ErrNotHeld; an unlock no replica acknowledged
// ran on the master all the same, but the client is told an error, so its
// outcome is unknown.
func (w *WaitReplicas) Release(ctx context.Context, lease *workload.Lease) error {
	l, err := w.own(lease)
	if err != nil {
		return err
	}
	w.stopWatchdog(lease.Key)
	if _, err := w.unlock(ctx, lease.Key, l.ttl); err != nil {
		if errors.Is(err, workload.ErrNotHeld) {
			return err
		}
		return fmt.Errorf("wait-replicas unlock %q: %w", lease.Key, err)
	}
	return nil
}

// unlock runs the unlock script: released (counter at zero), or still
// held by the re-entrant count left, or ErrNotHeld.
func (w *WaitReplicas) unlock(ctx context.Context, key string, ttl time.Duration) (released bool, err error) {
	res, err := w.synced(ctx, waitUnlockScript, []string{key, "redisson_lock__channel:{" + key + "}"}, 0, ttl.Milliseconds(), w.field)
	if res != nil && res.Err() == redis.Nil {
		return false, errors.Join(workload.ErrNotHeld, fmt.Errorf("wait-replicas unlock %q: not locked by this client", key))
	}
	if err != nil {
		return false, err
	}
	n, _ := res.Int64()
	return n == 1, nil
}

// Extend implements Lock with one watchdog renewal, now, to lease time
// ttl, which the watchdog keeps from then on: Redisson has no extend of
// its own, its watchdog is how a lock outlives its lease time. The field
// gone is ErrNotExtended; the lease still has no deadline.
func (w *WaitReplicas) Extend(ctx context.Context, lease *workload.Lease, ttl time.Duration) (*workload.Lease, error) {
	if _, err := w.own(lease); err != nil {
		return nil, err
	}
	w.mu.Lock()
	if d := w.dogs[lease.Key]; d != nil {
		d.ttl.Store(int64(ttl))
	}
	w.mu.Unlock()
	if err := w.renew(ctx, lease.Key, ttl); err != nil {
		return nil, err
	}
	return &workload.Lease{Key: lease.Key, Value: lease.Value, Impl: &waitLease{ttl: ttl}}, nil
}

func (w *WaitReplicas) renew(ctx context.Context, key string, ttl time.Duration) error {
	res, err := w.synced(ctx, waitRenewScript, []string{key}, ttl.Milliseconds(), w.field)
	if err != nil {
		return fmt.Errorf("wait-replicas renew %q: %w", key, err)
	}
	if n, _ := res.Int64(); n != 1 {
		return errors.Join(workload.ErrNotExtended, fmt.Errorf("wait-replicas renew %q: not locked by this client", key))
	}
	return nil
}

type waitLease struct{ ttl time.Duration }

func (w *WaitReplicas) own(lease *workload.Lease) (*waitLease, error) {
	l, ok := lease.Impl.(*waitLease)
	if !ok || lease.Value != w.field {
		return nil, errors.New("wait-replicas adapter: lease was not acquired through this adapter")
	}
	return l, nil
}

// watchdog renews one key every ttl/3 until stopped, the field is found
// gone, or the client is closed.
type watchdog struct {
	stop chan struct{}
	done chan struct{}
	// ttl is the lease time each renewal sets (Extend changes it).
	ttl atomic.Int64
}

func (w *WaitReplicas) startWatchdog(key string, ttl time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dogs[key] != nil {
		return // re-entered: the running watchdog serves both
	}
	d := &watchdog{stop: make(chan struct{}), done: make(chan struct{})}
	d.ttl.Store(int64(ttl))
	w.dogs[key] = d
	go w.watch(key, d)
}

func (w *WaitReplicas) stopWatchdog(key string) {
	w.mu.Lock()
	d := w.dogs[key]
	delete(w.dogs, key)
	w.mu.Unlock()
	if d != nil {
		close(d.stop)
	}
}

func (w *WaitReplicas) watch(key string, d *watchdog) {
	defer close(d.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// A stopped watchdog does not wait out a pause or a WAIT.
		select {
		case <-d.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	logf := w.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	timer := time.NewTimer(time.Duration(d.ttl.Load()) / 3)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if w.Hooks.Background != nil {
			w.Hooks.Background(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		ttl := time.Duration(d.ttl.Load())
		err := w.renew(ctx, key, ttl)
		switch {
		case err == nil:
		case errors.Is(err, workload.ErrNotExtended):
			// The field is gone: Redisson cancels the renewal.
			w.mu.Lock()
			if w.dogs[key] == d {
				delete(w.dogs, key)
			}
			w.mu.Unlock()
			logf("watchdog of %q stops: %v", key, err)
			return
		case errors.Is(err, redis.ErrClosed) || ctx.Err() != nil:
			return
		default:
			// Redisson logs "Can't update lock expiration" and reschedules.
			logf("watchdog of %q: %v", key, err)
		}
		timer.Reset(ttl / 3)
	}
}

// connLost reports whether err is a connection the server or the network
// closed under the command, rather than the server's answer.
func connLost(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &ne) && !ne.Timeout()
}

// waitReplicasTimeout is the WAIT timeout of the wait-replicas lock:
// Redisson's default slavesSyncTimeout.
const waitReplicasTimeout = time.Second

// buildWaitReplicas is Redisson's scheme over the client's connection to
// n1 (which the failover stories retarget at a promoted replica) with the
// client's gate at its after-replies (the script's and WAIT's replies in,
// not judged yet), after-acquire and before-release, and its watchdog held
// while the client is stopped.
func buildWaitReplicas(ctx context.Context, _ *locks.Kind, env Env) (workload.Lock, error) {
	// WAIT blocks up to its timeout; a read must outlast it.
	conns, _, err := redisConns(ctx, env, waitReplicasTimeout+time.Second)
	if err != nil {
		return nil, err
	}
	w, err := NewWaitReplicas(conns[0])
	if err != nil {
		return nil, err
	}
	g := env.Gate
	w.WaitTimeout = waitReplicasTimeout
	w.Tries = env.Retries
	w.Hooks = WaitReplicasHooks{
		AfterReplies: func(ctx context.Context) { g.At(ctx, fault.AfterReplies) },
		Background:   func(ctx context.Context) { g.At(ctx, fault.Background) },
	}
	w.Logf = func(format string, args ...any) { env.Logf("%s: "+format, append([]any{env.Client}, args...)...) }
	return gatedLock{Lock: w, gate: g}, nil
}
