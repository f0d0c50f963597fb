package scenarios

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"

	"splitbrain/cluster"
	"splitbrain/driver"
	"splitbrain/nemesis"
)

// driverRig is a run's lock driver processes, one per client, registered
// in the live-run registry under an entry of their own, so that a harness
// killed outright leaves none the next start does not reap.
type driverRig struct {
	live  *cluster.LiveRun
	procs map[string]*driver.Proc
	logs  []*os.File
	logf  func(string, ...any)

	mu sync.Mutex
}

// pausers are the driver processes by client, for a random schedule's
// real pauses; nil when the lock runs in-process.
func (d *driverRig) pausers() map[string]nemesis.ProcessPauser {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]nemesis.ProcessPauser{}
	for c, p := range d.procs {
		out[c] = p
	}
	return out
}

// broken is the first driver (by client name) that broke the protocol
// or died during the run, or nil.
func (d *driverRig) broken() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	clients := make([]string, 0, len(d.procs))
	for c := range d.procs {
		clients = append(clients, c)
	}
	slices.Sort(clients)
	for _, c := range clients {
		if err := d.procs[c].Broken(); err != nil {
			return err
		}
	}
	return nil
}

// close stops every driver and removes the registry entry.
func (d *driverRig) close(ctx context.Context) error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, 0, len(d.procs))
	var emu sync.Mutex
	for _, p := range d.procs {
		wg.Go(func() {
			if err := p.Stop(ctx); err != nil {
				// A driver that ignores the end of its stdin is killed; the
				// run is over, so this is for the log, not a failure.
				emu.Lock()
				defer emu.Unlock()
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		d.logf("%v", err)
	}
	errs = errs[:0]
	for _, f := range d.logs {
		errs = append(errs, f.Close())
	}
	errs = append(errs, d.live.Remove())
	return errors.Join(errs...)
}
