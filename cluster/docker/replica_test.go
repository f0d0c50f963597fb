package docker

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
)

// loopbackProxy stands for the harness's link proxies: a plain TCP
// forwarder on this host's loopback, which no container can reach by
// itself. It counts the connections it accepted.
type loopbackProxy struct {
	ln       net.Listener
	accepted atomic.Int32
}

func newLoopbackProxy(t *testing.T, target string) *loopbackProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &loopbackProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return p
}

func (p *loopbackProxy) Addr() string { return p.ln.Addr().String() }

// waitValue polls a node until key holds want; the deadline is the test
// context's, far beyond what replication takes even on a loaded machine.
func waitValue(t *testing.T, n *Container, key, want string) {
	t.Helper()
	ctx := testCtx(t)
	var got string
	var err error
	for ctx.Err() == nil {
		got, err = n.Admin().Get(ctx, key).Result()
		if err == nil && got == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: %s = %q, %v; want %q", n.Name(), key, got, err, want)
}

func role(t *testing.T, n *Container) string {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	info, err := n.Admin().Info(ctx, "replication").Result()
	mustDo(t, "INFO replication", err)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "role:"); ok {
			return v
		}
	}
	t.Fatalf("no role in INFO:\n%s", info)
	return ""
}

// addReplica adds a replica and returns its container.
func addReplica(t *testing.T, c *Cluster, spec cluster.ReplicaSpec) *Container {
	t.Helper()
	n, err := c.AddReplica(testCtx(t), spec)
	mustDo(t, "add replica", err)
	r, ok := n.(*Container)
	if !ok {
		t.Fatalf("AddReplica returned a %T, want a *Container", n)
	}
	return r
}

// A replica container follows its master through a proxy on this host's
// loopback (reached through the relay on the run's gateway), refuses
// writes, is promoted (REPLICAOF NO ONE) keeping what it had, stays a
// master across a restart, and follows again, dropping its own writes.
// Closing the cluster removes its container and closes the relay.
func TestReplicaFollowsAndIsPromoted(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, cluster.Config{Nodes: 1})
	ctx := testCtx(t)
	n1 := c.nodes[0]
	proxy := newLoopbackProxy(t, n1.Addr())
	mustDo(t, "SET before", n1.Admin().Set(ctx, "before", "1", 0).Err())

	r1 := addReplica(t, c, cluster.ReplicaSpec{Name: "r1", Of: "n1", Via: proxy.Addr()})
	mustDo(t, "wait synced", r1.WaitSynced(ctx))
	if got, ok := c.Container("r1"); !ok || got != r1 {
		t.Errorf("Node(r1) = %v, %v", got, ok)
	}
	if len(c.Containers()) != 1 || len(c.All()) != 2 {
		t.Errorf("Nodes() has %d, All() %d; want the lock's 1 and 2 with the replica", len(c.Containers()), len(c.All()))
	}
	if r1.ReplicaOf() != proxy.Addr() {
		t.Errorf("ReplicaOf = %q, want the proxy %s", r1.ReplicaOf(), proxy.Addr())
	}
	relayAP, err := netip.ParseAddrPort(r1.RelayAddr())
	mustDo(t, "relay address", err)
	if relayAP.Addr() != c.gateway {
		t.Errorf("relay listens on %s, want the run's gateway %s and nothing else", relayAP, c.gateway)
	}
	if proxy.accepted.Load() == 0 {
		t.Errorf("the replica synced without going through the proxy")
	}
	if role(t, r1) != "slave" || role(t, n1) != "master" {
		t.Errorf("roles r1=%s n1=%s", role(t, r1), role(t, n1))
	}
	waitValue(t, r1, "before", "1")
	mustDo(t, "SET after", n1.Admin().Set(ctx, "after", "2", 0).Err())
	waitValue(t, r1, "after", "2")
	if err := r1.Admin().Set(ctx, "x", "1", 0).Err(); err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Errorf("SET on the replica: %v, want READONLY", err)
	}

	prev, err := r1.Promote(ctx)
	mustDo(t, "promote", err)
	if prev != proxy.Addr() {
		t.Errorf("Promote returned %q, want the proxy %s", prev, proxy.Addr())
	}
	if role(t, r1) != "master" || r1.ReplicaOf() != "" {
		t.Errorf("after promote: role %s, ReplicaOf %q", role(t, r1), r1.ReplicaOf())
	}
	waitValue(t, r1, "after", "2")
	mustDo(t, "restart the promoted replica", r1.Restart(ctx, RestartOptions{}))
	if role(t, r1) != "master" {
		t.Errorf("a promoted replica restarted as %s, want master", role(t, r1))
	}

	mustDo(t, "SET own", r1.Admin().Set(ctx, "own", "3", 0).Err())
	mustDo(t, "follow", r1.Follow(ctx, prev))
	mustDo(t, "wait synced again", r1.WaitSynced(ctx))
	waitValue(t, r1, "after", "2")
	if err := r1.Admin().Get(ctx, "own").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("after following again, the replica's own write: %v, want it dropped", err)
	}

	relay := r1.RelayAddr()
	mustDo(t, "close", c.Close(ctx))
	if left, err := c.eng.RunObjects(ctx, c.RunID()); err != nil || len(left) > 0 {
		t.Errorf("after close: %v, %v; want nothing", left, err)
	}
	if conn, err := net.DialTimeout("tcp", relay, time.Second); err == nil {
		conn.Close()
		t.Errorf("the relay %s still accepts connections after close", relay)
	}
}

// The relay serves its replica only: another process on this host that
// dials the gateway address is cut off before anything is forwarded.
func TestRelayServesItsReplicaOnly(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, cluster.Config{Nodes: 1})
	ctx := testCtx(t)
	proxy := newLoopbackProxy(t, c.nodes[0].Addr())
	r1 := addReplica(t, c, cluster.ReplicaSpec{Name: "r1", Of: "n1", Via: proxy.Addr()})
	mustDo(t, "wait synced", r1.WaitSynced(ctx))
	before := proxy.accepted.Load()

	conn, err := net.DialTimeout("tcp", r1.RelayAddr(), 5*time.Second)
	mustDo(t, "dial the relay from the host", err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = conn.Write([]byte("PING\r\n"))
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	if err == nil || isTimeout(err) {
		t.Errorf("the relay answered a stranger: %q, %v; want the connection closed", buf[:n], err)
	}
	if got := proxy.accepted.Load(); got != before {
		t.Errorf("the proxy accepted %d connections after the stranger's, want none", got-before)
	}
}

// Nodes keep the persistence mode given to them: a kill and start loses
// what n1 (none, a tmpfs) held and keeps what n2 (AOF always, a volume)
// held.
func TestMixedPersistence(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, cluster.Config{Nodes: 2, NodePersistence: map[string]cluster.Persistence{"n2": cluster.PersistAOFAlways}})
	ctx := testCtx(t)
	n1, n2 := c.nodes[0], c.nodes[1]
	if n1.Persistence() != cluster.PersistNone || n2.Persistence() != cluster.PersistAOFAlways {
		t.Fatalf("persistence n1=%s n2=%s", n1.Persistence(), n2.Persistence())
	}
	for _, n := range c.Containers() {
		mustDo(t, "SET", n.Admin().Set(ctx, "acked", "1", 0).Err())
		mustDo(t, "kill+start", n.Restart(ctx, RestartOptions{}))
	}
	if err := n1.Admin().Get(ctx, "acked").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("n1 (none) after kill+start: GET = %v, want nil (data lost)", err)
	}
	if v, err := n2.Admin().Get(ctx, "acked").Result(); err != nil || v != "1" {
		t.Errorf("n2 (aof-always) after kill+start: GET = %q, %v; want the key", v, err)
	}
	objs, err := c.eng.RunObjects(ctx, c.RunID())
	mustDo(t, "list", err)
	volumes := 0
	for _, o := range objs {
		if strings.HasPrefix(o, "volume ") {
			volumes++
		}
	}
	if volumes != 1 {
		t.Errorf("run objects %v: want one volume, n2's", objs)
	}
}

// AddReplica refuses bad specs before touching the engine, and any spec
// once the cluster is closed.
func TestAddReplicaRejects(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, cluster.Config{Nodes: 1})
	ctx := testCtx(t)
	for _, tt := range []struct {
		name string
		spec cluster.ReplicaSpec
		want string
	}{
		{"bad name", cluster.ReplicaSpec{Name: "R 1", Of: "n1"}, `node name "R 1"`},
		{"bad persistence", cluster.ReplicaSpec{Name: "r1", Of: "n1", Persistence: "rdb"}, `persistence "rdb"`},
		{"bad via", cluster.ReplicaSpec{Name: "r1", Of: "n1", Via: "nowhere"}, `Via "nowhere"`},
		{"no master", cluster.ReplicaSpec{Name: "r1", Of: "n9"}, "no node n9"},
		{"taken name", cluster.ReplicaSpec{Name: "n1", Of: "n1"}, "n1 exists already"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.AddReplica(ctx, tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	mustDo(t, "close", c.Close(ctx))
	if _, err := c.AddReplica(ctx, cluster.ReplicaSpec{Name: "r1", Of: "n1"}); !errors.Is(err, cluster.ErrClosed) {
		t.Errorf("after close: %v, want ErrClosed", err)
	}
}
