package docker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
)

// relay carries a replica's replication link from the run's network to an
// address on the host that the replica cannot reach itself: the harness's
// proxies listen on loopback, and a container's loopback is its own. The
// relay listens on the bridge's gateway address, where the containers of
// the run reach the host, and on no other; it serves only the one
// container it was made for and forwards each connection, byte for byte,
// to the target. Faults stay the proxy's business: when the proxy drops
// bytes they vanish, when it resets the connection the relay closes both
// sides, as the replica would see without it.
type relay struct {
	ln   net.Listener
	from netip.Addr // the only peer served

	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// newRelay listens on a free port of gateway and forwards the connections
// of peer to target.
func newRelay(gateway, peer netip.Addr, target string) (*relay, error) {
	ln, err := net.Listen("tcp", netip.AddrPortFrom(gateway, 0).String())
	if err != nil {
		return nil, fmt.Errorf("docker: relay on the network's gateway %s: %w", gateway, err)
	}
	r := &relay{ln: ln, from: peer, target: target, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.serve)
	return r, nil
}

// Addr is where the relay listens: the gateway's address and its port.
func (r *relay) Addr() string { return r.ln.Addr().String() }

// Target is where the relay forwards to.
func (r *relay) Target() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.target
}

// Retarget forwards new connections to target and closes the open ones,
// which belonged to the old target.
func (r *relay) Retarget(target string) {
	r.mu.Lock()
	r.target = target
	open := r.conns
	r.conns = map[net.Conn]struct{}{}
	r.mu.Unlock()
	for c := range open {
		_ = c.Close()
	}
}

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		peer, _ := netip.ParseAddrPort(c.RemoteAddr().String())
		if peer.Addr().Unmap() != r.from {
			// Anyone else on this host could dial the gateway too; the
			// relay is the replica's alone.
			_ = c.Close()
			continue
		}
		r.wg.Go(func() { r.forward(c) })
	}
}

func (r *relay) forward(down net.Conn) {
	r.mu.Lock()
	target := r.target
	r.mu.Unlock()
	up, err := net.Dial("tcp", target)
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
	// Either side ending ends the link: a replication stream has no use
	// for half-closed connections.
	<-done
	_ = down.Close()
	_ = up.Close()
	<-done
	r.untrack(down, up)
}

// track registers a forwarded connection's two ends, unless the relay was
// closed or retargeted while it dialed.
func (r *relay) track(target string, cs ...net.Conn) bool {
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

func (r *relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.conns, c)
	}
}

// Close stops listening, closes every open connection and waits for the
// relay's goroutines.
func (r *relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	open := r.conns
	r.conns = nil
	r.mu.Unlock()
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
