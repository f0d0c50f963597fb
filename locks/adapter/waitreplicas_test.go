package adapter

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/workload"
)

// masterWithReplicas starts n1 and n asynchronous replicas of it, synced.
func masterWithReplicas(t *testing.T, n int) (*local.Cluster, []*local.Process) {
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
	var reps []*local.Process
	for i := range n {
		name := fmt.Sprintf("r%d", i+1)
		if _, err := cluster.StartReplica(ctx, cl, cluster.ReplicaSpec{Name: name, Of: "n1", Via: cl.Processes()[0].Addr()}); err != nil {
			t.Fatal(err)
		}
		p, _ := cl.Process(name)
		reps = append(reps, p)
	}
	// A replica answers before its first sync is done; until then WAIT
	// counts it out (seen under load: "WAIT 2 1000 answered 0").
	for _, r := range reps {
		if err := r.WaitSynced(ctx); err != nil {
			t.Fatalf("%s: %v", r.Name(), err)
		}
	}
	return cl, reps
}

// Redisson's rule on real replicas: a lock is granted when at least one
// connected replica acknowledged it within the WAIT timeout — one of two
// is enough (Redisson issue 5256's grant) — and refused, its grant undone
// on the master, only when none did. A stopped replica is still connected
// as the master sees it: WAIT waits for it and times out.
func TestWaitReplicasCountsAcknowledgements(t *testing.T) {
	t.Parallel()
	// Redisson's default; a shorter WAIT was seen to time out before a
	// running replica's acknowledgement on this loaded machine.
	const wait = time.Second
	tests := []struct {
		name              string
		replicas, stopped int
		granted           bool
	}{
		{"no replica: no WAIT to judge", 0, 0, true},
		{"its replica acknowledges", 1, 0, true},
		{"its one replica stopped", 1, 1, false},
		{"one of two stopped", 2, 1, true},
		{"both stopped", 2, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			cl, reps := masterWithReplicas(t, tt.replicas)
			master := cl.Processes()[0]
			w := newWaitReplicas(t, connect(t, master.Addr(), cl.Password()))
			w.WaitTimeout = wait
			for _, r := range reps[:tt.stopped] {
				if err := r.Pause(ctx); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = r.Resume(context.Background()) })
			}
			start := time.Now()
			lease, err := w.Acquire(ctx, "lock", 5*time.Second)
			took := time.Since(start)
			if tt.granted != (err == nil) || (err != nil && !errors.Is(err, workload.ErrNotAcquired)) {
				t.Fatalf("Acquire: lease %v, err %v; want granted %v, else workload.ErrNotAcquired", lease, err, tt.granted)
			}
			if tt.stopped > 0 && took < wait {
				t.Errorf("Acquire took %v with a replica stopped, want at least the WAIT timeout %v", took, wait)
			}
			if tt.stopped == 0 && took >= wait {
				t.Errorf("Acquire took %v with every replica up, want the acknowledgements before the timeout", took)
			}
			held := master.Admin().HExists(ctx, "lock", w.field).Val()
			if held != tt.granted {
				t.Errorf("the master holds the field: %v; want %v (a refusal unlocks what the script granted)", held, tt.granted)
			}
			if tt.granted {
				// Every running replica acknowledged, so holds it.
				for _, r := range reps[tt.stopped:] {
					if !r.Admin().HExists(ctx, "lock", w.field).Val() {
						t.Errorf("%s acknowledged the lock but has no field", r.Name())
					}
				}
				if err := w.Release(ctx, lease); err != nil && tt.stopped == 0 {
					t.Errorf("Release: %v", err)
				}
			}
		})
	}
}

// The watchdog keeps a lease-time-300ms lock alive for as long as the
// client holds it; a client stopped at the gate stops its watchdog with
// it, the key expires and another client takes the lock — and the
// watchdog, back, finds its field gone and stops. Re-entry counts.
func TestWaitReplicasWatchdog(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	node, client := oneNode(t)
	a, b := newWaitReplicas(t, client()), newWaitReplicas(t, client())
	// Closing frozen stops a at its gate until thawed is closed.
	frozen, thawed := make(chan struct{}), make(chan struct{})
	gate := func(ctx context.Context) {
		select {
		case <-frozen:
		default:
			return
		}
		select {
		case <-thawed:
		case <-ctx.Done():
		}
	}
	a.Hooks.Background = func(ctx context.Context) { gate(ctx) }
	const ttl = 300 * time.Millisecond

	lease, err := a.Acquire(ctx, "lock", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, "lock", ttl); err != nil {
		t.Fatalf("re-entry: %v", err)
	}
	if n := node.Admin().HGet(ctx, "lock", a.field).Val(); n != "2" {
		t.Errorf("re-entrancy counter %q, want 2", n)
	}
	time.Sleep(4 * ttl)
	if d := node.Admin().PTTL(ctx, "lock").Val(); d <= 0 {
		t.Fatalf("PTTL %v after 4 lease times held: the watchdog did not renew", d)
	}
	if _, err := b.Acquire(ctx, "lock", ttl); !errors.Is(err, workload.ErrNotAcquired) {
		t.Fatalf("b while a's watchdog runs: %v, want workload.ErrNotAcquired", err)
	}

	// Freeze a: its watchdog stops at the gate, the key runs out.
	close(frozen)
	var bl *workload.Lease
	deadline := time.Now().Add(5 * time.Second)
	for bl == nil && time.Now().Before(deadline) {
		if bl, err = b.Acquire(ctx, "lock", ttl); err != nil && !errors.Is(err, workload.ErrNotAcquired) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if bl == nil {
		t.Fatal("b never got the lock while a was frozen")
	}
	close(thawed)
	// a's belief is whole (no deadline) while its watchdog finds the
	// field gone and stops.
	if !lease.Deadline.IsZero() {
		t.Errorf("lease deadline %v, want none", lease.Deadline)
	}
	for time.Now().Before(deadline) {
		a.mu.Lock()
		n := len(a.dogs)
		a.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.mu.Lock()
	if len(a.dogs) != 0 {
		t.Error("a's watchdog still runs after finding its field gone")
	}
	a.mu.Unlock()
	if err := a.Release(ctx, lease); !errors.Is(err, workload.ErrNotHeld) {
		t.Errorf("a's release of a lock b holds: %v, want workload.ErrNotHeld", err)
	}
	if !node.Admin().HExists(ctx, "lock", b.field).Val() {
		t.Error("a's release removed b's lock")
	}
	if err := b.Release(ctx, bl); err != nil {
		t.Errorf("b's release: %v", err)
	}
}
