package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/history"
	"splitbrain/nemesis"
	"splitbrain/redlock"
)

var schemes = []redlock.Fencing{redlock.FenceSimple, redlock.FenceTwoRound}

// TestTokensIncreaseWithoutFaults: competing clients (separate Lockers with
// their own connections, two goroutines each) take the lock 1,000 times in
// all. In the order the critical sections ran, two-round tokens strictly
// increase, and so do simple tokens whenever the winning attempt began
// after the previous holder had the lock. An attempt that began earlier
// and won only after that holder's whole tenure was delayed across it —
// asynchrony, which the simple scheme does not survive (see FenceSimple);
// such pairs are counted and logged, not judged.
func TestTokensIncreaseWithoutFaults(t *testing.T) {
	_, clients := startCluster(t, 5)
	cl := clusterOf(t, clients)
	const total, lockers, perLocker = 1000, 3, 2
	type acquisition struct {
		token   int64
		started time.Time // the winning attempt began
		held    time.Time // Lock had returned: the lock was held
	}
	for _, scheme := range schemes {
		t.Run(scheme.String(), func(t *testing.T) {
			key := "lock:fence-increase:" + scheme.String()
			var (
				mu     sync.Mutex
				seq    []acquisition
				inside atomic.Int32
			)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			for i := range lockers {
				// A generous node timeout: "no faults" includes no
				// timeouts on a loaded machine.
				l := newLocker(t, cl.newClients(t), redlock.Options{Fencing: scheme, NodeTimeout: 2 * time.Second})
				for range perLocker {
					wg.Go(func() {
						for ctx.Err() == nil {
							lease, err := l.Lock(ctx, key, 10*time.Second)
							if err != nil && ctx.Err() != nil {
								return // the others are done
							}
							if err != nil {
								t.Errorf("locker %d: Lock: %v", i, err)
								return
							}
							held := time.Now()
							if inside.Add(1) != 1 {
								t.Error("two clients inside the critical section")
							}
							mu.Lock()
							done := len(seq) >= total
							if !done {
								seq = append(seq, acquisition{lease.Token, lease.Start, held})
							}
							mu.Unlock()
							inside.Add(-1)
							if _, err := l.Release(ctx, lease); err != nil {
								t.Errorf("locker %d: Release: %v", i, err)
							}
							if done {
								cancel()
							}
						}
					})
				}
			}
			wg.Wait()
			if len(seq) < total {
				t.Fatalf("only %d acquisitions", len(seq))
			}
			var overlapping, notIncreasing int
			for i := 1; i < len(seq); i++ {
				prev, cur := seq[i-1], seq[i]
				successive := cur.started.After(prev.held)
				if !successive {
					overlapping++
				}
				if cur.token > prev.token {
					continue
				}
				if successive || scheme == redlock.FenceTwoRound {
					t.Fatalf("acquisition %d got token %d after %d (its attempt began %v after the previous holder had the lock)",
						i, cur.token, prev.token, cur.started.Sub(prev.held))
				}
				notIncreasing++
			}
			t.Logf("%d acquisitions, tokens %d..%d; %d won by attempts that began before the previous holder had the lock, %d of them without a larger token",
				len(seq), seq[0].token, seq[len(seq)-1].token, overlapping, notIncreasing)
		})
	}
}

// TestTokensUnderLinkFaults makes the nodes' counters diverge with link
// cuts, then lets a client acquire through the lagging nodes: the simple
// scheme hands it a token lower than an earlier one, the two-round scheme
// does not.
//
//  1. c1, cut from n3, n4, n5, tries and fails three times: n1 and n2 grant
//     (and count) each attempt, the others never see them.
//  2. c2, with every link, acquires: simple takes the maximum, n1's count.
//  3. c3, cut from n1 and n2, acquires on n3, n4, n5.
func TestTokensUnderLinkFaults(t *testing.T) {
	t.Parallel() // mostly waiting
	_, clients := startCluster(t, 5)
	cl := clusterOf(t, clients)
	net, err := nemesis.NewNet([]string{"c1", "c2", "c3"}, cl.endpoints())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(net.Close)
	cut := func(t *testing.T, client string, nodes ...string) func() {
		t.Helper()
		var links []history.Link
		for _, n := range nodes {
			links = append(links, history.Link{Client: client, Node: n})
		}
		heal, err := nemesis.Cut{Net: net, Links: links}.Inject(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := heal(context.Background()); err != nil {
				t.Errorf("heal: %v", err)
			}
		}
	}
	for _, scheme := range schemes {
		t.Run(scheme.String(), func(t *testing.T) {
			key := "lock:fence-faults:" + scheme.String()
			lockers := map[string]*redlock.Locker{}
			for _, c := range []string{"c1", "c2", "c3"} {
				// A node timeout no loaded machine reaches: only the cut
				// links may go unanswered.
				lockers[c] = newLocker(t, cl.proxiedClients(t, net, c), redlock.Options{Fencing: scheme, NodeTimeout: time.Second})
			}

			heal := cut(t, "c1", "n3", "n4", "n5")
			for range 3 {
				if _, err := lockers["c1"].TryLock(t.Context(), key, 5*time.Second); err == nil {
					t.Fatal("c1 acquired with 2 of 5 nodes")
				}
			}
			heal()
			counters := counterValues(t, clients, key)

			first, err := lockers["c2"].TryLock(t.Context(), key, 5*time.Second)
			if err != nil {
				t.Fatalf("c2: %v", err)
			}
			if _, err := lockers["c2"].Release(t.Context(), first); err != nil {
				t.Fatalf("c2 release: %v", err)
			}

			heal = cut(t, "c3", "n1", "n2")
			second, err := lockers["c3"].TryLock(t.Context(), key, 5*time.Second)
			heal()
			if err != nil {
				t.Fatalf("c3: %v", err)
			}
			if _, err := lockers["c3"].Release(t.Context(), second); err != nil {
				t.Errorf("c3 release: %v", err)
			}
			t.Logf("counters after c1's attempts %v; c2 got token %d on %v, then c3 got %d on %v",
				counters, first.Token, first.Granted, second.Token, second.Granted)

			switch scheme {
			case redlock.FenceSimple:
				if second.Token >= first.Token {
					t.Errorf("simple scheme: token %d after %d; the faults should have made it go backwards", second.Token, first.Token)
				}
			case redlock.FenceTwoRound:
				if second.Token <= first.Token {
					t.Errorf("two-round scheme: token %d after %d: went backwards", second.Token, first.Token)
				}
			}
		})
	}
}

func counterValues(t *testing.T, clients []*redis.Client, key string) []string {
	t.Helper()
	out := make([]string, len(clients))
	for i, c := range clients {
		out[i] = valueOn(t, c, redlock.CounterKey(key))
	}
	return out
}

// testCluster gives tests more connections to the nodes startCluster
// started: direct, or through a client's proxies.
type testCluster struct {
	addrs    []string
	password string
}

func clusterOf(t *testing.T, clients []*redis.Client) testCluster {
	t.Helper()
	tc := testCluster{password: clients[0].Options().Password}
	for _, c := range clients {
		tc.addrs = append(tc.addrs, c.Options().Addr)
	}
	return tc
}

func (tc testCluster) endpoints() []nemesis.Endpoint {
	var eps []nemesis.Endpoint
	for i, a := range tc.addrs {
		eps = append(eps, nemesis.Endpoint{Name: fmt.Sprintf("n%d", i+1), Addr: a})
	}
	return eps
}

func (tc testCluster) newClients(t *testing.T) []*redis.Client {
	t.Helper()
	return dial(t, tc.addrs, tc.password)
}

func (tc testCluster) proxiedClients(t *testing.T, net *nemesis.Net, client string) []*redis.Client {
	t.Helper()
	var addrs []string
	for _, ep := range tc.endpoints() {
		a, err := net.Addr(client, ep.Name)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, a)
	}
	return dial(t, addrs, tc.password)
}

func dial(t *testing.T, addrs []string, password string) []*redis.Client {
	t.Helper()
	var cs []*redis.Client
	for _, a := range addrs {
		c := redis.NewClient(redlock.ClientOptions(a, password))
		t.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
	}
	return cs
}
