package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"splitbrain/cluster"
	"splitbrain/driver"
	"splitbrain/internal/private"
	"splitbrain/nemesis"
	"splitbrain/scenarios/spec"
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

// startDriver starts a client's driver process,
// registered in the run's driver registry entry (made at the first),
// logging to logs/driver-CLIENT.log; a built-in driver's program is
// written into the entry's private folder first.
func (r *runner) startDriver(ctx context.Context, cfg driver.Config) (*driver.Proc, error) {
	if r.drivers == nil {
		cache := r.cacheDir
		if cache == "" {
			var err error
			if cache, err = cluster.DefaultCacheDir(); err != nil {
				return nil, err
			}
		}
		live, reaped, err := cluster.RegisterLive(cache, "drv-"+cluster.RandomHex(8))
		for _, line := range reaped {
			r.logf("drivers: killed the leftover %s", line)
		}
		if err != nil {
			return nil, fmt.Errorf("drivers: %w", err)
		}
		r.drivers = &driverRig{live: live, procs: map[string]*driver.Proc{}, logf: r.logf}
	}
	if len(cfg.Command) == 0 {
		var err error
		if cfg.Command, err = driver.Builtin(cfg.Name, r.drivers.live.Dir()); err != nil {
			return nil, err
		}
	}
	logf, err := private.Append(filepath.Join(r.runDir, "logs", "driver-"+cfg.Client+".log"))
	if err != nil {
		return nil, fmt.Errorf("drivers: %w", err)
	}
	r.drivers.mu.Lock()
	r.drivers.logs = append(r.drivers.logs, logf)
	r.drivers.mu.Unlock()
	cfg.Live, cfg.Log = r.drivers.live, logf
	p, err := driver.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.drivers.mu.Lock()
	r.drivers.procs[cfg.Client] = p
	r.drivers.mu.Unlock()
	r.logf("%s: driver %s started (pid %d), points %v", cfg.Client, p.Name(), p.Pid(), p.Points())
	return p, nil
}

// byClient are the driver processes by client; nil when the lock runs
// in-process.
func (d *driverRig) byClient() map[string]*driver.Proc {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.procs)
}

// pausers are the driver processes by client, for a random schedule's
// real pauses; nil when the lock runs in-process.
func (d *driverRig) pausers() map[string]nemesis.ProcessPauser {
	if d == nil {
		return nil
	}
	out := map[string]nemesis.ProcessPauser{}
	for c, p := range d.byClient() {
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

// library is the library and client the run's drivers said they run
// (their ready's), "" when the lock ran inside the harness; drivers that
// said different things (they should not) are listed apart.
func (d *driverRig) library() string {
	if d == nil {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, p := range d.procs {
		if v := p.Ready().Versions(); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// belief is the run's belief sentence: the lock kind's.
func belief(sc *spec.Scenario) string {
	if k := sc.LockKind(); k != nil {
		return k.Belief
	}
	return ""
}
