package driver

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// relay is a loopback TCP relay to one address, which counts the
// connections made through it: driver check gives it as the route to the
// master under Sentinel, and sees whether the driver took the route.
type relay struct {
	ln     net.Listener
	to     string
	n      atomic.Int64
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func newRelay(to string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, to: to}
	r.wg.Go(r.serve)
	return r, nil
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) count() int64 { return r.n.Load() }

func (r *relay) serve() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.n.Add(1)
		out, err := net.Dial("tcp", r.to)
		if err != nil {
			in.Close()
			continue
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		r.conns = append(r.conns, in, out)
		r.mu.Unlock()
		r.wg.Go(func() { _, _ = io.Copy(out, in); out.Close() })
		r.wg.Go(func() { _, _ = io.Copy(in, out); in.Close() })
	}
}

// close stops the relay and ends its connections.
func (r *relay) close() {
	r.ln.Close()
	r.mu.Lock()
	r.closed = true
	for _, c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
