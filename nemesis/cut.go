package nemesis

import (
	"context"
	"sync"

	"splitbrain/fault"
	"splitbrain/history"
)

// Cut drops every byte on a set of links, in one direction or both, like an
// iptables DROP: connections stay open and hang, new connections are
// accepted by the proxy but nothing gets through. Healing closes the
// connections that were cut (toxiproxy does so when the toxic goes), so
// clients reconnect afresh rather than read a stream with a hole in it.
//
// A proxy cannot drop a connect as a firewall does: the kernel completes
// the handshake before the proxy sees it, so through a cut link a dial
// succeeds and its first bytes vanish. A client whose handshake waits
// much longer than its connect (go-zookeeper waits ten receive timeouts,
// 13 s at a 2 s session, where its connect gives up after 1 s) would hang
// there instead of trying its next server. Net.Blackholed says which
// addresses are cut, for a dialer that waits out its connect timeout and
// fails as a connect into a partition does.
type Cut struct {
	Net   *Net
	Links []history.Link
	// Direction is which bytes are dropped; the zero value is fault.Both.
	Direction fault.Direction
}

// Available implements Limited: every link's node must take link faults.
func (c Cut) Available() error { return c.Net.available(c.Links) }

// Describe implements Fault.
func (c Cut) Describe() history.Fault {
	return history.Fault{Kind: fault.KindCut, Links: c.Links, Detail: fault.DescribeLinks(c.Links, "✂"+c.Direction.Arrow())}
}

// Inject implements Fault.
func (c Cut) Inject(ctx context.Context) (Heal, error) {
	// timeout 0: drop the data and never close the connection.
	heal, err := c.Net.poison(ctx, "cut", c.Links, c.Direction, "timeout", `{"timeout":0}`, nil)
	if err != nil {
		return nil, err
	}
	c.Net.markCut(c.Links, 1)
	var once sync.Once
	return func(ctx context.Context) error {
		err := heal(ctx)
		if err == nil {
			once.Do(func() { c.Net.markCut(c.Links, -1) })
		}
		return err
	}, nil
}
