package nemesis

import (
	"context"

	"splitbrain/fault"
	"splitbrain/history"
)

// Partition drops every byte, both ways, on the links of a grudge (see
// fault.Isolate, fault.Halves, fault.Bridge, fault.ClientCut, fault.RandomGrudge). It is a Cut that
// remembers its shape, so reports can say "halves" instead of listing
// links. Healing closes the cut connections, as Cut's does.
type Partition struct {
	Net   *Net
	Shape string
	Links []history.Link
}

// Available implements Limited: every link's node must take link faults.
func (p Partition) Available() error { return p.Net.available(p.Links) }

// Describe implements Fault.
func (p Partition) Describe() history.Fault {
	return history.Fault{Kind: fault.KindPartition, Links: p.Links, Detail: p.Shape + ": " + fault.DescribeLinks(p.Links, "✂")}
}

// Inject implements Fault.
func (p Partition) Inject(ctx context.Context) (Heal, error) {
	return Cut{Net: p.Net, Links: p.Links}.Inject(ctx)
}
