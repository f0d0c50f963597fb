package adapter

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

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

// gatedDialer makes the ZooKeeper client's connections pass client's gate
// on every read and write: its pings run on goroutines of their own, which
// a client pause would not stop, while a real stop-the-world pause stops
// them with everything else. Held at the gate, they send nothing and read
// nothing; the kernel keeps what arrives meanwhile, as it would for a
// stopped process, and the session times out on the servers.
func gatedDialer(g *nemesis.ClientGate, blackholed func(addr string) bool) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		if blackholed != nil && blackholed(address) {
			// A connect into a partition: no answer, and a SYN sent
			// again comes after the usual connect timeout (1 s) too.
			// Through the proxy the connect would succeed and the
			// session handshake wait ten receive timeouts instead.
			time.Sleep(timeout)
			return nil, &net.OpError{Op: "dial", Net: network, Err: errConnectDropped}
		}
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return gatedConn{Conn: c, gate: g}, nil
	}
}

// errConnectDropped is a connect that a cut dropped: a timeout.
var errConnectDropped = connectDropped{}

type connectDropped struct{}

func (connectDropped) Error() string   { return "i/o timeout (the link is cut: the connect was dropped)" }
func (connectDropped) Timeout() bool   { return true }
func (connectDropped) Temporary() bool { return true }

type gatedConn struct {
	net.Conn
	gate *nemesis.ClientGate
}

func (c gatedConn) Read(b []byte) (int, error) {
	c.gate.At(context.Background(), fault.Background)
	return c.Conn.Read(b)
}

func (c gatedConn) Write(b []byte) (int, error) {
	c.gate.At(context.Background(), fault.Background)
	return c.Conn.Write(b)
}
