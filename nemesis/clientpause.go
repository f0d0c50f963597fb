package nemesis

import (
	"context"
	"fmt"
	"sync"

	"splitbrain/history"
)

// Point is a place in a lock client's work where it can be paused. The
// hook points are those of the lock library (redlock.Hooks); a harness
// wires each hook to ClientGate.At.
type Point string

const (
	// AfterReplies: every node answered (or timed out), the validity is
	// not yet computed. A pause here counts into the elapsed time.
	AfterReplies Point = "after-replies"
	// AfterAcquire: the lease is granted and its deadline fixed, the
	// caller has not got it yet — a pause inside the critical section.
	AfterAcquire Point = "after-acquire"
	// BeforeRelease: the caller asked to release, no node contacted yet.
	BeforeRelease Point = "before-release"
	// BeforeWrite: not the lock's but the workload's: the client has read
	// the protected resource under its lease and is about to write back
	// what it computed — Kleppmann's figure 1, the pause that turns an
	// expired lease into a lost update.
	BeforeWrite Point = "before-write"
	// AnyPoint: whichever hook point the client reaches next.
	AnyPoint Point = "any"
)

// HookPoints are the lock's hook points, for drawing one at random.
var HookPoints = []Point{AfterReplies, AfterAcquire, BeforeRelease}

// ResourcePoints are the hook points of a client that also writes a
// protected resource: the lock's, and BeforeWrite.
var ResourcePoints = []Point{AfterReplies, AfterAcquire, BeforeWrite, BeforeRelease}

// ValidPoint reports whether p names a hook point or AnyPoint.
func ValidPoint(p Point) bool {
	switch p {
	case AfterReplies, AfterAcquire, BeforeWrite, BeforeRelease, AnyPoint:
		return true
	}
	return false
}

// ClientGate is where one client can be held: its lock hooks call At. Each
// client has its own gate, so a pause holds that client only, while its
// monotonic clock runs on — exactly what a stop-the-world GC pause does.
type ClientGate struct {
	name string

	mu      sync.Mutex
	armed   *gatePause
	blocked int
	changed chan struct{} // closed and replaced whenever blocked changes
}

type gatePause struct {
	at      Point
	hit     bool
	release chan struct{}
}

// NewClientGate returns the gate of client name.
func NewClientGate(name string) *ClientGate {
	return &ClientGate{name: name, changed: make(chan struct{})}
}

// Name is the client's name.
func (g *ClientGate) Name() string { return g.name }

// At is called by the client at point p. While no pause is armed it returns
// at once (a nil gate too). Once an armed pause is reached at its point,
// the client stops there, and at every point it reaches meanwhile (its
// other goroutines included), until the pause is healed or ctx ends (the
// run is being torn down).
func (g *ClientGate) At(ctx context.Context, p Point) {
	if g == nil {
		return
	}
	g.mu.Lock()
	pz := g.armed
	if pz == nil || (!pz.hit && pz.at != AnyPoint && pz.at != p) {
		g.mu.Unlock()
		return
	}
	pz.hit = true
	g.setBlockedLocked(+1)
	g.mu.Unlock()
	select {
	case <-pz.release:
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.setBlockedLocked(-1)
	g.mu.Unlock()
}

func (g *ClientGate) setBlockedLocked(delta int) {
	g.blocked += delta
	close(g.changed)
	g.changed = make(chan struct{})
}

// Blocked is how many of the client's goroutines are held now.
func (g *ClientGate) Blocked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.blocked
}

// WaitBlocked returns once the client is held at the gate, or when ctx ends.
func (g *ClientGate) WaitBlocked(ctx context.Context) error {
	for {
		g.mu.Lock()
		n, ch := g.blocked, g.changed
		g.mu.Unlock()
		if n > 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("client %s never reached its pause: %w", g.name, ctx.Err())
		}
	}
}

// arm sets a pause at p and returns what lifts it.
func (g *ClientGate) arm(p Point) (func(), error) {
	if !ValidPoint(p) {
		return nil, fmt.Errorf("client pause: point %q, want after-replies, after-acquire, before-write, before-release or any", p)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.armed != nil {
		return nil, fmt.Errorf("client %s: a pause is armed already", g.name)
	}
	pz := &gatePause{at: p, release: make(chan struct{})}
	g.armed = pz
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.armed == pz {
			g.armed = nil
			close(pz.release)
		}
	}, nil
}

// ClientPause holds a client at a point of its lock work: Kleppmann's GC
// pause. It is armed at injection; the client stops when it next reaches
// At and stays stopped until the pause is healed — with Nemesis.StartFor,
// a set time after it was armed. Only that client stops; the nodes' keys
// expire meanwhile, and its own lease's validity, measured on its
// monotonic clock, runs out as it would in a real pause.
type ClientPause struct {
	Gate *ClientGate
	At   Point
}

// Describe implements Fault.
func (c ClientPause) Describe() history.Fault {
	// The client goes in Nodes so that reports draw the pause in its lane.
	return history.Fault{Kind: KindClientPause, Nodes: []string{c.Gate.Name()},
		Detail: fmt.Sprintf("%s paused at %s", c.Gate.Name(), c.At)}
}

// Inject implements Fault.
func (c ClientPause) Inject(context.Context) (Heal, error) {
	release, err := c.Gate.arm(c.At)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error { release(); return nil }, nil
}
