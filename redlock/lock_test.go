package redlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"splitbrain/redlock"
)

// TestLockWaitersAreWoken sets the retry delay to an hour: waiters can only
// get the lock in time because each release wakes the next one — directly
// between goroutines of one Locker, by pub/sub between Lockers.
func TestLockWaitersAreWoken(t *testing.T) {
	_, clients := startCluster(t, 5)
	cl := clusterOf(t, clients)
	tests := []struct {
		name               string
		lockers, perLocker int
	}{
		{"goroutines of one locker", 1, 4},
		{"separate lockers, by pub/sub", 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const rounds = 25
			key := "lock:woken:" + tt.name
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var inside atomic.Int32
			var got atomic.Int32
			var wg sync.WaitGroup
			for range tt.lockers {
				l := newLocker(t, cl.newClients(t), redlock.Options{RetryDelay: time.Hour, NodeTimeout: time.Second})
				for range tt.perLocker {
					wg.Go(func() {
						for range rounds {
							lease, err := l.Lock(ctx, key, 10*time.Second)
							if err != nil {
								t.Errorf("Lock: %v", err)
								return
							}
							if inside.Add(1) != 1 {
								t.Error("two holders at once")
							}
							got.Add(1)
							inside.Add(-1)
							if _, err := l.Release(ctx, lease); err != nil {
								t.Errorf("Release: %v", err)
							}
						}
					})
				}
			}
			wg.Wait()
			if want := int32(tt.lockers * tt.perLocker * rounds); got.Load() != want {
				t.Errorf("%d acquisitions, want %d", got.Load(), want)
			}
		})
	}
}

func TestLockGivesUp(t *testing.T) {
	t.Parallel() // mostly waiting
	_, clients := startCluster(t, 3)
	holder := newLocker(t, clients, redlock.Options{})
	const key = "lock:give-up"
	lease, err := holder.TryLock(t.Context(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(context.Background(), lease)

	t.Run("context deadline", func(t *testing.T) {
		l := newLocker(t, clients, redlock.Options{RetryDelay: 20 * time.Millisecond})
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		got, err := l.Lock(ctx, key, time.Second)
		var ae *redlock.AcquireError
		if got != nil || !errors.As(err, &ae) || !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock on a held key = %v, %v; want ErrNotAcquired and DeadlineExceeded", got, err)
		}
		if ae.Tries < 2 || ae.CtxErr == nil {
			t.Errorf("AcquireError = %+v, want several tries and the context's error", ae)
		}
	})
	t.Run("max tries", func(t *testing.T) {
		l := newLocker(t, clients, redlock.Options{RetryDelay: time.Millisecond, MaxTries: 3})
		got, err := l.Lock(t.Context(), key, time.Second)
		var ae *redlock.AcquireError
		if got != nil || !errors.As(err, &ae) || ae.Tries != 3 || ae.CtxErr != nil {
			t.Fatalf("Lock with MaxTries 3 = %v, %v; want an AcquireError after 3 tries", got, err)
		}
		if ae.HeldByOne != 3 || ae.Held != 3 {
			t.Errorf("AcquireError = %+v, want the key held by one client on all 3 nodes", ae)
		}
	})
	t.Run("cancelled while queued", func(t *testing.T) {
		// A waiter behind another waiter of the same Locker, given up,
		// must leave the queue so that the one behind it is not stuck.
		l := newLocker(t, clients, redlock.Options{RetryDelay: time.Hour})
		first, cancelFirst := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { _, err := l.Lock(first, key, time.Second); done <- err }()
		time.Sleep(100 * time.Millisecond) // let it queue
		second := make(chan *redlock.Lease, 1)
		go func() {
			ls, err := l.Lock(t.Context(), key, 5*time.Second)
			if err != nil {
				t.Errorf("second waiter: %v", err)
			}
			second <- ls
		}()
		time.Sleep(100 * time.Millisecond)
		cancelFirst()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("first waiter: %v, want context.Canceled", err)
		}
		if _, err := holder.Release(t.Context(), lease); err != nil {
			t.Fatal(err)
		}
		select {
		case ls := <-second:
			if ls != nil {
				_, _ = l.Release(t.Context(), ls)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("second waiter not woken after the first gave up and the holder released")
		}
	})
}

// TestNaiveGrantsAfterLongPause is the pause-during-acquisition scenario:
// client 1 pauses after its SETs landed and before judging them, for longer
// than the TTL; meanwhile its keys expire and client 2 takes the lock. The
// default lock then sees no validity left and refuses; the naive variant
// (no elapsed-time check) grants, and both clients hold the lock.
func TestNaiveGrantsAfterLongPause(t *testing.T) {
	t.Parallel() // mostly waiting
	_, clients := startCluster(t, 5)
	const ttl = 500 * time.Millisecond
	tests := []struct {
		name      string
		naive     bool
		wantGrant bool
	}{
		{"default refuses", false, false},
		{"naive grants", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "lock:naive:" + tt.name
			other := newLocker(t, clients, redlock.Options{})
			var second *redlock.Lease
			paused := newLocker(t, clients, redlock.Options{SkipElapsedCheck: tt.naive, Hooks: redlock.Hooks{
				AfterReplies: func(ctx context.Context, k string) {
					time.Sleep(ttl + 200*time.Millisecond) // the keys expire
					var err error
					if second, err = other.TryLock(ctx, k, 10*time.Second); err != nil {
						t.Errorf("second client during the pause: %v", err)
					}
				},
			}})
			lease, err := paused.TryLock(t.Context(), key, ttl)
			if second == nil {
				t.Fatal("the second client did not get the lock during the pause")
			}
			if !tt.wantGrant {
				if lease != nil || !errors.Is(err, redlock.ErrExpired) || !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("TryLock after a pause past the TTL = %v, %v; want ErrNotAcquired and ErrExpired", lease, err)
				}
			} else {
				if err != nil {
					t.Fatalf("naive TryLock after the pause: %v", err)
				}
				if lease.Validity > 0 || lease.Remaining() > 0 {
					t.Errorf("naive lease validity %v, remaining %v: want both gone", lease.Validity, lease.Remaining())
				}
				t.Logf("both hold the lock: the naive client with validity %v, the other with %v", lease.Validity, second.Remaining())
			}
			// The second client's keys are untouched either way.
			wantValues(t, clients, key, second.Value, 0, 1, 2, 3, 4)
		})
	}
}
