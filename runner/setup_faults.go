package runner

import (
	"context"
	"errors"
	"fmt"

	"splitbrain/cluster"
	"splitbrain/nemesis"
)

// faultRig is what the fault steps need beyond the nemesis: each client's
// gate (its lock hooks stop there) and the replicas.
type faultRig struct {
	gates map[string]*nemesis.ClientGate
	// pauses holds, per client, a channel closed when its last client
	// pause is over (held and resumed, not reached in time, or healed).
	pauses map[string]<-chan struct{}
}

// setUpFaults makes the clients' gates and starts the replicas, each
// replicating through a proxy of its own so that its link can be cut.
// It runs before the lock clients are made: their hooks need the gates.
func (r *runner) setUpFaults(ctx context.Context) error {
	r.faults.gates = map[string]*nemesis.ClientGate{}
	r.faults.pauses = map[string]<-chan struct{}{}
	for _, c := range r.sc.Clients {
		r.faults.gates[c] = nemesis.NewClientGate(c)
	}
	if len(r.sc.Replicas) == 0 {
		return nil
	}
	for _, name := range r.sc.Replicas {
		master, err := r.node(name)
		if err != nil {
			return fmt.Errorf("replica of %s: %w", name, err)
		}
		for _, rname := range r.sc.ReplicasOf(name) {
			via, err := r.net.AddLink(rname, nemesis.Endpoint{Name: name, Addr: master.Addr(), Kind: master.Kind()})
			if err != nil {
				return err
			}
			spec := cluster.ReplicaSpec{Name: rname, Of: name, Via: via}
			if r.sc.Sentinel != nil {
				// Sentinel tells its replicas the master's own address,
				// which the replica must know it by too: a route sends it
				// through the proxy instead.
				spec.Via, spec.Routes = master.Addr(), map[string]string{master.Addr(): via}
			}
			rep, err := cluster.StartReplica(ctx, r.cluster, spec)
			var unsupported *cluster.UnsupportedError
			if errors.As(err, &unsupported) {
				return fmt.Errorf("%s: cluster.replicas: %w", r.sc.File, err)
			}
			if err != nil {
				return err
			}
			r.logf("started %s=%s, a replica of %s through %s", rname, rep.Addr(), name, via)
		}
	}
	if r.sc.Sentinel != nil {
		return r.setUpSentinels(ctx)
	}
	return nil
}
