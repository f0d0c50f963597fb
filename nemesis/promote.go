package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// Promote fails over to a replica: it becomes a master keeping whatever it
// had replicated — with asynchronous replication, not necessarily every
// write its master acknowledged — and Links, the links by which clients
// reached the old master, are pointed at it, as Sentinel or a DNS change
// points clients at a new master. Healing points the links back at the
// old master and makes the replica follow it again (dropping its own data
// and syncing afresh).
type Promote struct {
	Net     *Net
	Replica cluster.Node
	Links   []history.Link
}

// Available implements Fault: the replica must be a cluster.Replica.
func (p Promote) Available() error {
	_, err := cluster.Capable[cluster.Replica](p.Replica, fault.Replica)
	return err
}

// Describe implements Fault.
func (p Promote) Describe() history.Fault {
	var masters, clients []string
	seen := map[string]bool{}
	for _, l := range p.Links {
		if !seen["n:"+l.Node] {
			masters = append(masters, l.Node)
			seen["n:"+l.Node] = true
		}
		if !seen["c:"+l.Client] {
			clients = append(clients, l.Client)
			seen["c:"+l.Client] = true
		}
	}
	sort.Strings(clients)
	return history.Fault{Kind: fault.KindPromote, Nodes: []string{p.Replica.Name()}, Links: p.Links,
		Detail: fmt.Sprintf("%s promoted (REPLICAOF NO ONE); %s now reach it as %s", p.Replica.Name(),
			strings.Join(clients, ","), strings.Join(masters, ","))}
}

// Inject implements Fault.
func (p Promote) Inject(ctx context.Context) (Heal, error) {
	if len(p.Links) == 0 {
		return nil, errors.New("promote: no client links to point at the replica")
	}
	old := make([]string, len(p.Links))
	for i, l := range p.Links {
		up, err := p.Net.Upstream(l)
		if err != nil {
			return nil, err
		}
		old[i] = up
	}
	rep, err := cluster.Capable[cluster.Replica](p.Replica, fault.Replica)
	if err != nil {
		return nil, err
	}
	master, err := rep.Promote(ctx)
	if err != nil {
		return nil, err
	}
	var moved []int
	heal := func(ctx context.Context) error {
		var errs []error
		for _, i := range moved {
			errs = append(errs, p.Net.Retarget(ctx, p.Links[i], old[i]))
		}
		if master != "" {
			errs = append(errs, rep.Follow(ctx, master))
		}
		return errors.Join(errs...)
	}
	for i, l := range p.Links {
		if err := p.Net.Retarget(ctx, l, p.Replica.Addr()); err != nil {
			return nil, errors.Join(err, heal(ctx))
		}
		moved = append(moved, i)
	}
	return heal, nil
}
