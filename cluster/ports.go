package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ErrNoFreePort means the loopback interface had no port left for a node.
var ErrNoFreePort = errors.New("no free loopback port")

// portRangeFile is the kernel's ephemeral port range, from which every
// connection's local port (and every listener on port 0) is drawn.
const portRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// A node's port is reserved some time before its server binds it: the
// harness writes it into configs, routes and proxies first. A port of the
// kernel's ephemeral range can be taken in that while by any connection
// opened on the machine, as its local port — with many plays side by
// side, each opening hundreds of connections, that happened (a sentinel
// exited at start: port taken). Ports below the ephemeral range are never
// handed out by the kernel; only a process binding one by number can take
// it. So nodes' ports come from there: from 10000 (the ports below are
// left to the services people run) up to the range.
const lowestNodePort = 10000

// portPool hands out node ports from [lo, hi], round robin from a random
// start: a port freed by a play that just ended is not handed out again
// at once, and two processes (test binaries side by side) rarely probe
// the same port at the same moment.
type portPool struct {
	lo, hi int    // empty (lo > hi): no room below the ephemeral range
	eph    string // the ephemeral range, for messages

	mu   sync.Mutex
	next int
}

var (
	nodePortsOnce sync.Once
	nodePorts     *portPool
)

// FreePort returns a loopback port that was free just now, for a node of
// the local backend: below the ephemeral range, see lowestNodePort.
func FreePort() (int, error) {
	nodePortsOnce.Do(func() {
		lo, _, desc := ephemeralRange()
		nodePorts = newPortPool(lowestNodePort, lo-1, desc)
	})
	return nodePorts.take(listenLoopback)
}

func newPortPool(lo, hi int, eph string) *portPool {
	p := &portPool{lo: lo, hi: hi, eph: eph}
	if hi >= lo {
		p.next = lo + rand.IntN(hi-lo+1)
	}
	return p
}

// listenLoopback binds port on loopback (0: any ephemeral port) and
// returns the port bound.
func listenLoopback(port int) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// take returns the next port of the pool that listen can bind; with an
// empty pool, an ephemeral port (listen(0)).
func (p *portPool) take(listen func(int) (int, error)) (int, error) {
	if p.hi < p.lo {
		port, err := listen(0)
		if errors.Is(err, syscall.EADDRINUSE) {
			// bind(port 0) fails so only when every port of the range
			// is taken: say which range, and what would help.
			return 0, fmt.Errorf("%w: every port of the ephemeral range %s is in use "+
				"(too many open connections on this machine); close some, or widen it with "+
				"sysctl net.ipv4.ip_local_port_range: %w", ErrNoFreePort, p.eph, err)
		}
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrNoFreePort, err)
		}
		return port, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var last error
	for range p.hi - p.lo + 1 {
		port := p.next
		if p.next++; p.next > p.hi {
			p.next = p.lo
		}
		if _, err := listen(port); err == nil {
			return port, nil
		} else if !errors.Is(err, syscall.EADDRINUSE) {
			return 0, fmt.Errorf("%w: port %d: %w", ErrNoFreePort, port, err)
		} else {
			last = err
		}
	}
	return 0, fmt.Errorf("%w: every port from %d to %d is in use (nodes take theirs below the kernel's "+
		"ephemeral range %s, which connections never take); close some, or raise the start of the "+
		"range with sysctl net.ipv4.ip_local_port_range: %w", ErrNoFreePort, p.lo, p.hi, p.eph, last)
}

// NoLocalPort explains a failed connection (err) as the ephemeral range
// running out when it did: the dial had no local port (EADDRNOTAVAIL), or
// a listen on port 0 fails now. The second covers a connection through a
// proxy whose own dial onwards found no port: the client sees only a
// closed connection. Other errors, and nil, come back as they are.
func NoLocalPort(err error) error { return noLocalPort(err, listenLoopback) }

func noLocalPort(err error, listen func(int) (int, error)) error {
	if err == nil {
		return nil
	}
	if !errors.Is(err, syscall.EADDRNOTAVAIL) {
		if _, lerr := listen(0); !errors.Is(lerr, syscall.EADDRINUSE) {
			return err
		}
	}
	_, _, desc := ephemeralRange()
	return fmt.Errorf("%w: no local port for a connection: every port of the ephemeral range %s is in use "+
		"(too many open connections and proxies on this machine); close some, or widen it with "+
		"sysctl net.ipv4.ip_local_port_range: %w", ErrNoFreePort, desc, err)
}

// ephemeralRange reads the kernel's ephemeral port range; when it cannot,
// it assumes Linux's default.
func ephemeralRange() (lo, hi int, desc string) {
	b, err := os.ReadFile(portRangeFile)
	if err != nil {
		return 32768, 60999, "(unknown)"
	}
	return parsePortRange(string(b))
}

// parsePortRange reads ip_local_port_range's "lo\thi"; anything else is
// taken for Linux's default, 32768-60999, and described as it reads.
func parsePortRange(s string) (lo, hi int, desc string) {
	f := strings.Fields(s)
	if len(f) == 2 {
		l, err1 := strconv.Atoi(f[0])
		h, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil && 0 < l && l <= h && h <= 65535 {
			return l, h, fmt.Sprintf("%d-%d", l, h)
		}
	}
	return 32768, 60999, strconv.Quote(strings.TrimSpace(s))
}
