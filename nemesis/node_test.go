package nemesis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/history"
	"splitbrain/nemesis"
)

// The cluster's nodes have every capability the nemesis's node faults
// act through.
var (
	_ interface {
		cluster.Node
		cluster.Killer
		cluster.Stopper
		cluster.Pauser
		cluster.Wiper
		cluster.Clock
	} = (*local.Process)(nil)
	_ cluster.Replica = (*local.Process)(nil)
)

func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))[0]
}

func directClient(t *testing.T, n *local.Process, pw string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: pw, MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A paused node accepts connections but answers nothing until resumed; a
// command sent meanwhile is answered after the resume.
func TestPauseFreezesUntilResumed(t *testing.T) {
	cl := startNodes(t, 2)
	ctx := context.Background()
	n1, _ := cl.Process("n1")
	n2, _ := cl.Process("n2")
	pw := cl.Password()
	waiting := directClient(t, n1, pw)
	if err := waiting.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	nem := nemesis.New(&memRecorder{})
	defer nem.HealAll(ctx)
	id, err := nem.Start(ctx, nemesis.Pause{Node: n1})
	if err != nil {
		t.Fatal(err)
	}
	if s := procState(t, n1.PID()); s != "T" {
		t.Fatalf("n1's process state %q while paused, want T (stopped)", s)
	}
	reply := make(chan error, 1)
	go func() {
		ctx, cancel := within(time.Minute)
		defer cancel()
		reply <- waiting.Ping(ctx).Err()
	}()
	// A new connection is accepted by the kernel, then nothing comes back.
	fresh := directClient(t, n1, pw)
	pctx, cancel := within(300 * time.Millisecond)
	err = fresh.Ping(pctx).Err()
	cancel()
	if !isTimeout(err) {
		t.Errorf("PING to a paused node on a new connection: %v, want a timeout", err)
	}
	// The other node works meanwhile, and the first PING is still waiting:
	// a stopped process cannot have answered it.
	if err := n2.Admin().Ping(ctx).Err(); err != nil {
		t.Errorf("n2 while n1 is paused: %v", err)
	}
	select {
	case err := <-reply:
		t.Fatalf("a paused node answered: %v", err)
	default:
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reply:
		if err != nil {
			t.Errorf("the PING sent during the pause, after resume: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer after resume")
	}
	if s := procState(t, n1.PID()); s == "T" {
		t.Error("n1 still stopped after the heal")
	}
}

// What survives a crash depends on the node's persistence; kill -9 alone
// loses nothing under AOF (the page cache survives the process), amnesia
// does, and a graceful stop without persistence keeps nothing either.
func TestKillAndRestartPerPersistence(t *testing.T) {
	ctx := context.Background()
	cl, err := local.Start(ctx, cluster.Config{Nodes: 3, Dir: t.TempDir(), CacheDir: t.TempDir(),
		NodePersistence: map[string]cluster.Persistence{"n2": cluster.PersistAOFEverysec, "n3": cluster.PersistAOFAlways}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx)
	for _, tc := range []struct {
		node     string
		graceful bool
		amnesia  bool
		kept     bool
	}{
		{"n1", false, false, false},
		{"n1", true, false, false},
		{"n2", false, false, true}, // everysec: the page cache keeps it
		{"n2", true, false, true},
		{"n3", false, false, true},
		{"n3", false, true, false}, // amnesia: the data is gone
		{"n3", true, true, false},
	} {
		n, _ := cl.Process(tc.node)
		name := fmt.Sprintf("%s/%s/graceful=%v/amnesia=%v", tc.node, n.Persistence(), tc.graceful, tc.amnesia)
		t.Run(name, func(t *testing.T) {
			key := "k-" + strings.ReplaceAll(name, "/", "-")
			if err := n.Admin().Set(ctx, key, "acked", 0).Err(); err != nil {
				t.Fatal(err)
			}
			rec := &memRecorder{}
			nem := nemesis.New(rec)
			var f nemesis.Fault = nemesis.Kill{Node: n, Amnesia: tc.amnesia}
			if tc.graceful {
				f = nemesis.Stop{Node: n, Amnesia: tc.amnesia}
			}
			if _, err := nem.Start(ctx, f); err != nil {
				t.Fatal(err)
			}
			if n.Running() {
				t.Fatal("node still running after the fault")
			}
			if err := nem.HealAll(ctx); err != nil {
				t.Fatal(err)
			}
			if !n.Running() {
				t.Fatal("node not restarted by the heal")
			}
			if got := exists(t, n, key); got != tc.kept {
				t.Errorf("acknowledged key after restart: present=%v, want %v", got, tc.kept)
			}
			if fs := rec.faults(t); len(fs) != 2 || fs[1].Phase != history.PhaseStop {
				t.Errorf("recorded %+v, want a start and a stop", fs)
			}
		})
	}
}

// A restart delayed with StartFor keeps the node down for the delay, then
// brings it back on its own and records the end.
func TestDelayedRestart(t *testing.T) {
	cl := startNodes(t, 1)
	ctx := context.Background()
	n := cl.Processes()[0]
	rec := &memRecorder{}
	nem := nemesis.New(rec)
	defer nem.HealAll(ctx)
	if _, err := nem.StartFor(ctx, nemesis.Kill{Node: n}, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("running right after the kill")
	}
	// The heal restarts the node, then records its end: the node may
	// answer a moment before the end is in the history.
	eventually(t, "restart after the delay, its end recorded", func() error {
		if !n.Running() {
			return errors.New("down")
		}
		if err := n.Admin().Ping(ctx).Err(); err != nil {
			return err
		}
		if fs := rec.faults(t); len(fs) < 2 {
			return fmt.Errorf("recorded %+v, no end yet", fs)
		}
		return nil
	})
	if len(nem.Active()) != 0 {
		t.Errorf("active after the timed heal: %+v", nem.Active())
	}
	fs := rec.faults(t)
	if len(fs) != 2 || fs[1].Phase != history.PhaseStop || !strings.HasSuffix(fs[0].Detail, "for 300ms") {
		t.Errorf("recorded %+v, want kill for 300ms, start and stop", fs)
	}
	if _, err := nem.Start(ctx, nemesis.Kill{Node: n}); err != nil {
		t.Fatal(err)
	}
	if _, err := nem.Start(ctx, nemesis.Kill{Node: n}); err == nil {
		t.Error("killing a node that is down succeeded")
	}
}

// The failover the Redlock page opens with: a write acknowledged by the
// master while the replication link is cut never reaches the replica;
// the master dies, the replica is promoted, and clients that follow the
// failover find the write gone.
func TestFailoverLosesUnreplicatedWrite(t *testing.T) {
	cl, links, nem, rec := setup(t, 1, "c1")
	ctx := context.Background()
	pw := cl.Password()
	n1, _ := cl.Process("n1")
	replLink := history.Link{Client: "r1", Node: "n1"}
	viaProxy, err := links.AddLink("r1", nemesis.Endpoint{Name: "n1", Addr: n1.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := cl.AddNode(ctx, local.NodeSpec{Name: "r1", ReplicaOf: viaProxy})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := within(20 * time.Second)
	if err := r1.WaitSynced(sctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	c1 := linkClient(t, links, pw, "c1", "n1")
	if err := c1.Set(ctx, "replicated", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c1.Do(ctx, "wait", 1, 10000).Int(); err != nil || got != 1 {
		t.Fatalf("WAIT 1 before the cut: %d, %v", got, err)
	}
	if _, err := nem.Start(ctx, nemesis.Cut{Net: links, Links: []history.Link{replLink}}); err != nil {
		t.Fatal(err)
	}
	if err := c1.Set(ctx, "lock", "c1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The replication stream is dropped: no replica acknowledges.
	if got, err := c1.Do(ctx, "wait", 1, 300).Int(); err != nil || got != 0 {
		t.Fatalf("WAIT 1 during the cut: %d replicas, %v; want 0", got, err)
	}
	if _, err := nem.Start(ctx, nemesis.Kill{Node: n1}); err != nil {
		t.Fatal(err)
	}
	promote := nemesis.Promote{Net: links, Replica: r1, Links: []history.Link{{Client: "c1", Node: "n1"}}}
	if _, err := nem.Start(ctx, promote); err != nil {
		t.Fatal(err)
	}
	// c1 reaches "n1" through the same address, and finds the replica.
	c1after := linkClient(t, links, pw, "c1", "n1")
	role, err := c1after.Do(ctx, "role").Slice()
	if err != nil || role[0] != "master" {
		t.Fatalf("ROLE via c1's link after promotion: %v, %v", role, err)
	}
	if v, err := c1after.Get(ctx, "replicated").Result(); err != nil || v != "v" {
		t.Errorf("replicated key on the promoted replica: %q, %v", v, err)
	}
	if err := c1after.Get(ctx, "lock").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("the write made during the cut on the promoted replica: %v, want it missing", err)
	}
	if ok, err := c1after.SetNX(ctx, "lock", "c2", 0).Result(); err != nil || !ok {
		t.Errorf("SET NX of the lost key on the new master: %v, %v; want granted", ok, err)
	}
	if f := rec.faults(t); f[2].Detail != "r1 promoted (REPLICAOF NO ONE); c1 now reach it as n1" {
		t.Errorf("detail %q", f[2].Detail)
	}

	if err := nem.HealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if !n1.Running() || r1.ReplicaOf() != viaProxy {
		t.Errorf("after heal: n1 running=%v, r1 follows %q; want n1 back and r1 its replica", n1.Running(), r1.ReplicaOf())
	}
	eventually(t, "c1's link back on n1", func() error {
		c := linkClient(t, links, pw, "c1", "n1")
		role, err := c.Do(ctx, "role").Slice()
		if err != nil {
			return err
		}
		if role[0] != "master" {
			return fmt.Errorf("role %v", role[0])
		}
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "tcp_port:"+strings.Split(n1.Addr(), ":")[1]) {
			return errors.New("c1's link reaches a node other than n1")
		}
		return nil
	})
	sctx, cancel = within(20 * time.Second)
	defer cancel()
	if err := r1.WaitSynced(sctx); err != nil {
		t.Fatalf("r1 does not follow n1 again: %v", err)
	}
}
