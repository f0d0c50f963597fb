package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// graceForNewEntries covers the instant between creating an entry and
// writing its owner file.
const graceForNewEntries = time.Minute

// RunEnv marks every process a run starts, so that leftovers of a crashed
// harness can be told apart from processes splitbrain did not start.
const RunEnv = "SPLITBRAIN_RUN"

// liveRun is a run's entry in the live registry: a private folder named
// after the run holding the owner (the harness process), one pid file per
// child and the nodes' state (configs, data, clock offset files). A harness
// killed with SIGKILL cannot clean up; the next start finds its entry, sees
// the owner is gone, kills what the entry lists and removes the entry with
// the nodes' state.
type liveRun struct {
	id  string
	dir string
}

// registerRun creates the run's entry under base, which must be private.
func registerRun(base, id string) (*liveRun, error) {
	dir := filepath.Join(base, id)
	if err := newPrivateDir(dir); err != nil {
		return nil, fmt.Errorf("live registry: %w", err)
	}
	start, err := ProcStartTime(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("live registry: %w", err)
	}
	// Written aside and renamed into place: a reaper running beside us
	// (another run starting) must never read a half-written owner file
	// and take this live run for a dead one.
	owner := fmt.Sprintf("%d %d\n", os.Getpid(), start)
	tmp := filepath.Join(dir, "owner.tmp")
	if err := os.WriteFile(tmp, []byte(owner), 0o600); err != nil {
		return nil, fmt.Errorf("live registry: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "owner")); err != nil {
		return nil, fmt.Errorf("live registry: %w", err)
	}
	return &liveRun{id: id, dir: dir}, nil
}

func (r *liveRun) path(name string) string { return filepath.Join(r.dir, name) }

// addPID records a child by pid and start time, so that a recycled pid is
// never mistaken for it.
func (r *liveRun) addPID(name string, pid int) error {
	start, err := ProcStartTime(pid)
	if err != nil {
		return fmt.Errorf("live registry: %w", err)
	}
	return os.WriteFile(r.path(name+".pid"), fmt.Appendf(nil, "%d %d\n", pid, start), 0o600)
}

func (r *liveRun) removePID(name string) {
	_ = os.Remove(r.path(name + ".pid"))
}

func (r *liveRun) remove() error { return os.RemoveAll(r.dir) }

// Reap removes the leftovers of runs whose harness died without cleaning up:
// it kills the processes they started (only those whose environment carries
// the run's marker, so a recycled pid is never hit) and deletes their
// registry entries with the nodes' state. Runs whose harness is
// still alive are left alone. It returns what it killed, for the log.
func Reap(base string) ([]string, error) {
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reap: %w", err)
	}
	var killed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		if ownerAlive(dir) {
			continue
		}
		pids, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
		for _, pf := range pids {
			b, err := os.ReadFile(pf)
			if err != nil {
				continue
			}
			var pid int
			var start uint64
			if _, err := fmt.Sscanf(string(b), "%d %d", &pid, &start); err != nil {
				continue
			}
			if got, err := ProcStartTime(pid); err != nil || got != start || !startedBy(pid, e.Name()) {
				continue
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed = append(killed, fmt.Sprintf("run %s: %s (pid %d)", e.Name(),
					strings.TrimSuffix(filepath.Base(pf), ".pid"), pid))
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return killed, errors.Join(errs...)
}

// ownerAlive reports whether the harness that registered dir still runs.
// The start time guards against the owner's pid having been recycled.
func ownerAlive(dir string) bool {
	// An entry being created right now has no owner file yet (or, from
	// an older harness that wrote it in place, an incomplete one); one
	// like that for long is garbage, but never worth a wrong kill.
	young := func() bool {
		info, err := os.Stat(dir)
		return err == nil && info.ModTime().After(time.Now().Add(-graceForNewEntries))
	}
	b, err := os.ReadFile(filepath.Join(dir, "owner"))
	if err != nil {
		return young()
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscanf(string(b), "%d %d", &pid, &start); err != nil {
		return young()
	}
	return ProcAlive(pid, start)
}

// ProcAlive reports whether the process pid that started at start (clock
// ticks since boot, as ProcStartTime reads it) still runs. The start time
// guards against a recycled pid; a zombie has died and only waits to be
// waited for (an orphaned harness, its supervisor killed, stays one until
// init gets to it).
func ProcAlive(pid int, start uint64) bool {
	got, err := ProcStartTime(pid)
	if err != nil || got != start {
		return false
	}
	st, err := ProcState(pid)
	return err == nil && st != 'Z'
}

// startedBy reports whether process pid carries run id's marker.
func startedBy(pid int, id string) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	want := []byte(RunEnv + "=" + id)
	for _, kv := range bytes.Split(env, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}

// ProcStartTime reads a process's start time (clock ticks since boot).
func ProcStartTime(pid int) (uint64, error) {
	fields, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	const startField = 22 - 3 // fields[0] is field 3
	if len(fields) <= startField {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return strconv.ParseUint(fields[startField], 10, 64)
}

// ProcState reads a process's state letter (R, S, T, Z, ...).
func ProcState(pid int) (byte, error) {
	fields, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return fields[0][0], nil
}

// procStat returns the fields of /proc/pid/stat from the third (state) on.
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name (field 2) may contain spaces and parentheses; the
	// fields after the last ')' are plain.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) == 0 {
		return nil, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return fields, nil
}
