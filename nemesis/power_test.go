package nemesis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/fault"
	"splitbrain/nemesis"
)

// A power loss is a kill that also cuts the node's files back to what it
// had fsynced; under appendfsync always that is every acknowledged write,
// and the heal brings the node back with them. A power loss with amnesia
// is refused, and so is one on a node whose kind records no fsyncs.
func TestKillPowerLossHealsWithTheSyncedData(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := local.Start(ctx, cluster.Config{Nodes: 1, Dir: t.TempDir(), CacheDir: t.TempDir(), Persistence: cluster.PersistAOFAlways})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close(context.Background()) })
	n := cl.Processes()[0]
	rec := &memRecorder{}
	nem := nemesis.New(rec)
	defer nem.HealAll(ctx)
	for i := range 50 {
		if err := n.Admin().Set(ctx, fmt.Sprintf("k%d", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	id, err := nem.Start(ctx, nemesis.Kill{Node: n, Power: true})
	if err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("the node runs after its power loss")
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if !n.Running() {
		t.Fatal("the heal did not restart the node")
	}
	eventually(t, "the node has loaded its AOF", func() error { return n.Admin().Ping(ctx).Err() })
	for i := range 50 {
		if !exists(t, n, fmt.Sprintf("k%d", i)) {
			t.Errorf("k%d, acknowledged under appendfsync always, lost to the power loss", i)
		}
	}
	fs := rec.faults(t)
	if len(fs) != 2 || fs[0].Kind != fault.KindKill || !strings.Contains(fs[0].Detail, "lost power") {
		t.Errorf("recorded %+v, want a kill whose detail says the power was lost", fs)
	}
	if err := (nemesis.Kill{Node: n, Power: true, Amnesia: true}).Available(); err == nil || !strings.Contains(err.Error(), "ask for one") {
		t.Errorf("power loss with amnesia: %v, want refused", err)
	}
}

// A power loss needs a kind whose servers sync through libc.
func TestKillPowerLossRefusedWhereFsyncsAreNotSeen(t *testing.T) {
	n := fakeNode{name: "n1", kind: &cluster.Kind{Name: "etcd", Faults: []fault.Capability{fault.Kill}}}
	err := nemesis.Kill{Node: n, Power: true}.Available()
	var ue *cluster.UnsupportedError
	if !errors.As(err, &ue) || ue.Fault != fault.Power {
		t.Errorf("power loss on an etcd node: %v, want an UnsupportedError of %q", err, fault.Power)
	}
}

// fakeNode is a node of a kind, that nothing runs: for refusals.
type fakeNode struct {
	name string
	kind *cluster.Kind
}

func (f fakeNode) Name() string                { return f.name }
func (f fakeNode) Kind() *cluster.Kind         { return f.kind }
func (f fakeNode) Addr() string                { return "127.0.0.1:1" }
func (f fakeNode) Start(context.Context) error { return errors.New("fake") }
