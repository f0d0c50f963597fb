package nemesis

import (
	"context"

	"splitbrain/fault"
	"splitbrain/history"
)

// Reset tears down connections on a set of links as soon as a byte moves
// in the chosen direction, as a middlebox sending RST would: the client's
// command fails at once with a connection error instead of hanging.
// Connections opened while the fault is active get a real RST (SO_LINGER
// 0); older ones are closed with a FIN, since toxiproxy sets the linger
// only when a connection starts. Healing lets connections live again.
type Reset struct {
	Net   *Net
	Links []history.Link
	// Direction is the bytes that trigger the reset; the zero value is fault.Both.
	Direction fault.Direction
}

// Available implements Limited: every link's node must take link faults.
func (r Reset) Available() error { return r.Net.available(r.Links) }

// Describe implements Fault.
func (r Reset) Describe() history.Fault {
	return history.Fault{Kind: fault.KindReset, Links: r.Links, Detail: fault.DescribeLinks(r.Links, "↯"+r.Direction.Arrow())}
}

// Inject implements Fault.
func (r Reset) Inject(ctx context.Context) (Heal, error) {
	return r.Net.poison(ctx, "reset", r.Links, r.Direction, "reset_peer", `{"timeout":0}`, nil)
}
