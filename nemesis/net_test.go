package nemesis_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster/local"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/nemesis"
)

// linkClient is a client with one pooled connection over a link.
func linkClient(t *testing.T, links *nemesis.Net, pw, client, node string) *redis.Client {
	t.Helper()
	addr, err := links.Addr(client, node)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, Password: pw, MaxRetries: -1, ContextTimeoutEnabled: true,
		PoolSize: 1, DialTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func within(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// eventually retries f until it succeeds or a generous deadline passes.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func exists(t *testing.T, n *local.Process, key string) bool {
	t.Helper()
	ctx, cancel := within(5 * time.Second)
	defer cancel()
	v, err := n.Admin().Exists(ctx, key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s on %s: %v", key, n.Name(), err)
	}
	return v == 1
}

func setup(t *testing.T, nodes int, clients ...string) (*local.Cluster, *nemesis.Net, *nemesis.Nemesis, *memRecorder) {
	t.Helper()
	cl := startNodes(t, nodes)
	links, err := nemesis.NewNet(clients, endpoints(cl))
	if err != nil {
		t.Fatal(err)
	}
	rec := &memRecorder{}
	nem := nemesis.New(rec)
	t.Cleanup(func() {
		if err := nem.HealAll(context.Background()); err != nil {
			t.Errorf("HealAll: %v", err)
		}
		links.Close()
	})
	return cl, links, nem, rec
}

// Dropping one direction: requests lost means the command never runs;
// replies lost means it runs but the client cannot know. Both look the
// same to the client — a timeout — which is why a lock must treat a
// timed-out SET as possibly applied.
func TestCutPerDirection(t *testing.T) {
	cl, links, nem, _ := setup(t, 1, "c1")
	n1 := cl.Processes()[0]
	pw := cl.Password()
	for _, tc := range []struct {
		dir     fault.Direction
		key     string
		applied bool
	}{
		{fault.ToNode, "k-to-node", false},
		{fault.ToClient, "k-to-client", true},
	} {
		t.Run(string(tc.dir), func(t *testing.T) {
			c := linkClient(t, links, pw, "c1", "n1")
			if err := c.Ping(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			id, err := nem.Start(context.Background(), nemesis.Cut{Net: links, Links: []history.Link{{Client: "c1", Node: "n1"}}, Direction: tc.dir})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := within(300 * time.Millisecond)
			err = c.Set(ctx, tc.key, "v", 0).Err()
			cancel()
			if !isTimeout(err) {
				t.Errorf("SET during %s cut: %v, want a timeout", tc.dir, err)
			}
			if tc.applied {
				// The request got through; only the reply is lost.
				eventually(t, "SET applied behind a lost reply", func() error {
					if !exists(t, n1, tc.key) {
						return errors.New("key absent")
					}
					return nil
				})
			} else if exists(t, n1, tc.key) {
				t.Errorf("SET applied although its request was dropped")
			}
			if err := nem.Stop(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			eventually(t, "c1→n1 after heal", func() error { return ping(t, links, pw, "c1", "n1") })
		})
	}
}

// A reset fails commands at once with a connection error, not a timeout;
// after the heal the link works again.
func TestResetFailsFastAndHeals(t *testing.T) {
	cl, links, nem, rec := setup(t, 2, "c1")
	pw := cl.Password()
	c := linkClient(t, links, pw, "c1", "n1")
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	id, err := nem.Start(context.Background(), nemesis.Reset{Net: links, Links: []history.Link{{Client: "c1", Node: "n1"}}})
	if err != nil {
		t.Fatal(err)
	}
	// A generous deadline: the reset must beat it by failing, not by time.
	for _, what := range []string{"pooled connection", "new connection"} {
		ctx, cancel := within(10 * time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil || isTimeout(err) {
			t.Errorf("PING over a reset link (%s): %v, want a connection error", what, err)
		}
	}
	if err := ping(t, links, pw, "c1", "n2"); err != nil {
		t.Errorf("c1→n2, not reset: %v", err)
	}
	if err := nem.Stop(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	eventually(t, "c1→n1 after heal", func() error { return ping(t, links, pw, "c1", "n1") })
	if f := rec.faults(t); len(f) != 2 || f[0].Kind != fault.KindReset || f[0].Detail != "c1 ↯ n1" {
		t.Errorf("recorded %+v", f)
	}
}

// Refusing new connections leaves open ones working: a pooled connection
// still answers while every new one is closed at once.
func TestRefuseTurnsAwayNewConnectionsOnly(t *testing.T) {
	cl, links, nem, _ := setup(t, 1, "c1")
	pw := cl.Password()
	open := linkClient(t, links, pw, "c1", "n1")
	if err := open.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	id, err := nem.Start(context.Background(), nemesis.Refuse{Net: links, Links: []history.Link{{Client: "c1", Node: "n1"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ctx, cancel := within(10 * time.Second)
		err := open.Set(ctx, "k", i, 0).Err()
		cancel()
		if err != nil {
			t.Fatalf("command %d on the connection opened before: %v, want it to work", i, err)
		}
	}
	for i := range 3 {
		fresh := linkClient(t, links, pw, "c1", "n1")
		ctx, cancel := within(10 * time.Second)
		err := fresh.Ping(ctx).Err()
		cancel()
		if err == nil || isTimeout(err) {
			t.Errorf("new connection %d: %v, want it closed at once", i, err)
		}
	}
	if err := nem.Stop(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	eventually(t, "new connection after heal", func() error { return ping(t, links, pw, "c1", "n1") })
	if err := open.Ping(context.Background()).Err(); err != nil {
		t.Errorf("the old connection after heal: %v", err)
	}
}

// A delayed link holds bytes and then delivers them, here on the link to a
// storage node outside the lock's nodes: a write whose sender gave up
// lands later anyway.
func TestDelayHoldsThenDelivers(t *testing.T) {
	cl := startNodes(t, 1)
	ctx := context.Background()
	storage, err := cl.AddNode(ctx, local.NodeSpec{Name: "storage"})
	if err != nil {
		t.Fatal(err)
	}
	links, err := nemesis.NewNet(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer links.Close()
	if _, err := links.AddLink("c1", nemesis.Endpoint{Name: "storage", Addr: storage.Addr()}); err != nil {
		t.Fatal(err)
	}
	nem := nemesis.New(&memRecorder{})
	defer nem.HealAll(ctx)
	pw := cl.Password()
	c := linkClient(t, links, pw, "c1", "storage")
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	link := []history.Link{{Client: "c1", Node: "storage"}}

	// Held for a minute: the client gives up, the write has not landed.
	id, err := nem.Start(ctx, nemesis.Delay{Net: links, Links: link, Direction: fault.ToNode, By: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := within(200 * time.Millisecond)
	err = c.Set(sctx, "balance", "stale", 0).Err()
	cancel()
	if !isTimeout(err) {
		t.Fatalf("SET over a 1-minute delay: %v, want the client to time out", err)
	}
	if exists(t, storage, "balance") {
		t.Fatal("the held write landed before its delay")
	}
	// The heal delivers what is held.
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	eventually(t, "held write delivered at heal", func() error {
		if !exists(t, storage, "balance") {
			return errors.New("not there")
		}
		return nil
	})

	// A short delay runs out by itself: the command succeeds, late.
	c2 := linkClient(t, links, pw, "c1", "storage")
	if err := c2.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const by = 300 * time.Millisecond
	id, err = nem.Start(ctx, nemesis.Delay{Net: links, Links: link, By: by})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c2.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET over a %v delay: %v", by, err)
	}
	if took := time.Since(start); took < by {
		t.Errorf("SET over a %v delay (both ways) returned after %v", by, took)
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := nem.Start(ctx, nemesis.Delay{Net: links, Links: link, By: 2 * time.Hour}); err == nil {
		t.Error("a 2-hour delay was accepted")
	}
}

// A delay's heal never waits on the connections it holds bytes for. A
// client that gave up on a held reply hangs up; the replies held for it
// then have nowhere to go. Removing toxiproxy's latency toxic at the heal
// waited 5 s for each of them while the proxy took no new connection (a
// heal of 20 s to 2 minutes under load); releasing ours does not.
func TestDelayHealDoesNotWaitOnHungUpClients(t *testing.T) {
	cl, links, nem, _ := setup(t, 1, "c1")
	ctx := context.Background()
	pw := cl.Password()
	addr, err := links.Addr("c1", "n1")
	if err != nil {
		t.Fatal(err)
	}
	link := []history.Link{{Client: "c1", Node: "n1"}}
	id, err := nem.Start(ctx, nemesis.Delay{Net: links, Links: link, Direction: fault.ToClient, By: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Nine replies held for a client that hangs up: each request is sent
	// once the last has surely been answered, so each reply is a chunk
	// of its own in the proxy.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range append([]string{"AUTH " + pw}, slices.Repeat([]string{"PING"}, 8)...) {
		if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	_ = conn.Close()
	time.Sleep(100 * time.Millisecond) // the hang-up reaches the proxy

	healed := make(chan error, 1)
	go func() { healed <- nem.Stop(ctx, id) }()
	select {
	case err := <-healed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		// Far above a release (milliseconds), below the removal's 5 s
		// for each of the seven replies left without a writer.
		t.Fatal("the heal still waits after 20 s")
	}
	// The proxy takes new connections, and the link passes undelayed.
	c := linkClient(t, links, pw, "c1", "n1")
	pctx, cancel := within(5 * time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		t.Fatalf("PING after the heal: %v", err)
	}
}

// A toxic added after a delay interrupts it (toxiproxy moves the chain's
// channels); the byte the delay held at that moment is neither lost nor
// freed early: it lands when the first delay is released.
func TestDelayKeepsWhatItHoldsWhenAnotherFaultFollows(t *testing.T) {
	cl, links, nem, _ := setup(t, 1, "c1")
	ctx := context.Background()
	n1 := cl.Processes()[0]
	c := linkClient(t, links, cl.Password(), "c1", "n1")
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	link := []history.Link{{Client: "c1", Node: "n1"}}
	first, err := nem.Start(ctx, nemesis.Delay{Net: links, Links: link, Direction: fault.ToNode, By: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := within(200 * time.Millisecond)
	err = c.Set(sctx, "held", "v", 0).Err()
	cancel()
	if !isTimeout(err) {
		t.Fatalf("SET over a 1-minute delay: %v, want a timeout", err)
	}
	second, err := nem.Start(ctx, nemesis.Delay{Net: links, Links: link, Direction: fault.ToNode, By: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if exists(t, n1, "held") {
		t.Fatal("the held write landed when a second delay was added")
	}
	if err := nem.Stop(ctx, first); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the held write delivered at the first delay's heal", func() error {
		if !exists(t, n1, "held") {
			return errors.New("not there")
		}
		return nil
	})
	if err := nem.Stop(ctx, second); err != nil {
		t.Fatal(err)
	}
}

// Partitions cut exactly their grudge's links; the heal restores them all.
func TestPartitionCutsItsGrudge(t *testing.T) {
	clients := []string{"c1", "c2"}
	cl, links, nem, rec := setup(t, 5, clients...)
	pw := cl.Password()
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	grudge, err := fault.Bridge(clients, nodes)
	if err != nil {
		t.Fatal(err)
	}
	id, err := nem.Start(context.Background(), nemesis.Partition{Net: links, Shape: fault.ShapeBridge, Links: grudge})
	if err != nil {
		t.Fatal(err)
	}
	// c1 is on n1,n2's side, c2 on n4,n5's; both reach the bridge n3.
	reach := map[string]string{"c1": "n1 n2 n3", "c2": "n3 n4 n5"}
	for _, c := range clients {
		for _, n := range nodes {
			err := ping(t, links, pw, c, n)
			if want := strings.Contains(reach[c], n); want != (err == nil) {
				t.Errorf("%s→%s: err %v, want reachable=%v", c, n, err, want)
			}
		}
	}
	if err := nem.Stop(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		for _, n := range nodes {
			eventually(t, c+"→"+n+" after heal", func() error { return ping(t, links, pw, c, n) })
		}
	}
	if f := rec.faults(t); f[0].Detail != "bridge: c1 ✂ n4,n5; c2 ✂ n1,n2" {
		t.Errorf("detail %q", f[0].Detail)
	}
}

// Closing the network stops every proxy: nothing listens on a link's
// address any more and connections through it are closed.
func TestNetCloseLeavesNoProxy(t *testing.T) {
	cl, links, _, _ := setup(t, 2, "c1")
	repl, err := links.AddLink("r1", nemesis.Endpoint{Name: "n1", Addr: cl.Processes()[0].Addr()})
	if err != nil {
		t.Fatal(err)
	}
	open := linkClient(t, links, cl.Password(), "c1", "n1")
	if err := open.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	addrs := []string{repl}
	for _, n := range []string{"n1", "n2"} {
		a, _ := links.Addr("c1", n)
		addrs = append(addrs, a)
	}
	links.Close()
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, 2*time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Close", a)
		}
	}
	ctx, cancel := within(10 * time.Second)
	defer cancel()
	if err := open.Ping(ctx).Err(); err == nil {
		t.Error("a connection through a closed proxy still answers")
	}
	if _, err := links.AddLink("c2", nemesis.Endpoint{Name: "n1", Addr: cl.Processes()[0].Addr()}); err == nil {
		t.Error("AddLink after Close succeeded")
	}
}

// A direct net hands out the nodes' own addresses, and every link fault
// asked of it fails as a *DirectLinkError: one that did nothing would let a
// story pass that never had its fault.
func TestDirectNetRefusesLinkFaults(t *testing.T) {
	t.Parallel()
	nodes := []nemesis.Endpoint{{Name: "n1", Addr: "127.0.0.1:7001"}, {Name: "n2", Addr: "127.0.0.1:7002"}}
	links, err := nemesis.NewDirectNet([]string{"c1", "c2"}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer links.Close()
	if a, err := links.Addr("c2", "n2"); err != nil || a != "127.0.0.1:7002" {
		t.Errorf("Addr(c2, n2) = %q, %v; want the node's own address", a, err)
	}
	if a, err := links.AddLink("r1", nemesis.Endpoint{Name: "n1", Addr: "127.0.0.1:7001"}); err != nil || a != "127.0.0.1:7001" {
		t.Errorf("AddLink(r1, n1) = %q, %v; want the node's own address", a, err)
	}
	if _, err := links.AddLink("c1", nodes[0]); err == nil {
		t.Error("a link given twice was accepted")
	}
	var unknown *nemesis.UnknownLinkError
	if _, err := links.Addr("c3", "n1"); !errors.As(err, &unknown) {
		t.Errorf("Addr of an unknown link: %v, want an UnknownLinkError", err)
	}
	if got := len(links.Links()); got != 5 {
		t.Errorf("Links() lists %d links, want 5 (a partition drawn over them must fail, not cut nothing)", got)
	}
	l := history.Link{Client: "c1", Node: "n1"}
	ls := []history.Link{l}
	ctx, cancel := within(5 * time.Second)
	defer cancel()
	for _, f := range []nemesis.Fault{
		nemesis.Cut{Net: links, Links: ls},
		nemesis.Reset{Net: links, Links: ls},
		nemesis.Refuse{Net: links, Links: ls},
		nemesis.Delay{Net: links, Links: ls, By: time.Second},
		nemesis.Partition{Net: links, Links: links.Links()},
	} {
		heal, err := f.Inject(ctx)
		var direct *nemesis.DirectLinkError
		if !errors.As(err, &direct) {
			t.Errorf("%T on a direct link: %v, want a DirectLinkError", f, err)
		}
		if heal != nil {
			t.Errorf("%T on a direct link returned a heal", f)
		}
	}
	var direct *nemesis.DirectLinkError
	if err := links.Retarget(ctx, l, "127.0.0.1:7003"); !errors.As(err, &direct) {
		t.Errorf("Retarget of a direct link: %v, want a DirectLinkError", err)
	}
	links.Close()
	if _, err := links.Addr("c1", "n1"); err == nil {
		t.Error("Addr after Close succeeded")
	}
}
