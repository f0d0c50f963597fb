package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lock acquires key for ttl, retrying until it succeeds, ctx ends or
// Options.MaxTries attempts have failed. The error is then the last
// attempt's *AcquireError (matching ErrNotAcquired, with Tries set and, if
// ctx ended, CtxErr).
//
// Waiting is cheap and hand-offs are fast. Goroutines of one Locker that
// wait for the same key queue up, first come first served, and only the
// first of them makes attempts, so they do not split the nodes' votes
// between them. It retries as soon as the holder releases — Release wakes
// it directly in this process and by pub/sub from others — and otherwise
// after a random delay around Options.RetryDelay (a lease that simply
// expires wakes nobody). After a split vote with other clients it backs off
// for a random time of the order of an attempt, so that one of them wins.
func (l *Locker) Lock(ctx context.Context, key string, ttl time.Duration) (*Lease, error) {
	ttl, err := l.prepare(ctx, key, ttl)
	if err != nil {
		return nil, err
	}
	var w *waiter
	var stranded []int // every try's, for the error
	defer func() {
		if w != nil {
			l.waits.leave(key, w)
		}
	}()
	now := true // attempt without waiting for a release first
	if l.waits.queued(key) {
		// Others of ours are already waiting: queue behind them rather than
		// barge in and split the vote with the one about to get it.
		w, _ = l.waits.join(ctx, key)
		now = false
	}
	var last *AcquireError
	for try := 1; ; try++ {
		if !now {
			if err := l.waits.awaitTurn(ctx, w); err != nil {
				return nil, l.gaveUp(last, key, try-1, err)
			}
			// The lock was held when we last looked (or when the one
			// ahead of us got it): wait for its release, or poll.
			if err := w.sleep(ctx, l.jitter(l.opts.RetryDelay/2, l.opts.RetryDelay*3/2), true); err != nil {
				return nil, l.gaveUp(last, key, try-1, err)
			}
		}
		value, err := newValue()
		if err != nil {
			return nil, fmt.Errorf("redlock: lock %q: random value: %w", key, err)
		}
		if w != nil {
			w.own(value)
		}
		lease, err := l.attempt(ctx, key, value, ttl, true)
		if err == nil {
			if w != nil {
				w.acquired = true
			}
			return lease, nil
		}
		last = err.(*AcquireError)
		last.Tries = try
		// Any try's stranded key may still keep others out: the error
		// Lock returns names them all.
		for _, i := range last.Stranded {
			if !slices.Contains(stranded, i) {
				stranded = append(stranded, i)
			}
		}
		slices.Sort(stranded)
		last.Stranded = slices.Clone(stranded)
		if last.CtxErr != nil || ctx.Err() != nil {
			return nil, l.gaveUp(last, key, try, ctx.Err())
		}
		if l.opts.MaxTries > 0 && try >= l.opts.MaxTries {
			return nil, last
		}
		if w == nil {
			// First failure: subscribe to releases of key; if nobody of
			// ours is ahead, try again at once, since a release may have
			// come in before the subscription.
			var head bool
			w, head = l.waits.join(ctx, key)
			w.own(value)
			now = head
			continue
		}
		now = last.HeldByOne < l.quorum
		if now {
			// A split vote, or nodes that did not answer: back off for a
			// random time of the order of an attempt, so that one of the
			// contenders retries alone. Wake-ups are ignored meanwhile:
			// they come from the other contenders' rollbacks.
			span := min(max(4*last.Elapsed, time.Millisecond), l.opts.RetryDelay)
			if err := w.sleep(ctx, l.jitter(0, span), false); err != nil {
				return nil, l.gaveUp(last, key, try, err)
			}
		}
	}
}

// gaveUp is Lock's error once ctx has ended: the last attempt's error with
// the context's, or a fresh one if no attempt ran.
func (l *Locker) gaveUp(last *AcquireError, key string, tries int, ctxErr error) error {
	if last == nil {
		last = &AcquireError{Key: key, Quorum: l.quorum, NodeErrs: make([]error, len(l.nodes))}
	}
	last.Tries = tries
	if last.CtxErr == nil {
		last.CtxErr = ctxErr
	}
	return last
}

// waits is a Locker's bookkeeping of Lock calls waiting for a key: a FIFO
// queue per key, and a pub/sub subscription per node for the keys that have
// waiters.
type waits struct {
	l    *Locker
	mu   sync.Mutex
	keys map[string]*keyWaiters
	subs []*subscriber // per node; nil while no key has waiters
}

type keyWaiters struct {
	queue []*waiter // queue[0] is the only one that makes attempts
	// recent counts the nodes that announced recent releases, so that one
	// release wakes one waiter, once a quorum is free.
	recent [8]release
	next   int
}

type release struct {
	value string
	nodes int
	woke  bool
}

// waiter is one Lock call in the queue.
type waiter struct {
	// turn is signalled when the waiter becomes the head of the queue;
	// wake when the head should retry at once.
	turn, wake chan struct{}
	// acquired is set once the waiter's Lock has won.
	acquired bool
	// values are the waiter's own attempts' values; their releases (from
	// rollbacks) must not wake it.
	mu     sync.Mutex
	values [4]string
	nv     int
}

func (w *waiter) own(v string) {
	w.mu.Lock()
	w.values[w.nv%len(w.values)] = v
	w.nv++
	w.mu.Unlock()
}

func (w *waiter) owns(v string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range w.values {
		if o == v {
			return true
		}
	}
	return false
}

// sleep waits d, or until a wake-up if wake is set (a wake-up that arrives
// meanwhile is otherwise kept for later), or until ctx ends.
func (w *waiter) sleep(ctx context.Context, d time.Duration, wake bool) error {
	t := time.NewTimer(d)
	defer t.Stop()
	var woken <-chan struct{}
	if wake {
		woken = w.wake
	}
	select {
	case <-t.C:
		if !wake {
			select { // consume a wake-up that came in during the back-off
			case <-w.wake:
			default:
			}
		}
		return nil
	case <-woken:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ws *waits) init(l *Locker) {
	ws.l = l
	ws.keys = map[string]*keyWaiters{}
}

// queued reports whether any Lock of this Locker is waiting for key.
func (ws *waits) queued(key string) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.keys[key] != nil
}

// join queues a new waiter for key. The first waiter of a key subscribes to
// its releases on every node and waits (up to NodeTimeout) until a quorum
// of nodes confirmed, so that no release after join returns goes unheard.
func (ws *waits) join(ctx context.Context, key string) (w *waiter, head bool) {
	w = &waiter{turn: make(chan struct{}, 1), wake: make(chan struct{}, 1)}
	ws.mu.Lock()
	kw := ws.keys[key]
	first := kw == nil
	if first {
		kw = &keyWaiters{}
		ws.keys[key] = kw
		if ws.subs == nil {
			ws.subs = make([]*subscriber, len(ws.l.nodes))
			for i, n := range ws.l.nodes {
				ws.subs[i] = newSubscriber(n.c, ws)
			}
		}
	}
	kw.queue = append(kw.queue, w)
	head = len(kw.queue) == 1
	if head {
		signal(w.turn)
	}
	subs := ws.subs
	ws.mu.Unlock()
	if first {
		ws.subscribe(ctx, subs, Channel(key))
	}
	return w, head
}

// subscribe subscribes every node's subscriber to channel and waits until
// a quorum confirmed or NodeTimeout passed. A node that is down cannot
// confirm; the retry delay covers the releases it alone would announce.
func (ws *waits) subscribe(ctx context.Context, subs []*subscriber, channel string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ws.l.opts.NodeTimeout)
	defer cancel()
	confirmed := make(chan struct{}, len(subs))
	for _, s := range subs {
		go func() {
			if s.subscribe(ctx, channel) == nil {
				confirmed <- struct{}{}
			}
		}()
	}
	for range ws.l.quorum {
		select {
		case <-confirmed:
		case <-ctx.Done():
			return
		}
	}
}

// awaitTurn blocks until w is the head of key's queue (or ctx ends).
func (ws *waits) awaitTurn(ctx context.Context, w *waiter) error {
	select {
	case <-w.turn:
		signal(w.turn) // stay the head for the next round
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave removes w from key's queue. The next waiter becomes the head; it
// also inherits a wake-up w did not use, unless w won the lock (then the
// wake-up was for the release that let w in). The last waiter of a key
// unsubscribes, and the last of all closes the subscriptions.
func (ws *waits) leave(key string, w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	kw := ws.keys[key]
	if kw == nil {
		return
	}
	head := len(kw.queue) > 0 && kw.queue[0] == w
	for i, o := range kw.queue {
		if o == w {
			kw.queue = append(kw.queue[:i], kw.queue[i+1:]...)
			break
		}
	}
	if len(kw.queue) > 0 {
		if head {
			next := kw.queue[0]
			signal(next.turn)
			select {
			case <-w.wake:
				if !w.acquired {
					signal(next.wake)
				}
			default:
			}
		}
		return
	}
	delete(ws.keys, key)
	for _, s := range ws.subs {
		s.unsubscribe(Channel(key))
	}
	if len(ws.keys) == 0 {
		for _, s := range ws.subs {
			s.close()
		}
		ws.subs = nil
	}
}

// released notes that value no longer holds key on some nodes: on all of
// them when this Locker released it (local), on one node per pub/sub
// message. It wakes the head of key's queue once per value, as soon as the
// lock is free on a quorum: a waiter woken by the first node's message
// would find the others still held, take that for a lock in use, and sleep
// through the rest of the hand-off. A waiter is never woken by its own
// attempts' values.
func (ws *waits) released(key, value string, local bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	kw := ws.keys[key]
	if kw == nil || len(kw.queue) == 0 {
		return
	}
	var r *release
	for i := range kw.recent {
		if kw.recent[i].value == value {
			r = &kw.recent[i]
			break
		}
	}
	if r == nil {
		r = &kw.recent[kw.next%len(kw.recent)]
		*r = release{value: value}
		kw.next++
	}
	if r.woke {
		return
	}
	r.nodes++
	if !local && r.nodes < ws.l.quorum {
		return
	}
	r.woke = true
	head := kw.queue[0]
	if head.owns(value) {
		return
	}
	signal(head.wake)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// subscriber is one pub/sub connection to one node, subscribed to the
// release channels of the keys this Locker waits for.
type subscriber struct {
	ps   *redis.PubSub
	ws   *waits
	stop chan struct{}

	mu      sync.Mutex
	pending map[string][]chan struct{} // channel → subscribe calls awaiting confirmation
	want    map[string]bool            // channels some key's waiters need
	closed  bool
}

func newSubscriber(c *redis.Client, ws *waits) *subscriber {
	s := &subscriber{
		// No channels yet: go-redis connects on the first Subscribe.
		ps:      c.Subscribe(context.Background()),
		ws:      ws,
		stop:    make(chan struct{}),
		pending: map[string][]chan struct{}{},
		want:    map[string]bool{},
	}
	go s.receive()
	return s
}

// subscribe sends SUBSCRIBE and waits for the node's confirmation.
func (s *subscriber) subscribe(ctx context.Context, channel string) error {
	ok := make(chan struct{})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("subscriber closed")
	}
	s.pending[channel] = append(s.pending[channel], ok)
	s.want[channel] = true
	s.mu.Unlock()
	if err := s.ps.Subscribe(ctx, channel); err != nil {
		s.mu.Lock()
		s.pending[channel] = slices.DeleteFunc(s.pending[channel], func(c chan struct{}) bool { return c == ok })
		s.mu.Unlock()
		return err
	}
	select {
	case <-ok:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unsubscribe drops channel in the background, unless a waiter wants it
// again by then: the check and the UNSUBSCRIBE happen under s.mu, and
// subscribe marks the channel wanted before it sends SUBSCRIBE, so an
// UNSUBSCRIBE can never overtake a newer SUBSCRIBE.
func (s *subscriber) unsubscribe(channel string) {
	s.mu.Lock()
	delete(s.want, channel)
	s.mu.Unlock()
	go func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.want[channel] || s.closed {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.ps.Unsubscribe(ctx, channel)
	}()
}

func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	_ = s.ps.Close()
}

// receive dispatches what the node sends until the subscriber is closed.
// go-redis reconnects and re-subscribes after a connection error; while the
// node is unreachable, receive retries once per backoff.
func (s *subscriber) receive() {
	const backoff = 100 * time.Millisecond
	prefix := Channel("")
	for {
		msg, err := s.ps.Receive(context.Background())
		if err != nil {
			select {
			case <-s.stop:
				return
			case <-time.After(backoff):
				continue
			}
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			s.mu.Lock()
			if q := s.pending[m.Channel]; len(q) > 0 {
				close(q[0])
				if len(q) == 1 {
					delete(s.pending, m.Channel)
				} else {
					s.pending[m.Channel] = q[1:]
				}
			}
			s.mu.Unlock()
		case *redis.Message:
			if key, ok := strings.CutPrefix(m.Channel, prefix); ok {
				s.ws.released(key, m.Payload, false)
			}
		}
	}
}
