package nemesis

import (
	"fmt"
	"net"
	"time"

	"splitbrain/internal/relay"
)

// A proxy accepts a connection before it dials the node, so a node that is
// not listening yet shows its dialer a connection that opens and then
// closes at once, where without the proxy the dialer would have been
// refused. The difference matters to a peer that retries a refused connect
// and gives up on a closed one: a ZooKeeper follower connects to the
// leader it has just elected, often a few milliseconds before the leader
// has bound its quorum port; refused, it would try again (the learner
// retries its connect for initLimit ticks), but a connection closed under
// its handshake ends its attempt to follow, and the leader then waits out
// its whole initLimit for a quorum that cannot come. Through the proxies
// an ensemble that had just healed stayed without a leader that long.
//
// A patient relay sits between a link's proxy and its node and dials the
// node again while the node refuses, for up to its patience: the dialer
// waits on an open connection as it would have waited between its own
// retries, and its bytes pass once the node listens. Faults stay the
// proxy's business; the relay forwards byte for byte and closes both sides
// when either ends.
type patientRelay = relay.Relay

// patientRetry is how often a refused dial is tried again.
const patientRetry = 10 * time.Millisecond

// newPatientRelay listens on a free loopback port and forwards every
// connection to target, dialling it again while it refuses, for up to
// patience.
func newPatientRelay(target string, patience time.Duration) (*patientRelay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("net: relay to %s: %w", target, err)
	}
	return relay.New(ln, target, relay.Options{Dial: relay.Patient(patience, patientRetry)}), nil
}
