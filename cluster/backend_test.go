package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"splitbrain/cluster"
	"splitbrain/fault"
)

// fakeNode is a node of a kind whose faults the test picks; Capable's
// logic has nothing to do with a server.
type fakeNode struct{ kind *cluster.Kind }

func (f fakeNode) Name() string                   { return "z1" }
func (f fakeNode) Kind() *cluster.Kind            { return f.kind }
func (f fakeNode) Addr() string                   { return "127.0.0.1:2181" }
func (f fakeNode) Start(context.Context) error    { return nil }
func (f fakeNode) Pause(context.Context) error    { return nil }
func (f fakeNode) Resume(context.Context) error   { return nil }
func (f fakeNode) Kill(context.Context) error     { return nil }
func (f fakeNode) WipeData(context.Context) error { return nil }

// Capable grants a capability only when the kind lists the fault and the
// node has the methods; each refusal is an *UnsupportedError naming the
// kind, the fault and the node, and says whether the backend is to blame.
func TestCapableRefusesWithTypedError(t *testing.T) {
	zk := &cluster.Kind{Name: "zookeeper", Faults: []fault.Capability{fault.Pause, fault.Kill, fault.Clock}}
	n := fakeNode{kind: zk}
	for _, tc := range []struct {
		name        string
		get         func() error
		wantFault   fault.Capability
		wantBackend bool
	}{
		{"supported", func() error { _, err := cluster.Capable[cluster.Pauser](n, fault.Pause); return err }, "", false},
		{"kind lacks wipe", func() error { _, err := cluster.Capable[cluster.Wiper](n, fault.Wipe); return err }, fault.Wipe, false},
		{"kind lacks replicas", func() error { _, err := cluster.Capable[cluster.Replica](n, fault.Replica); return err }, fault.Replica, false},
		// The kind has clock offsets, this node's backend has no Clock.
		{"backend lacks clock", func() error { _, err := cluster.Capable[cluster.Clock](n, fault.Clock); return err }, fault.Clock, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.get()
			if tc.wantFault == "" {
				if err != nil {
					t.Fatalf("refused a supported fault: %v", err)
				}
				return
			}
			var ue *cluster.UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v (%T), want an *UnsupportedError", err, err)
			}
			if ue.Kind != "zookeeper" || ue.Fault != tc.wantFault || ue.Node != "z1" || ue.Backend != tc.wantBackend {
				t.Errorf("got %+v, want kind zookeeper, fault %q, node z1, backend %v", ue, tc.wantFault, tc.wantBackend)
			}
			if msg := err.Error(); !strings.Contains(msg, "zookeeper") || !strings.Contains(msg, string(tc.wantFault)) {
				t.Errorf("message %q names neither the kind nor the fault", msg)
			}
		})
	}
}

// Redis takes every fault both backends offer.
func TestRedisSupportsEveryFault(t *testing.T) {
	for _, f := range []fault.Capability{fault.Link, fault.Pause, fault.Kill, fault.Stop,
		fault.Wipe, fault.Clock, fault.Replica, fault.Disconnect} {
		if err := cluster.Redis.Refuse("n1", f); err != nil {
			t.Errorf("Redis refuses %s: %v", f, err)
		}
	}
}
