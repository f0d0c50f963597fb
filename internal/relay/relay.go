// Package relay is the harness's TCP relay: it accepts connections on a
// listener and forwards each, byte for byte, to a target address that can
// be changed while it runs. The Docker backend carries a replica's link to
// a proxy on the host through one, the nemesis sits one between a peer
// link's proxy and its node; the two differ only in whom they serve and how
// they dial, which Options says.
//
// Faults stay the proxies' business: a relay neither drops nor delays, and
// when either side of a forwarded connection ends it closes both, as the
// peer would see without it (the links relayed have no use for half-closed
// connections).
package relay

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// Options are how a relay differs from a plain one.
type Options struct {
	// Accept says whether to serve a connection just accepted; the relay
	// closes those it refuses. Nil serves every one.
	Accept func(net.Conn) bool
	// Dial connects to the target for a connection accepted. Its context
	// ends when the relay closes, so that Close need not wait out a dial.
	// Nil dials once, as net.Dial would.
	Dial func(ctx context.Context, target string) (net.Conn, error)
}

// Patient dials target again every retry while it refuses, until patience
// is spent or ctx ends: put before a node that may not listen yet, a relay
// with it keeps its dialer waiting on an open connection, as the dialer
// would have waited between its own retries, where a plain dial would
// close the connection under it (see the nemesis's patient relay).
func Patient(patience, retry time.Duration) func(ctx context.Context, target string) (net.Conn, error) {
	return func(ctx context.Context, target string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		var d net.Dialer
		for {
			up, err := d.DialContext(ctx, "tcp", target)
			if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
				return up, err
			}
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(retry):
			}
		}
	}
}

// Relay forwards the connections its listener accepts to its target.
type Relay struct {
	ln   net.Listener
	opts Options
	// done is closed by Close; each dial's context ends with it.
	done chan struct{}

	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// New serves ln, forwarding to target, until Close; the relay owns ln from
// then on and closes it.
func New(ln net.Listener, target string, opts Options) *Relay {
	if opts.Accept == nil {
		opts.Accept = func(net.Conn) bool { return true }
	}
	if opts.Dial == nil {
		opts.Dial = func(ctx context.Context, target string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", target)
		}
	}
	r := &Relay{ln: ln, opts: opts, done: make(chan struct{}), target: target, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.serve)
	return r
}

// Addr is where the relay listens.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Target is where the relay forwards to.
func (r *Relay) Target() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.target
}

// Retarget forwards new connections to target and closes the open ones,
// which belonged to the old target.
func (r *Relay) Retarget(target string) {
	r.mu.Lock()
	r.target = target
	open := r.conns
	r.conns = map[net.Conn]struct{}{}
	r.mu.Unlock()
	for c := range open {
		_ = c.Close()
	}
}

func (r *Relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		if !r.opts.Accept(c) {
			_ = c.Close()
			continue
		}
		r.wg.Go(func() { r.forward(c) })
	}
}

// dialContext is a context for one dial that ends when the relay closes:
// the relay keeps a channel rather than a context, and a dial needs one.
func (r *Relay) dialContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-r.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (r *Relay) forward(down net.Conn) {
	target := r.Target()
	ctx, cancel := r.dialContext()
	up, err := r.opts.Dial(ctx, target)
	cancel()
	if err != nil {
		_ = down.Close()
		return
	}
	if !r.track(target, down, up) {
		_ = down.Close()
		_ = up.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, down)
	go pipe(down, up)
	// Either side ending ends the link: the links relayed have no use for
	// half-closed connections.
	<-done
	_ = down.Close()
	_ = up.Close()
	<-done
	r.untrack(down, up)
}

// track registers a forwarded connection's two ends, unless the relay was
// closed or retargeted while it dialed: Close and Retarget would miss a
// connection registered after they took the open ones.
func (r *Relay) track(target string, cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.target != target {
		return false
	}
	for _, c := range cs {
		r.conns[c] = struct{}{}
	}
	return true
}

func (r *Relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.conns, c)
	}
}

// Close stops listening, ends the dials under way, closes every open
// connection and waits for the relay's goroutines.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	open := r.conns
	r.conns = nil
	r.mu.Unlock()
	close(r.done)
	err := r.ln.Close()
	for c := range open {
		_ = c.Close()
	}
	r.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
