package nemesis

import (
	"context"
	"fmt"

	"splitbrain/fault"
	"splitbrain/history"
)

// ProcessPauser is a client that runs as a process of its own (a lock
// driver): the harness can stop it for real.
type ProcessPauser interface {
	// Pause stops the process (SIGSTOP), wherever it is.
	Pause() error
	// Resume continues it (SIGCONT).
	Resume() error
}

// ClientStop is the GC pause as it really happens: the client's process
// stopped with SIGSTOP at whatever instruction it is, not at a point of
// its lock work, and continued with SIGCONT at the heal. Recorded as a
// client pause in the client's lane; the stretch it held the client is
// recorded beside it as a fault.KindClientHeld fault (see ScheduledClientPause).
type ClientStop struct {
	Client string
	Proc   ProcessPauser
}

// Describe implements Fault.
func (c ClientStop) Describe() history.Fault {
	return history.Fault{Kind: fault.KindClientPause, Nodes: []string{c.Client},
		Detail: fmt.Sprintf("%s's process stopped (SIGSTOP) wherever it was", c.Client)}
}

// Inject implements Fault.
func (c ClientStop) Inject(context.Context) (Heal, error) {
	if err := c.Proc.Pause(); err != nil {
		return nil, err
	}
	return func(context.Context) error { return c.Proc.Resume() }, nil
}
