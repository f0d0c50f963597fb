package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"

	"splitbrain/fault"
	"splitbrain/history"
)

// Delay holds every byte on a set of links for By before delivering it, in
// order: the GitHub 90-second packet delay. Nothing is lost — a write sent
// now lands By later, long after its sender may have given up on it.
// Healing delivers what is still held at once and lets new bytes through
// undelayed. The delay is applied in user space (the kernel here has no
// netem), by a toxic of our own in toxiproxy's chain (delayToxic).
type Delay struct {
	Net   *Net
	Links []history.Link
	// Direction is which bytes are held; the zero value is fault.Both. A held
	// request delays the command; a held reply delays the answer only.
	Direction fault.Direction
	By        time.Duration
}

// Available implements Limited: every link's node must take link faults.
func (d Delay) Available() error { return d.Net.available(d.Links) }

// Describe implements Fault.
func (d Delay) Describe() history.Fault {
	return history.Fault{Kind: fault.KindDelay, Links: d.Links,
		Detail: fmt.Sprintf("%s held %v", fault.DescribeLinks(d.Links, "⏳"+d.Direction.Arrow()), d.By)}
}

// Inject implements Fault.
func (d Delay) Inject(ctx context.Context) (Heal, error) {
	if d.By < time.Millisecond || d.By > fault.MaxDelay {
		return nil, fmt.Errorf("delay: %v, want 1ms to %v", d.By, fault.MaxDelay)
	}
	if d.By%time.Millisecond != 0 {
		return nil, errors.New("delay: want whole milliseconds")
	}
	var held []*delayToxic
	// The heal poison returns would remove the toxics; a delay is healed
	// by releasing them instead (see delayToxic), so that one is dropped.
	if _, err := d.Net.poison(ctx, "delay", d.Links, d.Direction, delayToxicType,
		fmt.Sprintf(`{"latency":%d}`, d.By.Milliseconds()), func(w *toxics.ToxicWrapper) {
			if t, ok := w.Toxic.(*delayToxic); ok {
				held = append(held, t)
				d.Net.onClose(t.stop)
			}
		}); err != nil {
		return nil, err
	}
	return func(context.Context) error {
		for _, t := range held {
			t.release()
		}
		return nil
	}, nil
}

// delayToxicType is the name of delayToxic in toxiproxy's registry.
const delayToxicType = "splitbrain_delay"

// delayToxic holds each chunk until Latency after the proxy read it, then
// passes it on, in order. The heal releases it: what is held goes at once
// and later bytes pass straight through; the toxic stays in the chain,
// harmless, until the proxy stops.
//
// Why not toxiproxy's latency toxic, removed at the heal: removing a toxic
// holds the proxy's toxic lock while it drains each connection, and a
// connection whose client hung up meanwhile (a client that timed out on a
// held reply closes it) has no writer left, so every chunk still held for
// it waits out a 5 s timeout. Under load that held heals for 20 s to
// over 2 minutes, and the proxy accepted no connection meanwhile (seen in
// delay-reply-counter, CI and suite --runs). Releasing never waits on a
// connection.
type delayToxic struct {
	Latency int64 `json:"latency"` // milliseconds

	once     sync.Once
	released chan struct{} // closed by the heal
	stopped  chan struct{} // closed when the Net closes
	relOnce  sync.Once
	stopOnce sync.Once
}

func (t *delayToxic) chans() (released, stopped chan struct{}) {
	t.once.Do(func() {
		t.released = make(chan struct{})
		t.stopped = make(chan struct{})
	})
	return t.released, t.stopped
}

func (t *delayToxic) release() {
	r, _ := t.chans()
	t.relOnce.Do(func() { close(r) })
}

// stop ends the toxic's goroutines that still wait to hand a chunk to a
// connection nobody writes any more (its client hung up): they would
// otherwise outlive the run.
func (t *delayToxic) stop() {
	_, s := t.chans()
	t.stopOnce.Do(func() { close(s) })
}

// delayState is one connection's: the chunk the toxic held when toxiproxy
// interrupted it (to put another toxic after it), sent first when it runs
// again, so that an interruption neither loses a byte nor waits on the
// connection.
type delayState struct{ pending *stream.StreamChunk }

// NewState implements toxics.StatefulToxic.
func (t *delayToxic) NewState() any { return new(delayState) }

// Pipe implements toxics.Toxic.
func (t *delayToxic) Pipe(stub *toxics.ToxicStub) {
	released, stopped := t.chans()
	st, _ := stub.State.(*delayState)
	if st == nil {
		st = new(delayState)
	}
	by := time.Duration(t.Latency) * time.Millisecond
	for {
		c := st.pending
		st.pending = nil
		if c == nil {
			select {
			case <-stub.Interrupt:
				return
			case <-stopped:
				return
			case c = <-stub.Input:
			}
		}
		if c == nil {
			stub.Close()
			return
		}
		if wait := by - time.Since(c.Timestamp); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-released:
			case <-stub.Interrupt:
				timer.Stop()
				st.pending = c
				return
			case <-stopped:
				timer.Stop()
				return
			}
			timer.Stop()
		}
		select {
		case stub.Output <- c:
		case <-stub.Interrupt:
			st.pending = c
			return
		case <-stopped:
			return
		}
	}
}
