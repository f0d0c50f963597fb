package workload_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"splitbrain/checker"
	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/history"
	"splitbrain/locks/adapter"
	"splitbrain/redlock"
	"splitbrain/workload"
)

// These tests run against real redis-server processes: lock nodes and a
// storage node outside the lock quorum.

// startNodes starts n redis-server nodes and returns a client per node.
func startNodes(t *testing.T, n int) []*redis.Client {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found in PATH (%v): these tests need a real Redis; install it (apt-get install -y redis-server)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := local.Start(ctx, cluster.Config{Nodes: n, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting %d redis-server nodes: %v", n, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.Close(ctx); err != nil {
			t.Errorf("stopping nodes: %v", err)
		}
	})
	var out []*redis.Client
	for _, node := range cl.Nodes() {
		c := redis.NewClient(redlock.ClientOptions(node.Addr(), cl.Password()))
		t.Cleanup(func() { _ = c.Close() })
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("ping %s: %v", node.Name(), err)
		}
		out = append(out, c)
	}
	return out
}

func i64(v int64) *int64 { return &v }

func TestStorageFencing(t *testing.T) {
	rdb := startNodes(t, 1)[0]
	ctx := context.Background()
	fenced := workload.NewStorage(rdb, true)
	steps := []struct {
		token   *int64
		v       int64
		seq     int64
		highest int64 // > 0: rejected below it
		err     error
	}{
		{i64(5), 1, 1, 0, nil},
		{i64(5), 2, 2, 0, nil}, // one lease may write again with its token
		{i64(7), 3, 3, 0, nil},
		{i64(6), 4, 0, 7, nil}, // stale: rejected
		{nil, 5, 0, 0, workload.ErrNoToken},
		{i64(1 << 52), 6, 4, 0, nil},
	}
	for i, st := range steps {
		seq, err := fenced.SetCounter(ctx, "c", st.token, st.v)
		var rej *workload.RejectedError
		switch {
		case st.highest > 0:
			if !errors.As(err, &rej) || rej.Highest != st.highest || rej.Token != *st.token {
				t.Fatalf("step %d: err %v, want rejected below %d", i, err, st.highest)
			}
		case st.err != nil:
			if !errors.Is(err, st.err) {
				t.Fatalf("step %d: err %v, want %v", i, err, st.err)
			}
		case err != nil || seq != st.seq:
			t.Fatalf("step %d: seq %d, err %v; want seq %d", i, seq, err, st.seq)
		}
	}
	if v, err := fenced.Counter(ctx, "c"); err != nil || v != 6 {
		t.Errorf("counter = %d, %v; want 6 (rejected writes left no trace)", v, err)
	}

	// Without fencing the same stale token is applied.
	open := workload.NewStorage(rdb, false)
	if _, err := open.SetCounter(ctx, "d", i64(9), 1); err != nil {
		t.Fatal(err)
	}
	if seq, err := open.SetCounter(ctx, "d", i64(3), 2); err != nil || seq != 2 {
		t.Errorf("unfenced stale write: seq %d, err %v; want applied", seq, err)
	}
	if seq, err := open.SetCounter(ctx, "d", nil, 3); err != nil || seq != 3 {
		t.Errorf("unfenced write without token: seq %d, err %v", seq, err)
	}
}

func TestStorageValues(t *testing.T) {
	rdb := startNodes(t, 1)[0]
	ctx := context.Background()
	st := workload.NewStorage(rdb, false)
	if v, err := st.Counter(ctx, "none"); err != nil || v != 0 {
		t.Errorf("missing counter = %d, %v", v, err)
	}
	b := map[string]decimal.Decimal{"a1": decimal.RequireFromString("0.10"), "a2": decimal.RequireFromString("0.20")}
	if _, err := st.SetBalances(ctx, "bank", nil, b); err != nil {
		t.Fatal(err)
	}
	got, err := st.Balances(ctx, "bank")
	if err != nil || len(got) != 2 || !got["a1"].Add(got["a2"]).Equal(decimal.RequireFromString("0.3")) {
		t.Errorf("balances = %v, %v; want 0.10 and 0.20 summing to exactly 0.30", got, err)
	}
	if s, err := st.Set(ctx, "set"); err != nil || len(s) != 0 {
		t.Errorf("missing set = %v, %v", s, err)
	}
	if _, err := st.WriteSet(ctx, "set", nil, []int64{3, 1_000_000_001, -2}); err != nil {
		t.Fatal(err)
	}
	if s, err := st.Set(ctx, "set"); err != nil || !slices.Equal(s, []int64{3, 1_000_000_001, -2}) {
		t.Errorf("set = %v, %v", s, err)
	}
}

// sequenceTokens stands in for a fenced lock: every lease gets the next
// number of one in-process counter, an ideal monotonic token source.
type sequenceTokens struct {
	workload.Lock
	next *atomic.Int64
}

func (s sequenceTokens) Acquire(ctx context.Context, key string, ttl time.Duration) (*workload.Lease, error) {
	l, err := s.Lock.Acquire(ctx, key, ttl)
	if err == nil {
		n := s.next.Add(1)
		l.Token = &n
	}
	return l, err
}

// rig is a real setup: three lock nodes, a storage node, clients with their
// own connections.
type rig struct {
	t       *testing.T
	lockers [][]*redis.Client
	storage *redis.Client
	rec     *history.Recorder
	buf     *bytes.Buffer
	tokens  *atomic.Int64
}

func newRig(t *testing.T) *rig {
	nodes := startNodes(t, 4)
	buf := &bytes.Buffer{}
	return &rig{t: t, lockers: [][]*redis.Client{nodes[:3]}, storage: nodes[3], buf: buf,
		rec: history.NewRecorder(buf, time.Now()), tokens: &atomic.Int64{}}
}

func (r *rig) client(name string, fenced bool) *workload.Client {
	l, err := redlock.New(r.lockers[0], redlock.Options{NodeTimeout: 100 * time.Millisecond})
	if err != nil {
		r.t.Fatal(err)
	}
	var lock workload.Lock = &adapter.Redlock{Locker: l, Nodes: []string{"n1", "n2", "n3"}}
	if fenced {
		lock = sequenceTokens{Lock: lock, next: r.tokens}
	}
	return workload.NewClient(name, lock, r.rec)
}

func (r *rig) events() []history.Event {
	ev, err := history.Parse(bytes.NewReader(r.buf.Bytes()), "history")
	if err != nil {
		r.t.Fatal(err)
	}
	return ev
}

// Kleppmann's figure 1 on real nodes, with the pause played by a think time
// longer than the lease: c1 acquires and reads; its validity runs out while
// it thinks; c2 acquires, reads, writes, releases; c1 writes its stale
// value. Without fencing each resource shows the harm; with fencing the
// storage rejects c1's write and the run is valid.
func TestPauseInCriticalSectionRealRun(t *testing.T) {
	const ttl = 400 * time.Millisecond
	for _, kind := range []workload.Kind{workload.Counter, workload.Bank, workload.Set} {
		for _, fenced := range []bool{false, true} {
			name := string(kind) + "/unfenced"
			if fenced {
				name = string(kind) + "/fenced"
			}
			t.Run(name, func(t *testing.T) {
				r := newRig(t)
				ctx := context.Background()
				st1, st2 := workload.NewStorage(r.storage, fenced), workload.NewStorage(r.storage, fenced)
				if err := workload.Init(ctx, r.rec, st1, kind, "k", 3); err != nil {
					t.Fatal(err)
				}
				c1, c2 := r.client("c1", fenced), r.client("c2", fenced)
				if err := c1.Acquire(ctx, "k", ttl); err != nil {
					t.Fatal(err)
				}
				stale := readAndPlan(t, ctx, kind, c1, st1, 1)
				// c1 "pauses" past its validity and the keys' expiry.
				time.Sleep(time.Until(c1.Lease("k").Deadline) + ttl/2)
				if err := c2.Acquire(ctx, "k", ttl); err != nil {
					t.Fatalf("c2 could not acquire after c1's lease expired: %v", err)
				}
				if err := readAndPlan(t, ctx, kind, c2, st2, 2)(); err != nil {
					t.Fatalf("c2's write: %v", err)
				}
				if err := c2.Release(ctx, "k"); err != nil {
					t.Fatal(err)
				}
				err := stale()
				var rej *workload.RejectedError
				if fenced != errors.As(err, &rej) {
					t.Fatalf("c1's stale write: err %v, fenced %v", err, fenced)
				}
				_ = c1.Release(ctx, "k")
				if err := workload.FinalRead(ctx, r.rec, st1, kind, "k"); err != nil {
					t.Fatal(err)
				}

				events := r.events()
				res := checker.Check(events)
				want := checker.Invalid
				if fenced {
					want = checker.Valid
				}
				if res.Verdict != want {
					t.Fatalf("verdict %s (%s), want %s", res.Verdict, res.Reason, want)
				}
				var prop checker.Property
				for _, p := range res.Properties {
					if p.Name == string(kind) {
						prop = p
					}
				}
				if prop.Verdict != want {
					t.Errorf("%s property = %+v, want %s", kind, prop, want)
				}
				if res.CriticalSection.Verdict != checker.Invalid {
					t.Errorf("P2 = %+v, want the critical sections to overlap", res.CriticalSection)
				}
				if fenced {
					// The stale write is in the history, as rejected.
					var rejected []history.Event
					for _, e := range events {
						if e.Process == "c1" && e.Type == history.Fail && e.F != history.Release && e.F != history.Read {
							rejected = append(rejected, e)
						}
					}
					if len(rejected) != 1 || *rejected[0].Token != 1 || !strings.Contains(rejected[0].Err, "rejected by fencing") {
						t.Errorf("rejected writes in the history: %+v", rejected)
					}
					if res.Fencing == nil || res.Fencing.Rejected != 1 || res.Fencing.Verdict != checker.Valid {
						t.Errorf("fencing = %+v", res.Fencing)
					}
					if !events[0].Fencing || events[0].Process != history.ProcessInit {
						t.Errorf("the initial write does not say the storage fences: %+v", events[0])
					}
				}
				t.Logf("%s: %s", res.Verdict, res.Reason)
			})
		}
	}
}

// Tokens without a fencing storage: the lock hands out increasing tokens but
// the storage does not check them, so it accepts c1's stale token after
// c2's — the fencing check names it, and the counter shows the harm.
func TestStaleTokenAcceptedWithoutFencingRealRun(t *testing.T) {
	const ttl = 400 * time.Millisecond
	r := newRig(t)
	ctx := context.Background()
	st := workload.NewStorage(r.storage, false)
	if err := workload.Init(ctx, r.rec, st, workload.Counter, "k", 0); err != nil {
		t.Fatal(err)
	}
	c1, c2 := r.client("c1", true), r.client("c2", true)
	if err := c1.Acquire(ctx, "k", ttl); err != nil {
		t.Fatal(err)
	}
	stale := readAndPlan(t, ctx, workload.Counter, c1, st, 1)
	time.Sleep(time.Until(c1.Lease("k").Deadline) + ttl/2)
	if err := c2.Acquire(ctx, "k", ttl); err != nil {
		t.Fatal(err)
	}
	if err := readAndPlan(t, ctx, workload.Counter, c2, st, 2)(); err != nil {
		t.Fatal(err)
	}
	_ = c2.Release(ctx, "k")
	if err := stale(); err != nil {
		t.Fatalf("unfenced storage rejected c1's write: %v", err)
	}
	_ = c1.Release(ctx, "k")
	if err := workload.FinalRead(ctx, r.rec, st, workload.Counter, "k"); err != nil {
		t.Fatal(err)
	}
	res := checker.Check(r.events())
	f := res.Fencing
	if res.Verdict != checker.Invalid || f == nil || f.Verdict != checker.Invalid || len(f.Violations) != 1 || f.Violations[0].Later.Client != "c1" {
		t.Fatalf("verdict %s (%s); fencing %+v", res.Verdict, res.Reason, f)
	}
	if res.Counter.Verdict != checker.Invalid {
		t.Errorf("counter %s", res.Counter.Verdict)
	}
	t.Log(f.Violations[0].Text)
}

// readAndPlan reads the resource as c and returns the write it would make
// from that read: +1, a transfer a1→a2 of 10.00, or adding n.
func readAndPlan(t *testing.T, ctx context.Context, kind workload.Kind, c *workload.Client, st *workload.Storage, n int64) func() error {
	t.Helper()
	switch kind {
	case workload.Counter:
		v, err := c.ReadCounter(ctx, st, "k")
		if err != nil {
			t.Fatal(err)
		}
		return func() error { return c.WriteCounter(ctx, st, "k", v+1) }
	case workload.Bank:
		b, err := c.ReadBalances(ctx, st, "k")
		if err != nil {
			t.Fatal(err)
		}
		// Different destinations, so the stale write changes the total.
		to := "a2"
		if n == 2 {
			to = "a3"
		}
		return func() error { return c.Transfer(ctx, st, "k", b, "a1", to, decimal.New(1000*n, -2)) }
	default:
		s, err := c.ReadSet(ctx, st, "k")
		if err != nil {
			t.Fatal(err)
		}
		return func() error { return c.AddToSet(ctx, st, "k", s, n) }
	}
}

// Generated workloads on real nodes without faults: short think times keep
// every critical section inside its lease, and every check passes.
func TestGeneratedWorkloadsAreValid(t *testing.T) {
	for _, kind := range workload.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			r := newRig(t)
			cfg := workload.Config{Kind: kind, Keys: []string{"k1", "k2"}, TTL: time.Second, Duration: 700 * time.Millisecond,
				Think: func(rnd *rand.Rand) time.Duration { return time.Duration(1+rnd.IntN(5)) * time.Millisecond }}
			res := runGenerated(t, r, cfg, 3)
			if res.Verdict != checker.Valid {
				t.Fatalf("verdict %s (%s)", res.Verdict, res.Reason)
			}
			for _, p := range res.Properties {
				if p.Decides && p.Verdict != checker.Valid {
					t.Errorf("%s: %s (%s)", p.Name, p.Verdict, p.Reason)
				}
			}
			if kind.HasResource() && len(res.Properties) < 3 {
				t.Errorf("the %s resource was not checked: %+v", kind, res.Properties)
			}
		})
	}
}

// A think time far beyond the TTL, with two clients contending: the second
// acquires while the first thinks, and updates get lost.
func TestGeneratedCounterWithLongThinkLosesUpdates(t *testing.T) {
	r := newRig(t)
	cfg := workload.Config{Kind: workload.Counter, Keys: []string{"k"}, TTL: 300 * time.Millisecond, Duration: 2 * time.Second,
		Think: func(*rand.Rand) time.Duration { return time.Second }}
	res := runGenerated(t, r, cfg, 2)
	if res.Verdict != checker.Invalid || res.Counter.Verdict != checker.Invalid || res.Counter.LostUpdates == 0 {
		t.Fatalf("verdict %s (%s); counter %+v", res.Verdict, res.Reason, res.Counter)
	}
	if res.Properties[0].Verdict != checker.Valid {
		t.Errorf("P1 %+v: the lock itself kept its promise", res.Properties[0])
	}
}

func runGenerated(t *testing.T, r *rig, cfg workload.Config, clients int) checker.Result {
	t.Helper()
	ctx := context.Background()
	var st *workload.Storage
	if cfg.Kind.HasResource() {
		st = workload.NewStorage(r.storage, false)
	}
	if err := workload.Setup(ctx, r.rec, st, cfg); err != nil {
		t.Fatal(err)
	}
	var workers []workload.Worker
	for i := range clients {
		name := "c" + string(rune('1'+i))
		workers = append(workers, workload.Worker{Client: r.client(name, false), Storage: st,
			Rand: rand.New(rand.NewPCG(7, uint64(i)))})
	}
	if err := workload.Run(ctx, cfg, workers); err != nil {
		t.Fatal(err)
	}
	if err := workload.FinalReads(ctx, r.rec, st, cfg); err != nil {
		t.Fatal(err)
	}
	events := r.events()
	acquired, written := 0, 0
	for _, e := range events {
		if e.Type == history.OK && e.F == history.Acquire {
			acquired++
		}
		if e.Type == history.OK && (e.F == history.Write || e.F == history.Transfer || e.F == history.Add) && e.Process != history.ProcessInit {
			written++
		}
	}
	if acquired < 2 || (cfg.Kind.HasResource() && written < 2) {
		t.Fatalf("the run did too little to judge: %d acquires, %d writes", acquired, written)
	}
	res := checker.Check(events)
	t.Logf("%d events, %d acquires, %d writes: %s (%s)", len(events), acquired, written, res.Verdict, res.Reason)
	return res
}

// Fencing on with a lock that hands out no tokens cannot test fencing: the
// workload says so instead of recording writes that prove nothing.
func TestFencingWithoutTokensIsAnError(t *testing.T) {
	r := newRig(t)
	cfg := workload.Config{Kind: workload.Counter, Keys: []string{"k"}, TTL: time.Second, Duration: 300 * time.Millisecond,
		Think: func(*rand.Rand) time.Duration { return time.Millisecond }}
	st := workload.NewStorage(r.storage, true)
	if err := workload.Setup(context.Background(), r.rec, st, cfg); err != nil {
		t.Fatal(err)
	}
	err := workload.Run(context.Background(), cfg, []workload.Worker{{Client: r.client("c1", false), Storage: st, Rand: rand.New(rand.NewPCG(1, 1))}})
	if !errors.Is(err, workload.ErrNoToken) {
		t.Fatalf("err = %v, want ErrNoToken", err)
	}
	for _, e := range r.events() {
		if e.F == history.Write && e.Process != history.ProcessInit {
			t.Errorf("a write was recorded: %+v", e)
		}
	}
}
