package local_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/fault"
)

// A real node of a kind without some faults refuses them itself, with the
// typed error, before touching its process, and still takes the others.
// The kind is Redis with pause, wipe, clock offsets and replicas struck
// off, as a kind that lacks them would declare.
func TestNodeOfKindRefusesUnsupportedFaults(t *testing.T) {
	limited := *cluster.Redis
	limited.Name = "limited-redis"
	limited.Faults = slices.DeleteFunc(slices.Clone(limited.Faults), func(f fault.Capability) bool {
		return f == fault.Pause || f == fault.Wipe || f == fault.Clock || f == fault.Replica
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := local.Start(ctx, cluster.Config{Kind: &limited, Nodes: 1, Dir: t.TempDir(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.Close(testCtx(t)); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	n := cl.Processes()[0]
	for _, tc := range []struct {
		fault fault.Capability
		do    func() error
	}{
		{fault.Pause, func() error { return n.Pause(ctx) }},
		{fault.Clock, func() error { return n.SetClockOffset(time.Minute) }},
		{fault.Replica, func() error { _, err := n.Promote(ctx); return err }},
		{fault.Replica, func() error { return n.Follow(ctx, "127.0.0.1:1") }},
		{fault.Replica, func() error {
			_, err := cl.AddNode(ctx, local.NodeSpec{Name: "r1", ReplicaOf: n.Addr()})
			return err
		}},
		{fault.Replica, func() error {
			_, err := cluster.StartReplica(ctx, cl, cluster.ReplicaSpec{Name: "r1", Of: "n1"})
			return err
		}},
	} {
		err := tc.do()
		var ue *cluster.UnsupportedError
		if !errors.As(err, &ue) || ue.Kind != "limited-redis" || ue.Fault != tc.fault {
			t.Errorf("%s: error %v, want an *UnsupportedError for limited-redis and %s", tc.fault, err, tc.fault)
		}
	}
	if n.Paused() || n.ClockOffset() != 0 {
		t.Errorf("a refused fault took effect: paused %v, clock offset %v", n.Paused(), n.ClockOffset())
	}
	// Kill and restart are still the kind's.
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	var ue *cluster.UnsupportedError
	if err := n.WipeData(ctx); !errors.As(err, &ue) || ue.Fault != fault.Wipe {
		t.Errorf("WipeData of a stopped node: %v, want the refusal of wipe", err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Admin().Ping(ctx).Err(); err != nil {
		t.Errorf("restarted node: %v", err)
	}
}
