package nemesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"splitbrain/fault"
	"splitbrain/history"
)

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
	at fault.Point
	// hold is how long the client stays stopped once it reaches at; zero:
	// until the pause is released.
	hold time.Duration
	hit  bool
	// proc, when set, is stopped by SIGSTOP at the point instead of the
	// client being held at the gate.
	proc    ProcessPauser
	reached chan struct{} // closed when the client reaches at
	release chan struct{} // closed when the pause is released (healed, or its hold ran out)
	resumed chan struct{} // closed once a stopped process is continued
}

func (pz *gatePause) releaseLocked() {
	select {
	case <-pz.release:
	default:
		close(pz.release)
	}
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
func (g *ClientGate) At(ctx context.Context, p fault.Point) {
	if g == nil {
		return
	}
	g.mu.Lock()
	pz := g.armed
	if pz == nil || (!pz.hit && (p == fault.Background || (pz.at != fault.AnyPoint && pz.at != p))) {
		g.mu.Unlock()
		return
	}
	if !pz.hit && pz.proc != nil {
		// The whole process stops, every thread of it, as in a real
		// stop-the-world pause; the caller goes on at once, and whatever
		// it sends the process waits in its pipe until SIGCONT.
		pz.hit = true
		g.stopProcLocked(pz)
		g.mu.Unlock()
		return
	}
	if pz.proc != nil {
		g.mu.Unlock()
		return
	}
	if !pz.hit {
		pz.hit = true
		close(pz.reached)
		if pz.hold > 0 {
			// The hold counts from here, where the client actually stops,
			// not from the arming: a user who writes "for: 600ms" means
			// 600 ms stopped, however long the client took to get here.
			time.AfterFunc(pz.hold, func() {
				g.mu.Lock()
				defer g.mu.Unlock()
				pz.releaseLocked()
			})
		}
	}
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

// stopProcLocked stops pz's process for pz.hold (zero: until the pause
// is released), counting it as the client held.
func (g *ClientGate) stopProcLocked(pz *gatePause) {
	if err := pz.proc.Pause(); err != nil {
		// The process is gone (it died, and the run will say so): there
		// is nothing to stop.
		pz.releaseLocked()
		return
	}
	close(pz.reached)
	g.setBlockedLocked(+1)
	resume := func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-pz.resumed:
			return
		default:
		}
		close(pz.resumed)
		_ = pz.proc.Resume()
		g.setBlockedLocked(-1)
		pz.releaseLocked()
	}
	if pz.hold > 0 {
		time.AfterFunc(pz.hold, resume)
	}
	go func() {
		<-pz.release
		resume()
	}()
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

// arm sets a pause at p, holding the client for hold once it gets there
// (zero: until released), and returns what lifts it.
func (g *ClientGate) arm(p fault.Point, hold time.Duration, proc ProcessPauser) (*gatePause, func(), error) {
	if !fault.ValidPoint(p) {
		return nil, nil, fmt.Errorf("client pause: point %q, want after-replies, after-acquire, before-write, before-release or any", p)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.armed != nil {
		return nil, nil, fmt.Errorf("client %s: a pause is armed already", g.name)
	}
	pz := &gatePause{at: p, hold: hold, proc: proc, reached: make(chan struct{}), release: make(chan struct{}), resumed: make(chan struct{})}
	g.armed = pz
	return pz, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.armed == pz {
			g.armed = nil
		}
		pz.releaseLocked()
	}, nil
}

// ClientPause holds a client at a point of its lock work: Kleppmann's GC
// pause. It is armed at injection; the client stops when it next reaches
// At and stays stopped for For from that moment (or, with For zero, until
// the pause is healed). Only that client stops; the nodes' keys expire
// meanwhile, and its own lease's validity, measured on its monotonic
// clock, runs out as it would in a real pause.
//
// Started with Nemesis.StartClientPause, the pause records when the client
// actually stopped and resumed (a fault.KindClientHeld fault inside the armed
// one) and ends on its own once the client resumes, or when it was not
// reached within a bound.
type ClientPause struct {
	Gate *ClientGate
	At   fault.Point
	// For is how long the client stays stopped once it reaches At.
	For time.Duration
	// Proc, when set, is the client's own process (a lock driver): once
	// the client reaches At, the process is stopped with SIGSTOP for For
	// rather than the client held at its gate — a real pause, every
	// thread of it, at a chosen moment.
	Proc ProcessPauser

	// armed is set by Inject, for StartClientPause.
	armed *gatePause
}

// Describe implements Fault.
func (c ClientPause) Describe() history.Fault {
	// The client goes in Nodes so that reports draw the pause in its lane.
	d := fmt.Sprintf("%s paused at %s", c.Gate.Name(), c.At)
	if c.Proc != nil {
		d = fmt.Sprintf("%s's process stopped (SIGSTOP) at %s", c.Gate.Name(), c.At)
	}
	if c.For > 0 {
		d += fmt.Sprintf(" for %v once there", c.For)
	}
	return history.Fault{Kind: fault.KindClientPause, Nodes: []string{c.Gate.Name()}, Detail: d}
}

// Inject implements Fault.
func (c ClientPause) Inject(context.Context) (Heal, error) {
	_, release, err := c.Gate.arm(c.At, c.For, c.Proc)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error { release(); return nil }, nil
}

// clientPauseArmed is what StartClientPause injects: the pause, keeping
// the armed gate for the watcher.
type clientPauseArmed struct {
	*ClientPause
}

func (c clientPauseArmed) Inject(context.Context) (Heal, error) {
	pz, release, err := c.Gate.arm(c.At, c.For, c.Proc)
	if err != nil {
		return nil, err
	}
	c.armed = pz
	return func(context.Context) error { release(); return nil }, nil
}

// clientHeld is the record of a client stopped at its point; injecting and
// healing it does nothing, the gate holds and releases the client.
type clientHeld struct {
	client string
	at     fault.Point // empty: stopped by signal wherever it was
	hold   time.Duration
	// signal: the client's process was stopped by SIGSTOP.
	signal bool
}

func (c clientHeld) Describe() history.Fault {
	d := fmt.Sprintf("%s stopped at %s", c.client, c.at)
	if c.signal {
		d = fmt.Sprintf("%s's process stopped by SIGSTOP", c.client)
		if c.at != "" {
			d += fmt.Sprintf(" at %s", c.at)
		}
	}
	if c.hold > 0 {
		d += fmt.Sprintf(" for %v", c.hold)
	}
	return history.Fault{Kind: fault.KindClientHeld, Nodes: []string{c.client}, Detail: d, Point: string(c.at)}
}

func (clientHeld) Inject(context.Context) (Heal, error) {
	return func(context.Context) error { return nil }, nil
}

// StartClientPause arms p and returns its fault id and a channel closed
// once the pause is over: the client was held for p.For after reaching
// p.At, or did not reach it within `within` (zero: no bound), or the pause
// was healed (Stop, StopKind, HealAll). It records the stretch in which
// the client was actually stopped as a fault.KindClientHeld fault, and ends the
// armed fault itself when the client resumes.
func (m *Nemesis) StartClientPause(ctx context.Context, p ClientPause, within time.Duration) (int, <-chan struct{}, error) {
	cp := &p
	id, err := m.Start(ctx, clientPauseArmed{cp})
	if err != nil {
		return 0, nil, err
	}
	pz := cp.armed
	over := make(chan struct{})
	// The watcher outlives the step that armed the pause.
	bg := context.WithoutCancel(ctx)
	go func() {
		defer close(over)
		var bound <-chan time.Time
		if within > 0 {
			t := time.NewTimer(within)
			defer t.Stop()
			bound = t.C
		}
		select {
		case <-pz.reached:
		case <-pz.release:
			return // healed before the client got there
		case <-bound:
			// Never reached: disarm. ErrNotActive here and below means a
			// heal step or HealAll ended the fault first; the heals
			// themselves cannot fail.
			_ = m.Stop(bg, id)
			return
		case <-ctx.Done():
			return // the run ends; HealAll heals what is left
		}
		held, err := m.Start(bg, clientHeld{client: p.Gate.Name(), at: p.At, hold: p.For, signal: p.Proc != nil})
		<-pz.release
		if err == nil {
			_ = m.Stop(bg, held)
		}
		_ = m.Stop(bg, id)
	}()
	return id, over, nil
}
