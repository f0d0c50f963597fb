package nemesis

import (
	"context"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/toxics"

	"splitbrain/fault"
	"splitbrain/history"
)

// Refuse turns away new connections on a set of links while connections
// already open keep working, as a node at its connection limit or behind a
// firewall that rejects new flows would: a client whose pooled connection
// is fine sees nothing, one that dials sees its connection closed at once
// (the proxy accepts it and hangs up before a byte passes). A connection
// opened at the very instant of injection may go either way. Healing
// accepts connections again.
type Refuse struct {
	Net   *Net
	Links []history.Link
}

// Available implements Limited: every link's node must take link faults.
func (r Refuse) Available() error { return r.Net.available(r.Links) }

// Describe implements Fault.
func (r Refuse) Describe() history.Fault {
	return history.Fault{Kind: fault.KindRefuse, Links: r.Links, Detail: fault.DescribeLinks(r.Links, "⊘")}
}

// Inject implements Fault.
func (r Refuse) Inject(ctx context.Context) (Heal, error) {
	// One direction suffices: closing it closes the connection.
	return r.Net.poison(ctx, "refuse", r.Links, fault.ToNode, refuseToxicType, `{}`, func(w *toxics.ToxicWrapper) {
		// Connections that existed when the toxic was added got their
		// state already, unarmed; those that come later are refused.
		if t, ok := w.Toxic.(*refuseToxic); ok {
			t.armed.Store(true)
		}
	})
}

// refuseToxicType is the name of refuseToxic in toxiproxy's registry.
const refuseToxicType = "splitbrain_refuse"

// refuseToxic closes every connection that starts after it was armed and
// passes the others through. toxiproxy makes a toxic's per-connection state
// when the toxic is added (for open connections) or when a connection
// starts (for later ones); the state remembers which case it was.
type refuseToxic struct {
	armed atomic.Bool
}

type refuseState struct{ refuse bool }

// NewState implements toxics.StatefulToxic.
func (t *refuseToxic) NewState() any { return &refuseState{refuse: t.armed.Load()} }

// Pipe implements toxics.Toxic.
func (t *refuseToxic) Pipe(stub *toxics.ToxicStub) {
	if st, ok := stub.State.(*refuseState); ok && st.refuse {
		stub.Close()
		// Drain until the client's side ends, or the reader before us
		// would block forever.
		for c := range stub.Input {
			if c == nil {
				return
			}
		}
		return
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			stub.Output <- c
		}
	}
}
