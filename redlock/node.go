package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Concurrent lock operations on one node are combined into pipelines:
// whoever finds the node idle sends everything queued so far in one round
// trip, and commands that arrive while a pipeline is out wait and go out
// together in the next one. An operation alone on a node is sent at
// once, so this costs nothing without concurrency; with it, the node reads
// and answers many commands per system call instead of one, which is where
// the time goes on a loaded machine.
const (
	// maxInFlight is how many pipelines may be outstanding on one node.
	// One fills pipelines best (measured: more in flight means smaller
	// pipelines and lower throughput on a loaded machine), and it keeps
	// each Locker's commands to a node in the order they were sent.
	maxInFlight = 1
	// maxBatch bounds one pipeline, so a burst does not delay the first
	// commands by the time it takes to write the last ones.
	maxBatch = 128
)

// node is one Redis master as the Locker sees it.
type node struct {
	c *redis.Client

	mu       sync.Mutex
	queue    []*call
	inFlight int
}

// call is one command on its way to a node. done is closed once cmd holds
// its reply or error.
type call struct {
	cmd      redis.Cmder
	deadline time.Time
	done     chan struct{}
}

// send queues cmd for the node and returns at once; the caller waits on the
// returned call's done channel (or gives up at its deadline). The command is
// sent no later than the next free pipeline slot and bounded by deadline.
func (n *node) send(cmd redis.Cmder, deadline time.Time) *call {
	c := &call{cmd: cmd, deadline: deadline, done: make(chan struct{})}
	n.mu.Lock()
	n.queue = append(n.queue, c)
	if n.inFlight >= maxInFlight {
		n.mu.Unlock()
		return c
	}
	n.inFlight++
	batch := n.take()
	n.mu.Unlock()
	go n.run(batch)
	return c
}

// take removes up to maxBatch calls from the queue; n.mu is held.
func (n *node) take() []*call {
	k := min(len(n.queue), maxBatch)
	batch := n.queue[:k:k]
	n.queue = n.queue[k:]
	if len(n.queue) == 0 {
		n.queue = nil
	}
	return batch
}

// run sends batches until the queue is empty, then frees its slot.
func (n *node) run(batch []*call) {
	for {
		n.exec(batch)
		n.mu.Lock()
		if len(n.queue) == 0 {
			n.inFlight--
			n.mu.Unlock()
			return
		}
		batch = n.take()
		n.mu.Unlock()
	}
}

// exec sends one batch. The pipeline is bounded by the latest deadline in
// it: every caller still gives up at its own deadline, so none is cut
// shorter than it asked, and a hung connection cannot hold the slot longer
// than that.
func (n *node) exec(batch []*call) {
	now := time.Now()
	var latest time.Time
	live := batch[:0:0]
	for _, c := range batch {
		if !c.deadline.After(now) {
			// Its caller has given up already; not sending it keeps the
			// outcome definite (never applied) and the pipeline short.
			c.cmd.SetErr(context.DeadlineExceeded)
			close(c.done)
			continue
		}
		if c.deadline.After(latest) {
			latest = c.deadline
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), latest)
	defer cancel()
	if len(live) == 1 {
		_ = n.c.Process(ctx, live[0].cmd)
	} else {
		p := n.c.Pipeline()
		for _, c := range live {
			_ = p.Process(ctx, c.cmd)
		}
		_, _ = p.Exec(ctx)
	}
	for _, c := range live {
		close(c.done)
	}
}
