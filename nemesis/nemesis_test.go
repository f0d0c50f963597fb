package nemesis_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/history"
	"splitbrain/nemesis"
)

// memRecorder keeps the events in memory. A timed fault's heal records
// its end from a goroutine of its own, so the events are locked.
type memRecorder struct {
	mu     sync.Mutex
	events []history.Event
}

func (m *memRecorder) Record(e history.Event) history.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.Index = int64(len(m.events))
	m.events = append(m.events, e)
	return e
}

func (m *memRecorder) faults(t *testing.T) []history.Fault {
	t.Helper()
	m.mu.Lock()
	events := append([]history.Event(nil), m.events...)
	m.mu.Unlock()
	var out []history.Fault
	for _, e := range events {
		f, err := e.Fault()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

func startNodes(t *testing.T, n int) *local.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := local.Start(ctx, cluster.Config{Nodes: n, Dir: t.TempDir(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close(context.Background()) })
	return cl
}

func endpoints(cl *local.Cluster) []nemesis.Endpoint {
	var eps []nemesis.Endpoint
	for _, n := range cl.Processes() {
		eps = append(eps, nemesis.Endpoint{Name: n.Name(), Addr: n.Addr()})
	}
	return eps
}

func ping(t *testing.T, links *nemesis.Net, pw, client, node string) error {
	t.Helper()
	addr, err := links.Addr(client, node)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, Password: pw, MaxRetries: -1,
		ContextTimeoutEnabled: true, DialTimeout: 300 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	return c.Ping(ctx).Err()
}

// A cut drops the chosen client↔node links only, for connections opened
// before and after it, and the heal restores them.
func TestCutDropsOnlyChosenLinksAndHeals(t *testing.T) {
	cl := startNodes(t, 3)
	links, err := nemesis.NewNet([]string{"c1", "c2"}, endpoints(cl))
	if err != nil {
		t.Fatal(err)
	}
	defer links.Close()
	pw := cl.Password()
	ctx := context.Background()

	// A connection opened before the cut must hang too, not just new ones.
	addr, _ := links.Addr("c1", "n2")
	pre := redis.NewClient(&redis.Options{Addr: addr, Password: pw, MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 1})
	defer pre.Close()
	if err := pre.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	rec := &memRecorder{}
	nem := nemesis.New(rec)
	cut := nemesis.Cut{Net: links, Links: []history.Link{{Client: "c1", Node: "n2"}, {Client: "c1", Node: "n3"}}}
	id, err := nem.Start(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		client, node string
		reachable    bool
	}{
		{"c1", "n1", true}, {"c1", "n2", false}, {"c1", "n3", false},
		{"c2", "n1", true}, {"c2", "n2", true}, {"c2", "n3", true},
	} {
		err := ping(t, links, pw, tc.client, tc.node)
		if tc.reachable && err != nil {
			t.Errorf("%s→%s during cut: %v, want reachable", tc.client, tc.node, err)
		}
		if !tc.reachable && !isTimeout(err) {
			t.Errorf("%s→%s during cut: %v, want a timeout (bytes dropped)", tc.client, tc.node, err)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if err := pre.Ping(pctx).Err(); err == nil {
		t.Error("connection opened before the cut still answers")
	}
	cancel()
	if got := nem.Active(); len(got) != 1 || got[0].ID != id {
		t.Errorf("Active = %+v, want the cut", got)
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"n2", "n3"} {
		if err := ping(t, links, pw, "c1", node); err != nil {
			t.Errorf("c1→%s after heal: %v", node, err)
		}
	}
	if err := nem.Stop(ctx, id); err == nil {
		t.Error("stopping a healed fault again succeeded")
	}
	faults := rec.faults(t)
	if len(faults) != 2 || faults[0].Phase != history.PhaseStart || faults[1].Phase != history.PhaseStop ||
		faults[0].ID != id || faults[1].ID != id || faults[0].Kind != "cut" || len(faults[0].Links) != 2 {
		t.Errorf("recorded faults %+v, want start and stop of one cut of two links", faults)
	}
	if faults[0].Detail != "c1 ✂ n2,n3" {
		t.Errorf("detail %q", faults[0].Detail)
	}
}

func TestCutUnknownLinkFailsAndLeavesNothing(t *testing.T) {
	cl := startNodes(t, 2)
	links, err := nemesis.NewNet([]string{"c1"}, endpoints(cl))
	if err != nil {
		t.Fatal(err)
	}
	defer links.Close()
	rec := &memRecorder{}
	nem := nemesis.New(rec)
	_, err = nem.Start(context.Background(), nemesis.Cut{Net: links,
		Links: []history.Link{{Client: "c1", Node: "n1"}, {Client: "c9", Node: "n1"}}})
	var unknown *nemesis.UnknownLinkError
	if !errors.As(err, &unknown) {
		t.Fatalf("got %v, want UnknownLinkError", err)
	}
	if len(rec.events) != 0 || len(nem.Active()) != 0 {
		t.Errorf("failed injection left events %v / active %v", rec.events, nem.Active())
	}
	// The link that was cut before the error must have been healed.
	if err := ping(t, links, cl.Password(), "c1", "n1"); err != nil {
		t.Errorf("c1→n1 after failed cut: %v", err)
	}
}

// HealAll undoes every fault, newest first, records each end and refuses
// new faults afterwards.
func TestHealAllRestoresClocksAndLinks(t *testing.T) {
	cl := startNodes(t, 2)
	links, err := nemesis.NewNet([]string{"c1"}, endpoints(cl))
	if err != nil {
		t.Fatal(err)
	}
	defer links.Close()
	ctx := context.Background()
	rec := &memRecorder{}
	nem := nemesis.New(rec)
	n1, _ := cl.Process("n1")
	for _, f := range []nemesis.Fault{
		nemesis.ClockJump{Node: n1, By: 5 * time.Second},
		nemesis.ClockJump{Node: n1, By: -2 * time.Second},
		nemesis.Cut{Net: links, Links: []history.Link{{Client: "c1", Node: "n2"}}},
	} {
		if _, err := nem.Start(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if got := n1.ClockOffset(); got != 3*time.Second {
		t.Errorf("offset after +5s and -2s = %v, want 3s", got)
	}
	if err := nem.HealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := n1.ClockOffset(); got != 0 {
		t.Errorf("offset after HealAll = %v, want 0", got)
	}
	if err := ping(t, links, cl.Password(), "c1", "n2"); err != nil {
		t.Errorf("c1→n2 after HealAll: %v", err)
	}
	faults := rec.faults(t)
	if len(faults) != 6 {
		t.Fatalf("got %d fault events, want 6", len(faults))
	}
	for i, want := range []int{3, 2, 1} {
		if f := faults[3+i]; f.Phase != history.PhaseStop || f.ID != want {
			t.Errorf("stop %d = %+v, want stop of fault %d", i, f, want)
		}
	}
	if faults[0].Detail != "n1 clock +5s" || faults[1].Detail != "n1 clock -2s" {
		t.Errorf("clock details %q, %q", faults[0].Detail, faults[1].Detail)
	}
	if _, err := nem.Start(ctx, nemesis.ClockJump{Node: n1, By: time.Second}); !errors.Is(err, nemesis.ErrClosed) {
		t.Errorf("Start after HealAll: %v, want ErrClosed", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
