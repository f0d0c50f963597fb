package nemesis

import (
	"context"

	"splitbrain/fault"
	"splitbrain/history"
)

// Cut drops every byte on a set of links, in one direction or both, like an
// iptables DROP: connections stay open and hang, new connections are
// accepted by the proxy but nothing gets through. Healing closes the
// connections that were cut (toxiproxy does so when the toxic goes), so
// clients reconnect afresh rather than read a stream with a hole in it.
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
	return c.Net.poison(ctx, "cut", c.Links, c.Direction, "timeout", `{"timeout":0}`, nil)
}
