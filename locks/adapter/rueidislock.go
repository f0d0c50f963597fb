package adapter

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"splitbrain/locks"
	"splitbrain/workload"
)

// Rueidislock adapts rueidislock (inside redis/rueidis v1.0.x) to Lock: one
// Redis deployment, 2·KeyMajority−1 keys per lock name on it (3 by
// default), each taken with SET NX PXAT <client now + validity>, held once
// a majority is. No fencing tokens.
//
// Its belief. TryWithContext hands its user a context and a cancel
// function and nothing about time: the promise is "you hold the lock until
// this context is cancelled"; a goroutine per key extends the key every
// validity/2 and cancels the context when a majority of keys are gone (an
// extension refused, an invalidation saying a key changed, a broken
// connection). So the lease has no Deadline — the belief lasts until the
// client releases — and a Lost channel, the context's Done: the workload
// client releases the moment it is closed (Client.watch), as a user who
// stops when told. The belief interval is therefore the context's life, up
// to the instant the client acted on its cancellation. Whatever the
// context does not know (keys expired under a partition, before the next
// extension fails) is the lock's gap, which the harness shows.
type Rueidislock struct {
	locker   rueidislock.Locker
	validity time.Duration
}

// RueidislockOptions are the harness's settings of rueidislock.
type RueidislockOptions struct {
	// Addr is n1's address as the client dials it (its proxy).
	Addr     string
	Password string
	// Validity is rueidislock's KeyValidity: the lock's TTL, fixed for
	// the locker (the library takes no TTL per acquire).
	Validity time.Duration
	// TryNextAfter bounds each key's acquire script; zero means
	// rueidislock's default, 20ms.
	TryNextAfter time.Duration
	// Wrap, when set, wraps each connection the client dials: the harness
	// passes its connections through the client's pause gate, so that a
	// paused client's background extensions stop too, as a stopped
	// process's would.
	Wrap func(net.Conn) net.Conn
	// Sentinels, when set instead of Addr, are the sentinels' addresses
	// and MasterSet the name they watch the master by: rueidis' own
	// Sentinel client asks them for the master and follows their
	// +switch-master. Password is the sentinels' too.
	Sentinels []string
	MasterSet string
	// Route, when set, maps the address rueidis dials (a sentinel's, or a
	// master's as the sentinels announce it) to the one to dial instead:
	// the harness's proxy for that client and server.
	Route func(addr string) (string, error)
}

// NewRueidislock returns rueidislock over a new rueidis client of the one
// deployment at o.Addr. Client-side caching stays on: rueidislock
// subscribes to invalidations of its keys (the GET after each script) and
// re-checks a key at once when it changes or the connection closes;
// without caching it would notice a lost key only at its next extension.
// Single-node mode is forced (no CLUSTER probing of a standalone node) and
// rueidis' retries are off, as the other adapters' clients retry nothing:
// a retried acquire script would find its own value and report the key as
// held by others.
//
// With Sentinels, the client is rueidis' Sentinel client instead: the
// lock's connection is to whichever node the sentinels call master, and
// a +switch-master moves it (closing the old one, which rueidislock hears
// as every key invalidated).
func NewRueidislock(o RueidislockOptions) (*Rueidislock, error) {
	if o.Addr == "" && len(o.Sentinels) == 0 {
		return nil, errors.New("rueidislock: no address and no sentinels")
	}
	if len(o.Sentinels) > 0 && o.MasterSet == "" {
		return nil, errors.New("rueidislock: sentinels without the master's name (MasterSet)")
	}
	if o.Validity <= 0 {
		return nil, fmt.Errorf("rueidislock: validity %v is not positive", o.Validity)
	}
	co := rueidis.ClientOption{
		InitAddress:       []string{o.Addr},
		Password:          o.Password,
		ForceSingleClient: true,
		DisableRetry:      true,
		DialCtxFn:         dialWrapped(o.Route, o.Wrap),
		// rueidis's 0.5 MiB each way per connection are for bulk traffic;
		// a lock's commands are a few hundred bytes, and the buffers are
		// zeroed at every dial. Their size changes nothing in the lock.
		ReadBufferEachConn:  16 << 10,
		WriteBufferEachConn: 16 << 10,
	}
	where := o.Addr
	if len(o.Sentinels) > 0 {
		co.InitAddress = o.Sentinels
		co.ForceSingleClient = false
		co.Sentinel = rueidis.SentinelOption{MasterSet: o.MasterSet, Password: o.Password}
		where = fmt.Sprintf("master %q of sentinels %v", o.MasterSet, o.Sentinels)
	}
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: co,
		KeyValidity:  o.Validity,
		TryNextAfter: o.TryNextAfter,
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: connecting to %s: %w", where, err)
	}
	return &Rueidislock{locker: l, validity: o.Validity}, nil
}

// Ping asks the server the lock's client talks to now (under Sentinel,
// the master it follows) for a PONG.
func (r *Rueidislock) Ping(ctx context.Context) error {
	c := r.locker.Client()
	return c.Do(ctx, c.B().Ping().Build()).Error()
}

// dialWrapped dials as rueidis does by default (TCP, no TLS here), at the
// address route gives, and wraps the connection; nil when there is
// nothing to route or wrap.
func dialWrapped(route func(string) (string, error), wrap func(net.Conn) net.Conn) func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
	if route == nil && wrap == nil {
		return nil
	}
	return func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
		if route != nil {
			via, err := route(addr)
			if err != nil {
				return nil, err
			}
			addr = via
		}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		if wrap != nil {
			c = wrap(c)
		}
		return c, nil
	}
}

// Close closes the locker and its rueidis client: every lock it holds
// ends (its context is cancelled).
func (r *Rueidislock) Close() { r.locker.Close() }

// rueidisLease is the adapter's own lease: the context rueidislock handed
// out and the function that releases it.
type rueidisLease struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Acquire implements Lock with TryWithContext: one attempt. ttl must be
// the locker's validity: rueidislock sets it once, and a different ttl
// would be a promise the harness cannot keep. The lock's context is made
// from a context without ctx's cancellation, so that the lease outlives
// the call. ErrNotLocked (a majority of keys held by others) and a
// deadline (a key's script outlasted TryNextAfter) are ErrNotAcquired:
// on any failure rueidislock has cancelled the attempt and deleted the
// keys it set before returning, so the client holds nothing. Any other
// error (a refused or broken connection) is left unknown.
func (r *Rueidislock) Acquire(ctx context.Context, key string, ttl time.Duration) (*workload.Lease, error) {
	if ttl != r.validity {
		return nil, fmt.Errorf("rueidislock: ttl %v differs from the locker's validity %v (rueidislock takes no TTL per acquire)", ttl, r.validity)
	}
	lctx, cancel, err := r.locker.TryWithContext(context.WithoutCancel(ctx), key)
	if err != nil {
		if errors.Is(err, rueidislock.ErrNotLocked) || errors.Is(err, context.DeadlineExceeded) {
			return nil, errors.Join(workload.ErrNotAcquired, err)
		}
		return nil, fmt.Errorf("rueidislock acquire %q: %w", key, err)
	}
	// rueidislock keeps its value to itself; the history names the lease
	// by a token of ours.
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &workload.Lease{Key: key, Value: hex.EncodeToString(b[:]), Lost: lctx.Done(), Impl: &rueidisLease{ctx: lctx, cancel: cancel}}, nil
}

// Release implements Lock: the cancel function, which deletes the keys
// still holding the lock's value and waits for its goroutines. It reports
// nothing; a lease whose context was cancelled before (the lock was lost)
// is ErrNotHeld.
func (r *Rueidislock) Release(ctx context.Context, lease *workload.Lease) error {
	l, err := r.own(lease)
	if err != nil {
		return err
	}
	lostBefore := l.ctx.Err()
	l.cancel()
	if lostBefore != nil {
		return errors.Join(workload.ErrNotHeld, fmt.Errorf("rueidislock %q: the lock's context had ended: %w", lease.Key, context.Cause(l.ctx)))
	}
	return nil
}

// Extend implements Lock. rueidislock extends in the background, so there
// is nothing to ask: Extend returns the same lease (still no deadline)
// while its context lives, ErrNotExtended once it has ended.
func (r *Rueidislock) Extend(ctx context.Context, lease *workload.Lease, ttl time.Duration) (*workload.Lease, error) {
	l, err := r.own(lease)
	if err != nil {
		return nil, err
	}
	if err := l.ctx.Err(); err != nil {
		return nil, errors.Join(workload.ErrNotExtended, fmt.Errorf("rueidislock %q: the lock's context has ended: %w", lease.Key, err))
	}
	return lease, nil
}

func (r *Rueidislock) own(lease *workload.Lease) (*rueidisLease, error) {
	l, ok := lease.Impl.(*rueidisLease)
	if !ok {
		return nil, errors.New("rueidislock adapter: lease was not acquired through this adapter")
	}
	return l, nil
}

// RueidisTryNextAfter bounds each key's acquire script of rueidislock:
// its default, 20ms, is shorter than a loaded 2-core machine's hiccups,
// and an attempt that outlasts it is refused, which a story would read as
// the lock refusing a free key.
const RueidisTryNextAfter = 500 * time.Millisecond

// buildRueidislock is rueidislock through the client's proxy to n1, or
// under Sentinel to the master the sentinels name, with the client's gate
// at after-acquire and before-release; it has no after-replies (rueidis
// runs its scripts, no go-redis hook sees them: the kind's Unhooked keeps
// the stories that pause there away from it). The locker is closed with
// the run.
func buildRueidislock(_ context.Context, _ *locks.Kind, env Env) (workload.Lock, error) {
	g := env.Gate
	// rueidislock extends its keys from goroutines of its own, which a
	// pause at the client's gate would not stop: its connections pass the
	// gate on every read and write instead (as ZooKeeper's do), so that a
	// paused client sends and reads nothing, as a stopped process.
	o := RueidislockOptions{Addr: env.Nodes[0].Addr, Password: env.Password, Validity: env.TTL, TryNextAfter: RueidisTryNextAfter,
		Wrap: func(c net.Conn) net.Conn { return gatedConn{Conn: c, gate: g} }}
	if s := env.Sentinel; s != nil {
		// rueidis' own Sentinel client: it asks the sentinels for the
		// master and follows their +switch-master, each address it dials
		// (a sentinel's, a master's as announced) through the client's
		// own proxy to that server, as the go-redis failover client's.
		o.Addr = ""
		o.MasterSet = s.Master
		o.Sentinels = s.Addrs
		o.Route = s.Route
	}
	// rueidis dials when the client is made.
	var l *Rueidislock
	if err := UntilConnected(func(context.Context) error {
		var err error
		l, err = NewRueidislock(o)
		return err
	}); err != nil {
		return nil, fmt.Errorf("client %s: %w", env.Client, err)
	}
	env.Rig.OnClose(l.Close)
	if env.Sentinel != nil {
		env.Rig.AfterFailover(l.Ping)
	}
	return gatedLock{Lock: l, gate: g}, nil
}
