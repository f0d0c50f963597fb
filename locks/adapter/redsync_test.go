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

// TestAdapters drives both lock adapters through the same contract on real
// redis-server nodes: the harness must be able to run any scenario against
// either.
func TestAdapters(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (%v): these tests need a real Redis", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl, err := local.Start(ctx, cluster.Config{Nodes: 5, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close(context.Background()) })
	names := []string{"n1", "n2", "n3", "n4", "n5"}
	clients := func() []*redis.Client {
		var cs []*redis.Client
		for _, n := range cl.Nodes() {
			c := redis.NewClient(redlock.ClientOptions(n.Addr(), cl.Password()))
			t.Cleanup(func() { _ = c.Close() })
			cs = append(cs, c)
		}
		return cs
	}
	ours := func(opts redlock.Options) workload.Lock {
		l, err := redlock.New(clients(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return &Redlock{Locker: l, Nodes: names}
	}
	const nodeTimeout = 200 * time.Millisecond
	tests := []struct {
		name      string
		new       func() workload.Lock
		wantToken bool
		wantNodes bool
	}{
		{"ours", func() workload.Lock { return ours(redlock.Options{NodeTimeout: nodeTimeout}) }, false, true},
		{"ours fenced", func() workload.Lock {
			return ours(redlock.Options{NodeTimeout: nodeTimeout, Fencing: redlock.FenceTwoRound})
		}, true, true},
		{"redsync", func() workload.Lock { return NewRedsync(clients(), nodeTimeout) }, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "adapter:" + tt.name
			a, b := tt.new(), tt.new()
			ctx := t.Context()

			lease, err := a.Acquire(ctx, key, time.Second)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if lease.Key != key || lease.Value == "" || time.Until(lease.Deadline) <= 0 || time.Until(lease.Deadline) > time.Second {
				t.Errorf("lease = %+v, want a value and a deadline within the TTL", lease)
			}
			if (lease.Token != nil) != tt.wantToken || (len(lease.Granted) == 5) != tt.wantNodes {
				t.Errorf("lease token %v, granted %v", lease.Token, lease.Granted)
			}
			if _, err := b.Acquire(ctx, key, time.Second); !errors.Is(err, workload.ErrNotAcquired) {
				t.Errorf("second client's Acquire on a held key: %v, want workload.ErrNotAcquired", err)
			}

			ext, err := a.Extend(ctx, lease, 10*time.Second)
			if err != nil {
				t.Fatalf("Extend: %v", err)
			}
			if !ext.Deadline.After(lease.Deadline.Add(5*time.Second)) || ext.Value != lease.Value {
				t.Errorf("extended lease %+v, want the same value and a deadline about 10s out", ext)
			}
			for i, n := range cl.Processes() {
				if d := n.Admin().PTTL(ctx, key).Val(); d <= time.Second {
					t.Errorf("%s: PTTL %v after extending to 10s", names[i], d)
				}
			}

			if err := a.Release(ctx, ext); err != nil {
				t.Fatalf("Release: %v", err)
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
			if _, err := b.Extend(ctx, &workload.Lease{Key: key, Value: "x"}, time.Second); err == nil || errors.Is(err, workload.ErrNotExtended) {
				t.Errorf("Extend of a foreign lease value: %v, want an argument error", err)
			}
		})
	}
	for _, n := range cl.Processes() {
		for _, tt := range tests {
			key := "adapter:" + tt.name
			if n.Admin().Exists(context.Background(), key).Val() != 0 {
				t.Errorf("%s: %s left behind", n.Name(), key)
			}
		}
	}
}
