// Package workload holds the clients that drive the lock under test and
// record every operation into the run's history.
package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"splitbrain/history"
)

// Recorder is the run's history as the workload writes it.
type Recorder interface {
	Record(history.Event) history.Event
	// Since converts a monotonic instant into the history's time base.
	Since(time.Time) int64
}

// Client is one harness client: it drives its own instance of the lock
// under test (with its own connections, through its own proxies, so the
// nemesis can cut its links alone) and remembers the leases it believes it
// holds.
//
// One goroutine drives a client; a lease with a Lost channel adds a second,
// its watcher, which releases the lease when the lock says it is over. mu
// serialises the two: it is held for the whole of each operation, so a
// notice that arrives while a write is in flight is acted on after it, as
// by a user who learns of the loss once the write returned. view guards
// leases for the runner's questions (Holds, Deadline), which must not wait
// for an operation: a client may be paused inside one for seconds. Writers
// of leases hold both.
type Client struct {
	mu      sync.Mutex
	view    sync.Mutex
	name    string
	process string
	restart int
	rec     Recorder
	lock    Lock
	leases  map[string]*Lease
	// lost marks the keys whose lease the lock said was over and the
	// watcher released: critical-section steps on them are skipped.
	lost map[string]bool
	// unsure holds, by key, the last lease whose release's outcome was
	// unknown, for a user's retry of it (RetryRelease).
	unsure map[string]*Lease
}

// NewClient returns client name driving lock.
func NewClient(name string, lock Lock, rec Recorder) *Client {
	return &Client{name: name, process: name, rec: rec, lock: lock, leases: map[string]*Lease{}, lost: map[string]bool{}, unsure: map[string]*Lease{}}
}

// Name is the client's name (c1, c2, ...).
func (c *Client) Name() string { return c.name }

// Holds reports whether the client believes it holds key.
func (c *Client) Holds(key string) bool {
	c.view.Lock()
	defer c.view.Unlock()
	return c.leases[key] != nil
}

// Deadline is when the validity of the client's lease on key ends, on the
// monotonic clock (zero for a lock whose belief has no deadline: it lasts
// until release); ok is false when it holds none.
func (c *Client) Deadline(key string) (deadline time.Time, ok bool) {
	c.view.Lock()
	defer c.view.Unlock()
	l := c.leases[key]
	if l == nil {
		return time.Time{}, false
	}
	return l.Deadline, true
}

// Acquire takes key with one call of the lock's Acquire (one attempt, or
// as many as the lock is set to retry) and records it. A lost attempt is
// recorded as fail; an attempt whose outcome the client cannot know (it did
// not even get to run) as info, after which the client continues as a new
// process, as in Jepsen. The returned error is for the caller's log only: a
// lost attempt is an outcome, not a failure of the run.
func (c *Client) Acquire(ctx context.Context, key string, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The TTL asked for bounds the deadline a lock can grant: the checker
	// tells an impossible one from a broken promise by it.
	c.record(history.Invoke, history.Acquire, key, func(e *history.Event) { e.TTL = int64(ttl) })
	lease, err := c.lock.Acquire(ctx, key, ttl)
	if err != nil {
		typ := history.Info
		if errors.Is(err, ErrNotAcquired) {
			typ = history.Fail
		}
		var refused *RefusedError
		errors.As(err, &refused)
		c.record(typ, history.Acquire, key, func(e *history.Event) {
			e.Err = err.Error()
			if refused != nil {
				e.Nodes = refused.Remain
			}
		})
		return err
	}
	c.hold(history.Acquire, key, lease)
	return nil
}

// hold records the ok of an acquire or extend that gave the client lease.
func (c *Client) hold(f history.Func, key string, lease *Lease) {
	prev := c.leases[key]
	c.view.Lock()
	c.leases[key] = lease
	c.view.Unlock()
	delete(c.lost, key)
	if lease.Lost != nil && (prev == nil || prev.Lost != lease.Lost) {
		go c.watch(key, lease.Lost)
	}
	c.record(history.OK, f, key, func(e *history.Event) {
		e.Value = history.MustValue(lease.Value)
		if !lease.Deadline.IsZero() {
			// Without one the checker ends the belief at the release.
			deadline := c.rec.Since(lease.Deadline)
			e.Deadline = &deadline
		}
		e.Token = lease.Token
		e.Nodes = lease.Granted
	})
}

// watch ends the client's belief in its lease on key once the lock closes
// lost: it releases the lease, unless the client has already let it go
// (its own release closes lost too) or holds another. The release is
// recorded when the client learned; it fails (ErrNotHeld) when the lock
// had lost the lease, which is what the notice says.
func (c *Client) watch(key string, lost <-chan struct{}) {
	<-lost
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.leases[key]; l == nil || l.Lost != lost {
		return
	}
	_ = c.release(context.Background(), key)
	c.lost[key] = true
}

// Release releases the client's lease on key, if it holds one, and records
// it: ok when a quorum deleted the key, fail when the lease had been lost.
func (c *Client) Release(ctx context.Context, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.release(ctx, key)
}

func (c *Client) release(ctx context.Context, key string) error {
	lease := c.leases[key]
	if lease == nil {
		return nil
	}
	c.view.Lock()
	delete(c.leases, key)
	c.view.Unlock()
	c.record(history.Invoke, history.Release, key, func(e *history.Event) { e.Value = history.MustValue(lease.Value) })
	err := c.lock.Release(ctx, lease)
	typ := history.OK
	switch {
	case errors.Is(err, ErrNotHeld):
		typ = history.Fail
	case err != nil:
		typ = history.Info
		c.unsure[key] = lease
	}
	c.record(typ, history.Release, key, func(e *history.Event) {
		e.Value = history.MustValue(lease.Value)
		if err != nil {
			e.Err = err.Error()
		}
	})
	return err
}

// RetryRelease releases once more the last lease on key whose release's
// outcome was unknown, as a user retries a failed unlock with the lock
// object it had (etcd issue 22082: a retried Unlock deletes whatever now
// has the key's name). The client stopped believing in that lease at its
// first release, so nothing is recorded: whatever the retry does to a
// later lease shows as that lease's fate. It returns what the lock said;
// ErrNoUnsureRelease when no release of key was left unknown.
func (c *Client) RetryRelease(ctx context.Context, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	lease := c.unsure[key]
	if lease == nil {
		return ErrNoUnsureRelease
	}
	delete(c.unsure, key)
	return c.lock.Release(ctx, lease)
}

// ErrNoUnsureRelease: RetryRelease found no release whose outcome was
// unknown.
var ErrNoUnsureRelease = errors.New("no release of the key left unknown to retry")

// Extend extends the client's lease on key, if it holds one, by ttl from
// now and records it: ok with the new deadline, fail when the lease was not
// extended (the client then relies on it until its old deadline at most),
// info when the outcome is unknown.
func (c *Client) Extend(ctx context.Context, key string, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	lease := c.leases[key]
	if lease == nil {
		return nil
	}
	c.record(history.Invoke, history.Extend, key, func(e *history.Event) {
		e.Value = history.MustValue(lease.Value)
		e.TTL = int64(ttl)
	})
	ext, err := c.lock.Extend(ctx, lease, ttl)
	if err != nil {
		typ := history.Info
		if errors.Is(err, ErrNotExtended) {
			typ = history.Fail
		}
		c.record(typ, history.Extend, key, func(e *history.Event) {
			e.Value = history.MustValue(lease.Value)
			e.Err = err.Error()
		})
		return err
	}
	c.hold(history.Extend, key, ext)
	return nil
}

func (c *Client) record(typ history.Type, f history.Func, key string, fill func(*history.Event)) {
	e := history.Event{Process: c.process, Type: typ, F: f, Key: key}
	if fill != nil {
		fill(&e)
	}
	c.rec.Record(e)
	if typ == history.Info {
		c.restart++
		c.process = fmt.Sprintf("%s.%d", c.name, c.restart)
	}
}
