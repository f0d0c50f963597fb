package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// graceForNewStateDirs covers the instant between creating a run's state
// folder and writing its owner file.
const graceForNewStateDirs = time.Minute

// Reap removes what runs of dead harnesses left behind: their containers
// (paused or not), volumes and networks in the engine, found by label, and
// their host-side folders under cacheDir. A run is reaped only when its
// harness is provably gone — same host, and no process with its pid and
// start time (or it ran before the last boot); runs of live harnesses, of
// other hosts sharing the engine, and objects without owner labels are left
// alone. It returns one line per reaped run, for the log.
func (e *Engine) Reap(ctx context.Context, cacheDir string) ([]string, error) {
	self, err := currentOwner()
	if err != nil {
		return nil, err
	}
	runs, err := e.runOwners(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker: reap: %w", err)
	}
	ids := make([]string, 0, len(runs))
	for id := range runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var reaped []string
	var errs []error
	for _, id := range ids {
		o := runs[id]
		if o.liveness(self) != ownerDead {
			continue
		}
		if err := e.removeRun(ctx, id); err != nil {
			if stale := staleOnly(err); stale != nil {
				// The engine's own leftover, not one we can remove: say
				// so and go on, rather than fail every run after it.
				reaped = append(reaped, fmt.Sprintf("run %s (harness pid %d, gone), all but its network: %v", id, o.PID, stale))
				continue
			}
			errs = append(errs, err)
			continue
		}
		reaped = append(reaped, fmt.Sprintf("run %s (harness pid %d, gone)", id, o.PID))
	}
	if cacheDir != "" {
		errs = append(errs, reapStateDirs(filepath.Join(cacheDir, stateRoot), self))
	}
	return reaped, errors.Join(errs...)
}

// runOwners maps the id of each run that has a container, volume or network
// in the engine to the harness that made it, read from the first of its
// objects with readable owner labels. Runs without any are absent, and so
// never reaped.
func (e *Engine) runOwners(ctx context.Context) (map[string]owner, error) {
	sel := map[string]string{labelRun: ""}
	var all []objectInfo
	for _, list := range []func(context.Context, map[string]string) ([]objectInfo, error){
		e.listContainers, e.listVolumes, e.listNetworks,
	} {
		objs, err := list(ctx, sel)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	runs := map[string]owner{}
	for _, o := range all {
		id := o.Labels[labelRun]
		if _, seen := runs[id]; seen || id == "" {
			continue
		}
		if ow, ok := ownerFromLabels(o.Labels); ok {
			runs[id] = ow
		}
	}
	return runs, nil
}

// reapStateDirs removes the host-side folders of runs whose harness is gone.
func reapStateDirs(base string, self owner) error {
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("docker: reap: %w", err)
	}
	var errs []error
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		dir := filepath.Join(base, ent.Name())
		if !stateDirDead(dir, self) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("docker: reap: %w", err))
		}
	}
	return errors.Join(errs...)
}

func stateDirDead(dir string, self owner) bool {
	b, err := os.ReadFile(filepath.Join(dir, "owner.json"))
	if errors.Is(err, fs.ErrNotExist) {
		// Being created right now, or garbage from a crash between mkdir
		// and the owner's write.
		info, serr := os.Stat(dir)
		return serr == nil && info.ModTime().Before(time.Now().Add(-graceForNewStateDirs))
	}
	var o owner
	if err != nil || json.Unmarshal(b, &o) != nil {
		return false // unreadable: never worth a wrong removal
	}
	return o.liveness(self) == ownerDead
}

// staleOnly returns the *StaleNetworkError err consists of, or nil when err
// holds anything else.
func staleOnly(err error) *StaleNetworkError {
	var stale *StaleNetworkError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if e == nil {
				continue
			}
			s := staleOnly(e)
			if s == nil {
				return nil
			}
			stale = s
		}
		return stale
	}
	if errors.As(err, &stale) {
		return stale
	}
	return nil
}
