package docker

import (
	"fmt"
	"net"
	"net/netip"

	tcprelay "splitbrain/internal/relay"
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
type relay = tcprelay.Relay

// newRelay listens on a free port of gateway and forwards the connections
// of peer to target.
func newRelay(gateway, peer netip.Addr, target string) (*relay, error) {
	ln, err := net.Listen("tcp", netip.AddrPortFrom(gateway, 0).String())
	if err != nil {
		return nil, fmt.Errorf("docker: relay on the network's gateway %s: %w", gateway, err)
	}
	return tcprelay.New(ln, target, tcprelay.Options{
		// Anyone else on this host could dial the gateway too; the relay is
		// the replica's alone.
		Accept: func(c net.Conn) bool {
			from, _ := netip.ParseAddrPort(c.RemoteAddr().String())
			return from.Addr().Unmap() == peer
		},
	}), nil
}
