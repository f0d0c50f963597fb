package local_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
)

func TestConfigAndSpecErrors(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		cfg  cluster.Config
		want string
	}{
		{"unknown node", cluster.Config{Nodes: 2, NodePersistence: map[string]cluster.Persistence{"n3": cluster.PersistAOFAlways}}, `node "n3"`},
		{"bad mode", cluster.Config{Nodes: 2, NodePersistence: map[string]cluster.Persistence{"n1": "fsync-sometimes"}}, `"fsync-sometimes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Dir, tc.cfg.CacheDir = t.TempDir(), t.TempDir()
			_, err := local.Start(ctx, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	cl := startCluster(t, 1, t.TempDir())
	for _, tc := range []struct {
		spec local.NodeSpec
		want string
	}{
		{local.NodeSpec{Name: "n1"}, "exists already"},
		{local.NodeSpec{Name: "Storage"}, "lower-case"},
		{local.NodeSpec{Name: "r1", ReplicaOf: "nowhere"}, "host:port"},
		{local.NodeSpec{Name: "r1", Persistence: "rdb"}, `"rdb"`},
	} {
		if _, err := cl.AddNode(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AddNode(%+v): %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

// Added nodes are not lock nodes, are found by name, follow their master,
// can be promoted and made to follow again, and go away at Close.
func TestAddedReplicaFollowsAndIsPromoted(t *testing.T) {
	cl := startCluster(t, 1, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n1 := cl.Processes()[0]
	r1, err := cl.AddNode(ctx, local.NodeSpec{Name: "r1", ReplicaOf: n1.Addr(), Persistence: cluster.PersistAOFAlways})
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Processes()) != 1 || len(cl.All()) != 2 {
		t.Errorf("Nodes %d, All %d; want the replica only among All", len(cl.Processes()), len(cl.All()))
	}
	if got, ok := cl.Process("r1"); !ok || got != r1 {
		t.Error("Node(r1) does not find the added node")
	}
	if err := r1.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n1.Admin().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// WAIT in turns shorter than the admin client's 1 s read timeout: a
	// longer one is cut by the client while the replica's acknowledgement
	// (it fsyncs first, AOF always) is slow on a loaded machine.
	for {
		n, err := n1.Admin().Do(ctx, "wait", 1, 500).Int()
		if err == nil && n == 1 {
			break
		}
		if err != nil || ctx.Err() != nil {
			t.Fatalf("WAIT: %d %v (%v)", n, err, ctx.Err())
		}
	}
	master, err := r1.Promote(ctx)
	if err != nil || master != n1.Addr() || r1.ReplicaOf() != "" {
		t.Fatalf("Promote: %q, %v; follows %q", master, err, r1.ReplicaOf())
	}
	if err := r1.Admin().Set(ctx, "own", "write", 0).Err(); err != nil {
		t.Errorf("write to the promoted replica: %v", err)
	}
	// A promoted node restarts as a master, with what it had (AOF always).
	if err := r1.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := r1.Admin().Get(ctx, "own").Result(); v != "write" {
		t.Errorf("promoted node lost its own write across a restart: %q, %v", v, err)
	}
	if err := r1.Follow(ctx, n1.Addr()); err != nil {
		t.Fatal(err)
	}
	if err := r1.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if r1.Admin().Exists(ctx, "own").Val() != 0 || r1.Admin().Get(ctx, "k").Val() != "v" {
		t.Error("after Follow the node does not mirror its master")
	}
}

func TestPauseResumeAndWipe(t *testing.T) {
	cl := startCluster(t, 1, t.TempDir())
	ctx := testCtx(t)
	n := cl.Processes()[0]
	if err := n.Pause(ctx); err != nil || !n.Paused() {
		t.Fatalf("Pause: %v, paused %v", err, n.Paused())
	}
	pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := n.Admin().Ping(pctx).Err()
	cancel()
	if err == nil {
		t.Error("a paused node answered")
	}
	if err := n.Resume(ctx); err != nil || n.Paused() {
		t.Fatalf("Resume: %v, paused %v", err, n.Paused())
	}
	if err := n.Resume(ctx); err != nil {
		t.Errorf("second Resume: %v", err)
	}
	if err := n.WipeData(ctx); err == nil {
		t.Error("wiped a running node's data")
	}
	// A paused node still stops gracefully: Stop resumes it.
	if err := n.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n.Stop(sctx); err != nil {
		t.Fatalf("Stop of a paused node: %v", err)
	}
	if n.Paused() || n.Running() {
		t.Errorf("after Stop: paused %v, running %v", n.Paused(), n.Running())
	}
	if err := n.Pause(ctx); !errors.Is(err, cluster.ErrNotRunning) {
		t.Errorf("Pause of a stopped node: %v, want ErrNotRunning", err)
	}
	if err := n.WipeData(ctx); err != nil {
		t.Errorf("WipeData of a stopped node: %v", err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatalf("start after wipe: %v", err)
	}
}
