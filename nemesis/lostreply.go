package nemesis

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/toxics"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// LoseReply drops the next reply on each of a set of links: the request
// before it went through and took effect on the node, and its answer never
// comes back, as when a network drops a response or a connection dies
// just after the server committed. The connection it was lost on carries
// nothing more to the client (it waits out its timeout; a later reply on
// it would answer the wrong request), and the heal closes it; other and
// later connections pass. One reply per link is lost, the first after the
// injection, whenever it comes: the fault is armed until then, so that a
// scripted story loses exactly the reply of its next request. On a link
// to Redis a RESP error reply passes (it says its command did nothing:
// go-redis's EVALSHA answered NOSCRIPT before the EVAL it then sends), so
// that the reply lost is one of a command that took effect. A client
// that retries then meets its own effect: a lock it already holds, a key
// it already deleted (etcd issue 22082).
type LoseReply struct {
	Net   *Net
	Links []history.Link
}

// Available implements Limited: every link's node must take link faults.
func (l LoseReply) Available() error { return l.Net.available(l.Links) }

// Describe implements Fault.
func (l LoseReply) Describe() history.Fault {
	return history.Fault{Kind: fault.KindLostReply, Links: l.Links, Detail: "next reply lost: " + fault.DescribeLinks(l.Links, "✉✗")}
}

// Inject implements Fault.
func (l LoseReply) Inject(ctx context.Context) (Heal, error) {
	// Links to Redis (and the storage, a Redis) speak RESP, whose error
	// replies say a command did nothing — NOSCRIPT, before go-redis sends
	// a script it had tried by its hash: those pass, and the reply lost
	// is the first of a command that took effect. Other servers' first
	// reply is lost, whatever it is.
	var resp, other []history.Link
	l.Net.mu.Lock()
	for _, link := range l.Links {
		if k := l.Net.kinds[link]; k == nil || k.Name == cluster.Redis.Name || k.Name == cluster.Sentinel.Name {
			resp = append(resp, link)
		} else {
			other = append(other, link)
		}
	}
	l.Net.mu.Unlock()
	var heals []Heal
	for _, g := range []struct {
		links []history.Link
		attrs string
	}{{resp, `{"skip_errors":true}`}, {other, `{}`}} {
		if len(g.links) == 0 {
			continue
		}
		h, err := l.Net.poison(ctx, "lost-reply", g.links, fault.ToClient, lostReplyToxicType, g.attrs, nil)
		if err != nil {
			for _, h := range heals {
				_ = h(ctx)
			}
			return nil, err
		}
		heals = append(heals, h)
	}
	return func(ctx context.Context) error {
		var errs []error
		for _, h := range heals {
			errs = append(errs, h(ctx))
		}
		return errors.Join(errs...)
	}, nil
}

// lostReplyToxicType is the name of lostReplyToxic in toxiproxy's registry.
const lostReplyToxicType = "splitbrain_lost_reply"

// lostReplyToxic, on a link's downstream, drops the first chunk any of
// the link's connections sends after it was added, and everything that
// connection sends after it; its removal (the heal) closes that
// connection, as toxiproxy's timeout toxic does a cut one.
type lostReplyToxic struct {
	// SkipErrors passes RESP error replies (a first byte '-'): replies of
	// commands that did nothing.
	SkipErrors bool `json:"skip_errors"`

	fired atomic.Bool
}

type lostReplyState struct{ lost bool }

// NewState implements toxics.StatefulToxic.
func (t *lostReplyToxic) NewState() any { return &lostReplyState{} }

// Pipe implements toxics.Toxic.
func (t *lostReplyToxic) Pipe(stub *toxics.ToxicStub) {
	st, _ := stub.State.(*lostReplyState)
	if st == nil {
		st = &lostReplyState{}
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
			if st.lost {
				continue
			}
			if t.SkipErrors && len(c.Data) > 0 && c.Data[0] == '-' {
				stub.Output <- c
				continue
			}
			if t.fired.CompareAndSwap(false, true) {
				st.lost = true
				continue
			}
			stub.Output <- c
		}
	}
}

// Cleanup implements toxics.CleanupToxic: the connection that lost its
// reply is closed rather than let a later reply answer the wrong request.
func (t *lostReplyToxic) Cleanup(stub *toxics.ToxicStub) {
	if st, ok := stub.State.(*lostReplyState); ok && st.lost {
		stub.Close()
	}
}
