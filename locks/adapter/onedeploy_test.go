package adapter

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/redlock"
	"splitbrain/workload"
)

// oneNode starts one redis-server for a test and returns it with a client
// factory (each client its own connection, as each harness client has).
func oneNode(t *testing.T) (*local.Process, func() *redis.Client) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (%v): these tests need a real Redis", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl, err := local.Start(ctx, cluster.Config{Nodes: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close(context.Background()) })
	n := cl.Processes()[0]
	return n, func() *redis.Client { return connect(t, n.Addr(), cl.Password()) }
}

// connect is a client of addr with the harness's go-redis options, and a
// read timeout that outlasts a WAIT of up to a second.
func connect(t *testing.T, addr, password string) *redis.Client {
	opts := redlock.ClientOptions(addr, password)
	opts.ReadTimeout = 2 * time.Second
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newWaitReplicas(t *testing.T, c *redis.Client) *WaitReplicas {
	t.Helper()
	w, err := NewWaitReplicas(c)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The one-deployment adapters on a real node: granted, refused while
// held, extended, released, refused to release or extend once gone, and an
// attempt whose reply never came is unknown, not refused — the node ran it
// after all.
func TestOneDeploymentAdapters(t *testing.T) {
	node, client := oneNode(t)
	tests := []struct {
		name string
		new  func() workload.Lock
		// wantDeadline: the lease carries a validity deadline within
		// the TTL; false: the lock's belief has none (see the adapter).
		wantDeadline bool
	}{
		{"redislock", func() workload.Lock { return NewRedislock(client()) }, true},
		{"wait-replicas", func() workload.Lock { return newWaitReplicas(t, client()) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			key := "adapter:" + tt.name
			a, b := tt.new(), tt.new()

			before := time.Now()
			lease, err := a.Acquire(ctx, key, time.Second)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if lease.Key != key || lease.Value == "" || lease.Token != nil {
				t.Errorf("lease %+v: want the key, a value and no token", lease)
			}
			if got := !lease.Deadline.IsZero(); got != tt.wantDeadline {
				t.Errorf("lease deadline %v, want one: %v", lease.Deadline, tt.wantDeadline)
			}
			if tt.wantDeadline && (lease.Deadline.Before(before.Add(time.Second)) || lease.Deadline.After(time.Now().Add(time.Second))) {
				t.Errorf("deadline %v after the call began, want the TTL from when Acquire returned", lease.Deadline.Sub(before))
			}
			if d := node.Admin().PTTL(ctx, key).Val(); d <= 0 || d > time.Second {
				t.Errorf("PTTL %v on the node, want the TTL", d)
			}
			if _, err := b.Acquire(ctx, key, time.Second); !errors.Is(err, workload.ErrNotAcquired) {
				t.Errorf("second client's Acquire on a held key: %v, want workload.ErrNotAcquired", err)
			}

			ext, err := a.Extend(ctx, lease, 10*time.Second)
			if err != nil {
				t.Fatalf("Extend: %v", err)
			}
			if ext.Value != lease.Value || (tt.wantDeadline && !ext.Deadline.After(lease.Deadline.Add(5*time.Second))) {
				t.Errorf("extended lease %+v, want the same value and a deadline about 10s out", ext)
			}
			if d := node.Admin().PTTL(ctx, key).Val(); d <= 5*time.Second {
				t.Errorf("PTTL %v after extending to 10s", d)
			}

			if err := a.Release(ctx, ext); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if node.Admin().Exists(ctx, key).Val() != 0 {
				t.Error("the key is still there after Release")
			}
			if err := a.Release(ctx, ext); !errors.Is(err, workload.ErrNotHeld) {
				t.Errorf("second Release: %v, want workload.ErrNotHeld", err)
			}
			if _, err := a.Extend(ctx, ext, time.Second); !errors.Is(err, workload.ErrNotExtended) {
				t.Errorf("Extend after Release: %v, want workload.ErrNotExtended", err)
			}
			again, err := b.Acquire(ctx, key, time.Second)
			if err != nil {
				t.Fatalf("second client after the release: %v", err)
			}
			if err := b.Release(ctx, again); err != nil {
				t.Errorf("second client's Release: %v", err)
			}
			if err := b.Release(ctx, &workload.Lease{Key: key, Value: "x"}); err == nil || errors.Is(err, workload.ErrNotHeld) {
				t.Errorf("Release of a foreign lease: %v, want an argument error", err)
			}

			// Unknown: the node is stopped, the attempt times out, and
			// the node runs it once it resumes.
			if err := node.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err = a.Acquire(tctx, key, 5*time.Second)
			cancel()
			if resumeErr := node.Resume(ctx); resumeErr != nil {
				t.Fatal(resumeErr)
			}
			if err == nil || errors.Is(err, workload.ErrNotAcquired) {
				t.Errorf("Acquire against a stopped node: %v, want an unknown outcome (neither a lease nor workload.ErrNotAcquired)", err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for node.Admin().Exists(ctx, key).Val() == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if node.Admin().Exists(ctx, key).Val() == 0 {
				t.Error("the unanswered attempt never took the key: the test shows nothing about unknown outcomes")
			}
			node.Admin().Del(ctx, key)
		})
	}
}
