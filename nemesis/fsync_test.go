package nemesis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/fault"
	"splitbrain/nemesis"
)

// A slow disk on real servers. Under appendfsync always each write waits
// for its fsync, so a write waits out the delay; the heal lets a write
// already waiting go at once. Under everysec the writes since the last
// fsync stay in the page cache while the disk is slow, and a power loss
// takes them: the healed node comes back without them; on a healthy disk
// the same writes, a second and a half old, survive the power loss.
func TestSlowFsync(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, p cluster.Persistence) *local.Process {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cl, err := local.Start(ctx, cluster.Config{Nodes: 1, Dir: t.TempDir(), CacheDir: t.TempDir(), Persistence: p})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close(context.Background()) })
		return cl.Processes()[0]
	}
	t.Run("always: a write waits, the heal frees it", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n := start(t, cluster.PersistAOFAlways)
		// A client that waits for replies as long as the disk makes them.
		opt := *n.Admin().Options()
		opt.ReadTimeout = 30 * time.Second
		c := redis.NewClient(&opt)
		defer c.Close()
		nem := nemesis.New(&memRecorder{})
		defer nem.HealAll(ctx)
		const delay = 3 * time.Second
		id, err := nem.Start(ctx, nemesis.SlowFsync{Node: n, Delay: delay})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := c.Set(ctx, "slow", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		// A lower bound: a loaded machine makes the write slower, never
		// faster.
		if took := time.Since(t0); took < delay*3/4 {
			t.Errorf("a write under appendfsync always took %v with each fsync held %v; want it to wait for its fsync", took, delay)
		}
		// The next write waits too, until the heal lets it go.
		done := make(chan error, 1)
		t0 = time.Now()
		go func() { done <- c.Set(ctx, "freed", "v", 0).Err() }()
		time.Sleep(300 * time.Millisecond)
		if err := nem.Stop(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if took := time.Since(t0); took >= delay {
			t.Errorf("a write waiting when the disk healed took %v, the whole delay of %v: the heal did not free it", took, delay)
		}
	})
	t.Run("everysec: a power loss takes what the slow disk had not synced", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n := start(t, cluster.PersistAOFEverysec)
		nem := nemesis.New(&memRecorder{})
		defer nem.HealAll(ctx)
		// A healthy disk: a second and a half after the writes, everysec
		// has synced them, and they survive the power loss.
		for i := range 10 {
			if err := n.Admin().Set(ctx, fmt.Sprintf("kept%d", i), "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(1500 * time.Millisecond)
		slow, err := nem.Start(ctx, nemesis.SlowFsync{Node: n, Delay: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := n.Admin().Set(ctx, fmt.Sprintf("lost%d", i), "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// Two everysec fsyncs would have come by now on a healthy disk.
		time.Sleep(2 * time.Second)
		kill, err := nem.Start(ctx, nemesis.Kill{Node: n, Power: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []int{slow, kill} {
			if err := nem.Stop(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "the node has loaded its AOF", func() error { return n.Admin().Ping(ctx).Err() })
		for i := range 10 {
			if !exists(t, n, fmt.Sprintf("kept%d", i)) {
				t.Errorf("kept%d, synced before the disk was slow, lost to the power loss", i)
			}
			if exists(t, n, fmt.Sprintf("lost%d", i)) {
				t.Errorf("lost%d, written while every fsync waited, survived the power loss", i)
			}
		}
	})
}

// A slow disk needs a kind whose servers sync through the shim.
func TestSlowFsyncRefusedWhereFsyncsAreNotSeen(t *testing.T) {
	n := fakeNode{name: "n1", kind: &cluster.Kind{Name: "etcd", Faults: []fault.Capability{fault.Kill}}}
	err := nemesis.SlowFsync{Node: n, Delay: time.Second}.Available()
	var ue *cluster.UnsupportedError
	if !errors.As(err, &ue) || ue.Fault != fault.Fsync {
		t.Errorf("a slow disk on an etcd node: %v, want an UnsupportedError of %q", err, fault.Fsync)
	}
	if d := (nemesis.SlowFsync{Node: n, Delay: time.Second}).Describe(); d.Kind != fault.KindFsyncDelay || !strings.Contains(d.Detail, "each fsync waits 1s") {
		t.Errorf("described as %+v", d)
	}
}
