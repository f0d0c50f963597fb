package redlock_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/redlock"
)

// pttls returns key's PTTL on every node (negative when absent).
func pttls(t *testing.T, clients []*redis.Client, key string) []time.Duration {
	t.Helper()
	out := make([]time.Duration, len(clients))
	for i, c := range clients {
		d, err := c.PTTL(context.Background(), key).Result()
		if err != nil {
			t.Fatalf("PTTL on node %d: %v", i, err)
		}
		out[i] = d
	}
	return out
}

func setAll(t *testing.T, clients []*redis.Client, key, value string, ttl time.Duration) {
	t.Helper()
	for i, c := range clients {
		if err := c.Set(context.Background(), key, value, ttl).Err(); err != nil {
			t.Fatalf("SET on node %d: %v", i, err)
		}
	}
}

func TestExtendMovesExpiryAndDeadline(t *testing.T) {
	_, clients := startCluster(t, 5)
	l := newLocker(t, clients, redlock.Options{})
	const key = "lock:extend"
	lease, err := l.TryLock(t.Context(), key, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := *lease

	ext, err := l.Extend(t.Context(), lease, 10*time.Second)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if ext.TTL != 10*time.Second || ext.Extensions != 1 || ext.Value != lease.Value || !slices.Equal(ext.Granted, []int{0, 1, 2, 3, 4}) {
		t.Errorf("extended lease = %+v", ext)
	}
	if got, want := ext.Deadline.Sub(ext.Start), ext.TTL-l.Drift(ext.TTL); got != want {
		t.Errorf("Deadline − Start = %v, want ttl − drift = %v", got, want)
	}
	if !ext.Start.After(lease.Start) || !ext.Deadline.After(lease.Deadline) {
		t.Errorf("extension did not move the lease forward: %v → %v", lease.Deadline, ext.Deadline)
	}
	for i, d := range pttls(t, clients, key) {
		if d <= time.Second {
			t.Errorf("node %d: PTTL %v after extending to 10s", i, d)
		}
	}
	if lease.Deadline != before.Deadline || lease.Extensions != 0 {
		t.Error("Extend modified the lease it was given")
	}
	if _, err := l.Release(t.Context(), ext); err != nil {
		t.Errorf("Release of the extended lease: %v", err)
	}
	wantValues(t, clients, key, "", 0, 1, 2, 3, 4)
}

// TestExtendOnlyOwnKey covers the two ways a lease can be gone from the
// nodes while the client still believes in it: the keys were taken over
// by another client, or they vanished. Extend must leave another client's
// key alone and must not re-create a vanished one.
func TestExtendOnlyOwnKey(t *testing.T) {
	_, clients := startCluster(t, 5)
	l := newLocker(t, clients, redlock.Options{})
	tests := []struct {
		name    string
		replace func(key string) // what happens to the keys behind the lease
		wantIs  []error
		foreign bool
	}{
		{
			name:    "taken over by another client",
			replace: func(key string) { setAll(t, clients, key, "other-client", time.Minute) },
			wantIs:  []error{redlock.ErrNotHeld, redlock.ErrNotOwner, redlock.ErrLostQuorum},
			foreign: true,
		},
		{
			name: "vanished",
			replace: func(key string) {
				for _, c := range clients {
					c.Del(context.Background(), key)
				}
			},
			wantIs: []error{redlock.ErrNotHeld, redlock.ErrLostQuorum},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "lock:extend-own:" + tt.name
			lease, err := l.TryLock(t.Context(), key, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			tt.replace(key)
			before := pttls(t, clients, key)

			ext, err := l.Extend(t.Context(), lease, 30*time.Second)
			if ext != nil || err == nil {
				t.Fatalf("Extend = %+v, %v; want an error", ext, err)
			}
			for _, target := range tt.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("error %v does not match %v", err, target)
				}
			}
			if errors.Is(err, redlock.ErrExpired) {
				t.Errorf("error %v matches ErrExpired while validity was left", err)
			}
			var ee *redlock.ExtendError
			if !errors.As(err, &ee) || len(ee.Extended) != 0 || (len(ee.Foreign) == 5) != tt.foreign {
				t.Errorf("ExtendError = %+v", ee)
			}
			after := pttls(t, clients, key)
			for i := range clients {
				if tt.foreign {
					// Untouched: still the minute set above, not 30s.
					if after[i] > before[i] || after[i] <= 30*time.Second {
						t.Errorf("node %d: other client's key PTTL %v → %v", i, before[i], after[i])
					}
					if v := valueOn(t, clients[i], key); v != "other-client" {
						t.Errorf("node %d: other client's key now %q", i, v)
					}
				} else if after[i] != -2*time.Nanosecond && after[i] >= 0 {
					t.Errorf("node %d: vanished key re-created (PTTL %v)", i, after[i])
				}
			}
		})
	}
}

// TestExtendFailsOnceValidityIsGone keeps the keys alive on the nodes (as
// nodes whose clocks run slow would) past the lease's deadline: the client
// must still refuse to extend, without touching the nodes.
func TestExtendFailsOnceValidityIsGone(t *testing.T) {
	t.Parallel() // mostly waiting
	_, clients := startCluster(t, 5)
	l := newLocker(t, clients, redlock.Options{})
	const key = "lock:extend-late"
	lease, err := l.TryLock(t.Context(), key, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		c.PExpire(t.Context(), key, time.Minute)
	}
	time.Sleep(time.Until(lease.Deadline) + 10*time.Millisecond)

	ext, err := l.Extend(t.Context(), lease, 10*time.Second)
	if ext != nil || !errors.Is(err, redlock.ErrExpired) || !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend after the deadline = %+v, %v; want ErrExpired and ErrNotHeld", ext, err)
	}
	var ee *redlock.ExtendError
	if !errors.As(err, &ee) || ee.Validity > 0 || len(ee.NodeErrs) != 0 {
		t.Errorf("ExtendError = %+v, want non-positive validity and no node contacted", ee)
	}
	for i, d := range pttls(t, clients, key) {
		if d <= 10*time.Second {
			t.Errorf("node %d: PTTL %v: the expired lease's key was extended", i, d)
		}
	}
}

func TestExtendIsCapped(t *testing.T) {
	_, clients := startCluster(t, 3)
	l := newLocker(t, clients, redlock.Options{MaxExtensions: 2})
	lease, err := l.TryLock(t.Context(), "lock:cap", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if lease, err = l.Extend(t.Context(), lease, 0); err != nil {
			t.Fatalf("extension %d: %v", i, err)
		}
		if lease.Extensions != i || lease.TTL != 5*time.Second {
			t.Errorf("extension %d: Extensions %d, TTL %v", i, lease.Extensions, lease.TTL)
		}
	}
	ext, err := l.Extend(t.Context(), lease, 0)
	if ext != nil || !errors.Is(err, redlock.ErrExtendLimit) || errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("third extension = %+v, %v; want ErrExtendLimit (and the lease still held)", ext, err)
	}
	if _, err := l.Release(t.Context(), lease); err != nil {
		t.Errorf("Release after the cap: %v", err)
	}
}

// TestDoKeepsLeaseAlive runs a function for more than twice the TTL: the
// lease must be extended underneath it, its context must stay alive, and
// the lock must be released afterwards.
func TestDoKeepsLeaseAlive(t *testing.T) {
	t.Parallel() // mostly waiting
	_, clients := startCluster(t, 5)
	l := newLocker(t, clients, redlock.Options{})
	const key, ttl = "lock:do", time.Second
	var value string
	err := l.Do(t.Context(), key, ttl, func(ctx context.Context, lease *redlock.Lease) error {
		value = lease.Value
		select {
		case <-time.After(5 * ttl / 2):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		// Past the first TTL: only extensions keep the key.
		wantValues(t, clients, key, value, 0, 1, 2, 3, 4)
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	wantValues(t, clients, key, "", 0, 1, 2, 3, 4)
}

// TestDoEndsContextBeforeDeadline: when the lease cannot be kept, the
// function's context ends before the lease's validity does, and says why.
func TestDoEndsContextBeforeDeadline(t *testing.T) {
	t.Parallel() // mostly waiting
	_, clients := startCluster(t, 5)
	tests := []struct {
		name   string
		opts   redlock.Options
		during func(key string) // what happens to the lock while fn runs
		wantIs error
		// extended: the context must have outlived the first lease.
		extended bool
	}{
		{"extension limit", redlock.Options{MaxExtensions: 1}, func(string) {}, redlock.ErrExtendLimit, true},
		{"keys lost", redlock.Options{}, func(key string) {
			for _, c := range clients {
				c.Del(context.Background(), key)
			}
		}, redlock.ErrLostQuorum, false},
		{"taken over", redlock.Options{}, func(key string) { setAll(t, clients, key, "other-client", time.Minute) }, redlock.ErrNotOwner, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLocker(t, clients, tt.opts)
			key := "lock:do-end:" + tt.name
			const ttl = 2 * time.Second
			var first *redlock.Lease
			var ended time.Time
			var cause error
			err := l.Do(t.Context(), key, ttl, func(ctx context.Context, lease *redlock.Lease) error {
				first = lease
				tt.during(key)
				select {
				case <-ctx.Done():
					ended = time.Now()
					cause = context.Cause(ctx)
					return ctx.Err()
				case <-time.After(30 * time.Second):
					return errors.New("context still alive after 30s")
				}
			})
			var lost *redlock.LeaseLostError
			if !errors.As(cause, &lost) || !errors.Is(cause, tt.wantIs) {
				t.Fatalf("cause = %v, want a LeaseLostError matching %v", cause, tt.wantIs)
			}
			if !ended.Before(lost.Deadline) {
				t.Errorf("context ended %v after the lease's deadline", ended.Sub(lost.Deadline))
			}
			if tt.extended != lost.Deadline.After(first.Deadline) {
				t.Errorf("deadline at the end %v after the first lease's; want extended = %v", lost.Deadline.Sub(first.Deadline), tt.extended)
			}
			if !errors.As(err, &lost) || !errors.Is(err, context.Canceled) {
				t.Errorf("Do error = %v, want the function's error and the LeaseLostError", err)
			}
		})
	}
}
