package scenarios

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/nemesis"
	"splitbrain/workload"
)

// Client pauses stop a client at its gate at the lock's hook points. Our
// lock calls the gate from its own hooks (see hooks); a third-party lock
// has none, so for redsync (and redislock) the harness places the same
// three points around its calls, without changing the library:
//
//   - after-replies: a go-redis hook on each of the client's node
//     connections stops the client once a SET NX reply has arrived, while
//     redsync still waits for the other nodes and has not computed its
//     validity yet — the pause counts into its elapsed time, as in ours;
//   - after-acquire: after redsync returned a lease, before the client
//     records it and enters its critical section;
//   - before-release: before redsync is asked to release.

// gatedRedsync is redsync over conns with client's gate at the three
// points.
func (r *runner) gatedRedsync(client string, conns []*redis.Client) workload.Lock {
	g := r.faults.gates[client]
	for _, c := range conns {
		c.AddHook(replyHook{gate: g, is: isSetNX})
	}
	rs := workload.NewRedsync(conns, r.sc.Lock.NodeTimeout)
	rs.Tries = r.sc.Lock.Retries
	return gatedLock{Lock: rs, gate: g}
}

// gatedRedislock is bsm/redislock over conn (n1's) with client's gate at
// the same three points; after-replies is after the obtain script's reply
// (its only command during an acquire), before redislock hands back the
// lock.
func (r *runner) gatedRedislock(client string, conn *redis.Client) workload.Lock {
	g := r.faults.gates[client]
	conn.AddHook(replyHook{gate: g, is: isScriptRun})
	rl := workload.NewRedislock(conn)
	rl.Tries = r.sc.Lock.Retries
	return gatedLock{Lock: rl, gate: g}
}

// rueidisTryNextAfter bounds each key's acquire script of rueidislock:
// its default, 20ms, is shorter than a loaded 2-core machine's hiccups,
// and an attempt that outlasts it is refused, which a story would read as
// the lock refusing a free key.
const rueidisTryNextAfter = 500 * time.Millisecond

// newRueidislock is rueidislock through client's proxy to ep (n1), or
// under Sentinel to the master the sentinels name, with client's gate at
// after-acquire and before-release; it has no after-replies (rueidis runs its scripts, no go-redis hook sees them:
// Fit keeps the stories that pause there away from it). The locker is
// closed with the run.
func (r *runner) newRueidislock(client string, ep nemesis.Endpoint, password string) (workload.Lock, error) {
	addr, err := r.net.Addr(client, ep.Name)
	if err != nil {
		return nil, err
	}
	g := r.faults.gates[client]
	// rueidislock extends its keys from goroutines of its own, which a
	// pause at the client's gate would not stop: its connections pass the
	// gate on every read and write instead (as ZooKeeper's do), so that a
	// paused client sends and reads nothing, as a stopped process.
	o := workload.RueidislockOptions{Addr: addr, Password: password, Validity: r.sc.Lock.TTL, TryNextAfter: rueidisTryNextAfter,
		Wrap: func(c net.Conn) net.Conn { return gatedConn{Conn: c, gate: g} }}
	if rig := r.sentinel; rig != nil {
		// rueidis' own Sentinel client: it asks the sentinels for the
		// master and follows their +switch-master, each address it dials
		// (a sentinel's, a master's as announced) through the client's
		// own proxy to that server, as the go-redis failover client's.
		o.Addr = ""
		o.MasterSet = cluster.SentinelMaster
		for _, s := range rig.sentinels {
			o.Sentinels = append(o.Sentinels, s.Addr())
		}
		o.Route = func(addr string) (string, error) {
			name, ok := rig.byAddr[addr]
			if !ok {
				return "", fmt.Errorf("client %s: %s is none of this run's servers", client, addr)
			}
			return r.net.Addr(client, name)
		}
	}
	// rueidis dials when the client is made.
	var l *workload.Rueidislock
	if err := untilConnected(func(context.Context) error {
		var err error
		l, err = workload.NewRueidislock(o)
		return err
	}); err != nil {
		return nil, fmt.Errorf("client %s: %w", client, err)
	}
	r.closers = append(r.closers, l.Close)
	if r.sentinel != nil {
		r.sentinel.pingers = append(r.sentinel.pingers, l.Ping)
	}
	return gatedLock{Lock: l, gate: g}, nil
}

// waitReplicasTimeout is the WAIT timeout of the wait-replicas lock:
// Redisson's default slavesSyncTimeout.
const waitReplicasTimeout = time.Second

// gatedWaitReplicas is Redisson's scheme over conn (n1's, which the
// failover stories retarget at a promoted replica) with client's gate at
// its after-replies (the script's and WAIT's replies in, not judged yet),
// after-acquire and before-release, and its watchdog held while the
// client is stopped.
func (r *runner) gatedWaitReplicas(client string, conn *redis.Client) (workload.Lock, error) {
	g := r.faults.gates[client]
	w, err := workload.NewWaitReplicas(conn)
	if err != nil {
		return nil, err
	}
	w.WaitTimeout = waitReplicasTimeout
	w.Tries = r.sc.Lock.Retries
	w.Hooks = workload.WaitReplicasHooks{
		AfterReplies: func(ctx context.Context) { g.At(ctx, fault.AfterReplies) },
		Background:   func(ctx context.Context) { g.At(ctx, fault.Background) },
	}
	w.Logf = func(format string, args ...any) { r.logf("%s: "+format, append([]any{client}, args...)...) }
	return gatedLock{Lock: w, gate: g}, nil
}

// gatedLock calls its gate after a granted acquire and before a release.
type gatedLock struct {
	workload.Lock
	gate *nemesis.ClientGate
}

// callerKey carries the context of the caller of Acquire down to the
// go-redis hook: the lock wraps each node's request in a context that
// ends at its per-node timeout, which must not end a pause; the caller's
// ends with the run.
type callerKey struct{}

func (g gatedLock) Acquire(ctx context.Context, key string, ttl time.Duration) (*workload.Lease, error) {
	lease, err := g.Lock.Acquire(context.WithValue(ctx, callerKey{}, ctx), key, ttl)
	if err == nil {
		g.gate.At(ctx, fault.AfterAcquire)
	}
	return lease, err
}

func (g gatedLock) Release(ctx context.Context, lease *workload.Lease) error {
	g.gate.At(ctx, fault.BeforeRelease)
	return g.Lock.Release(ctx, lease)
}

// replyHook stops the client at after-replies once a lock attempt's
// command (is) has its reply (or its error).
type replyHook struct {
	gate *nemesis.ClientGate
	is   func(cmd redis.Cmder, err error) bool
}

func (replyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (replyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h replyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if caller, ok := ctx.Value(callerKey{}).(context.Context); ok && h.is(cmd, err) {
			h.gate.At(caller, fault.AfterReplies)
		}
		return err
	}
}

func isSetNX(cmd redis.Cmder, _ error) bool {
	args := cmd.Args()
	if cmd.Name() != "set" || len(args) == 0 {
		return false
	}
	last, ok := args[len(args)-1].(string)
	return ok && strings.EqualFold(last, "nx")
}

// isScriptRun is a script's run that reached the script: EVALSHA's
// NOSCRIPT reply is followed by the EVAL that runs it, where the client
// stops.
func isScriptRun(cmd redis.Cmder, err error) bool {
	switch cmd.Name() {
	case "evalsha", "eval":
		return err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT")
	}
	return false
}
