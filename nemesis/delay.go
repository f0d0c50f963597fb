package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"splitbrain/fault"
	"splitbrain/history"
)

// Delay holds every byte on a set of links for By before delivering it, in
// order: the GitHub 90-second packet delay. Nothing is lost — a write sent
// now lands By later, long after its sender may have given up on it.
// Healing delivers what is still held at once and lets new bytes through
// undelayed. The delay is applied in user space (the kernel here has no
// netem), by toxiproxy's latency toxic, with no jitter.
type Delay struct {
	Net   *Net
	Links []history.Link
	// Direction is which bytes are held; the zero value is fault.Both. A held
	// request delays the command; a held reply delays the answer only.
	Direction fault.Direction
	By        time.Duration
}

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
	return d.Net.poison(ctx, "delay", d.Links, d.Direction, "latency",
		fmt.Sprintf(`{"latency":%d,"jitter":0}`, d.By.Milliseconds()), nil)
}
