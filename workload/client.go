// Package workload holds the clients that drive the lock under test and
// record every operation into the run's history.
package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/history"
	"splitbrain/redlock"
)

// Recorder is the run's history as the workload writes it.
type Recorder interface {
	Record(history.Event) history.Event
	// Since converts a monotonic instant into the history's time base.
	Since(time.Time) int64
}

// Node is one lock node as a client reaches it.
type Node struct {
	Name string
	Addr string // through the client's proxy for this link
}

// Client is one harness client: its own connections to every node (through
// its own proxies, so the nemesis can cut its links alone), its own Locker,
// and the leases it believes it holds.
type Client struct {
	name    string
	process string
	restart int
	rec     Recorder
	nodes   []string
	conns   []*redis.Client
	locker  *redlock.Locker
	leases  map[string]*redlock.Lease
}

// NewClient connects client name to nodes with password.
func NewClient(name string, nodes []Node, password string, opts redlock.Options, rec Recorder) (*Client, error) {
	c := &Client{name: name, process: name, rec: rec, leases: map[string]*redlock.Lease{}}
	for _, n := range nodes {
		c.nodes = append(c.nodes, n.Name)
		c.conns = append(c.conns, redis.NewClient(redlock.ClientOptions(n.Addr, password)))
	}
	l, err := redlock.New(c.conns, opts)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("client %s: %w", name, err)
	}
	c.locker = l
	return c, nil
}

// Name is the client's name (c1, c2, ...).
func (c *Client) Name() string { return c.name }

// Holds reports whether the client believes it holds key.
func (c *Client) Holds(key string) bool { return c.leases[key] != nil }

// Acquire makes one lock attempt on key and records it. A lost attempt is
// recorded as fail; an attempt whose outcome the client cannot know (it did
// not even get to run) as info, after which the client continues as a new
// process, as in Jepsen. The returned error is for the caller's log only: a
// lost attempt is an outcome, not a failure of the run.
func (c *Client) Acquire(ctx context.Context, key string, ttl time.Duration) error {
	c.record(history.Invoke, history.Acquire, key, nil)
	lease, err := c.locker.TryLock(ctx, key, ttl)
	if err != nil {
		typ := history.Info
		if errors.Is(err, redlock.ErrNotAcquired) {
			typ = history.Fail
		}
		c.record(typ, history.Acquire, key, func(e *history.Event) { e.Err = err.Error() })
		return err
	}
	c.leases[key] = lease
	deadline := c.rec.Since(lease.Deadline)
	c.record(history.OK, history.Acquire, key, func(e *history.Event) {
		e.Value = history.MustValue(lease.Value)
		e.Deadline = &deadline
		e.Nodes = c.names(lease.Granted)
	})
	return nil
}

// Release releases the client's lease on key, if it holds one, and records
// it: ok when a quorum deleted the key, fail when the lease had been lost.
func (c *Client) Release(ctx context.Context, key string) error {
	lease := c.leases[key]
	if lease == nil {
		return nil
	}
	delete(c.leases, key)
	c.record(history.Invoke, history.Release, key, func(e *history.Event) { e.Value = history.MustValue(lease.Value) })
	deleted, err := c.locker.Release(ctx, lease)
	typ := history.OK
	switch {
	case errors.Is(err, redlock.ErrNotHeld):
		typ = history.Fail
	case err != nil:
		typ = history.Info
	}
	c.record(typ, history.Release, key, func(e *history.Event) {
		e.Value = history.MustValue(lease.Value)
		e.Nodes = c.names(deleted)
		if err != nil {
			e.Err = err.Error()
		}
	})
	return err
}

// Close releases the client's connections (not its leases: a client that
// stops does not get to clean up, and the checker sees leases expire).
func (c *Client) Close() {
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}

func (c *Client) names(idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = c.nodes[j]
	}
	return out
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
