package redlock

import (
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ClientOptions returns go-redis options for one Redlock node at addr.
//
// go-redis defaults are wrong for lock traffic, so callers should start from
// these options rather than from a zero redis.Options:
//
//   - MaxRetries is -1 (no retries). go-redis retries a command after a
//     network error, but a network error does not mean the command did not
//     run: a retried SET NX can find its own first write and report the lock
//     as held by someone else, and a retried release script can run twice.
//     The Locker treats every such error as an unknown outcome instead.
//   - ContextTimeoutEnabled is true. Without it go-redis bounds socket reads
//     and writes only by ReadTimeout/WriteTimeout and ignores the context's
//     deadline once a command is in flight, so the Locker's per-node timeout
//     (Options.NodeTimeout) would not bound the time spent waiting for a
//     reply, and a slow node would eat the lock's validity.
//   - DialerRetries is 1. A dial retry inside one lock attempt only burns
//     validity; the caller retries the whole attempt instead.
//   - The pool is small: a lock client needs one connection per node per
//     concurrent attempt. Note that go-redis fails fast, without dialling,
//     once PoolSize dials in a row have failed, until a background probe
//     (once a second) reaches the node again; so a node that was down is
//     seen as down for up to about a second after it comes back.
//   - Dial, read and write timeouts are backstops for commands sent without
//     a context deadline; the Locker always sets one.
//   - CLIENT SETINFO and maintenance notifications are off: they add round
//     trips to every new connection (eating validity right after a node
//     restarts) and are of no use with independent masters.
//   - Buffers are 4 KiB: lock commands and replies are a few hundred
//     bytes, and go-redis's 32 KiB (128 KiB for pipelines) per connection
//     are zeroed at every dial, which a client under faults does often.
func ClientOptions(addr, password string) *redis.Options {
	return &redis.Options{
		Addr:                    addr,
		Password:                password,
		MaxRetries:              -1,
		ContextTimeoutEnabled:   true,
		DialTimeout:             time.Second,
		DialerRetries:           1,
		ReadTimeout:             time.Second,
		WriteTimeout:            time.Second,
		PoolSize:                4,
		PoolTimeout:             time.Second,
		DisableIdentity:         true,
		ReadBufferSize:          connBuffer,
		WriteBufferSize:         connBuffer,
		PipelineReadBufferSize:  connBuffer,
		PipelineWriteBufferSize: connBuffer,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

// connBuffer is the size of each connection's read and write buffers.
const connBuffer = 4 << 10
