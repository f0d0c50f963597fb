package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/history"
	"splitbrain/nemesis"
	"splitbrain/redlock"
)

// TestLostReplyLeavesNoKey: an attempt whose SET reached a node and was
// applied there, but whose reply never came back, fails (n1 and n2 hold
// another client's key) — and must not leave its key on that node.
//
// n3 is kept busy (DEBUG SLEEP) while c1's SET sits in its socket, so c1
// gives up on n3 after the node timeout. The link c1↔n3 is then cut, n3
// wakes and applies the SET, and its reply is dropped on the cut link. Only
// after that (checked on n3 directly) is the link healed and the attempt
// allowed to finish, so its rollback is the only thing that can remove the
// key.
func TestLostReplyLeavesNoKey(t *testing.T) {
	t.Parallel() // mostly waiting
	cl, clients := startCluster(t, 5)
	tc := clusterOf(t, clients)
	net, err := nemesis.NewNet([]string{"c1"}, tc.endpoints())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(net.Close)
	const key, foreign = "lock:lost-reply", "someone-else"
	setAll(t, clients[:2], key, foreign, time.Minute)

	// Connect c1 and load the scripts first: a connection's handshake
	// would wait for the sleeping node too, and a script n3 does not know
	// yet would be refused (NOSCRIPT) rather than applied when it wakes.
	proxied := tc.proxiedClients(t, net, "c1")
	for i, c := range proxied {
		if err := c.Ping(t.Context()).Err(); err != nil {
			t.Fatalf("ping node %d through c1's proxy: %v", i, err)
		}
	}
	warm := newLocker(t, clients, redlock.Options{})
	if ls, err := warm.TryLock(t.Context(), "lock:warm-up", time.Second); err != nil {
		t.Fatal(err)
	} else if _, err := warm.Release(t.Context(), ls); err != nil {
		t.Fatal(err)
	}

	n3 := redis.NewClient(&redis.Options{Addr: cl.Nodes()[2].Addr(), Password: cl.Password(), MaxRetries: -1, ReadTimeout: 30 * time.Second})
	defer n3.Close()
	slept := make(chan error, 1)
	go func() { slept <- n3.Do(context.Background(), "debug", "sleep", "1.5").Err() }()
	defer func() {
		if err := <-slept; err != nil {
			t.Errorf("DEBUG SLEEP: %v", err)
		}
	}()
	time.Sleep(200 * time.Millisecond) // let n3 fall asleep

	var landed, healErr error
	l := newLocker(t, proxied, redlock.Options{Hooks: redlock.Hooks{
		AfterReplies: func(ctx context.Context, k string) {
			heal, err := nemesis.Cut{Net: net, Links: []history.Link{{Client: "c1", Node: "n3"}}}.Inject(ctx)
			if err != nil {
				landed = err
				return
			}
			landed = waitForValue(ctx, clients[2], k)
			healErr = heal(ctx)
		},
	}})
	lease, err := l.TryLock(t.Context(), key, 20*time.Second)
	if landed != nil || healErr != nil {
		t.Fatalf("the SET never landed on n3 (%v) or the cut did not heal (%v)", landed, healErr)
	}
	var ae *redlock.AcquireError
	if lease != nil || !errors.As(err, &ae) {
		t.Fatalf("TryLock = %v, %v; want an AcquireError", lease, err)
	}
	if ae.Granted != 2 || ae.Held != 2 || ae.NodeErrs[2] == nil {
		t.Errorf("AcquireError = %+v: want n4, n5 granted, n1, n2 held, n3 unknown", ae)
	}
	t.Logf("attempt: %v", err)
	wantValues(t, clients, key, "", 2, 3, 4) // n3's write, whose reply was lost, is gone too
	wantValues(t, clients, key, foreign, 0, 1)
}

// waitForValue waits until key holds a value on c (which blocks while the
// node sleeps), for up to 10s.
func waitForValue(ctx context.Context, c *redis.Client, key string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		v, err := c.Get(rctx, key).Result()
		cancel()
		if err == nil && v != "" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("no value after 10s")
}
