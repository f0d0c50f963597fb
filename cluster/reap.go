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

// liveRun is a run's entry in the live registry: a folder named after the
// run holding the owner (the harness process) and one pid file per child.
// A harness killed with SIGKILL cannot clean up; the next start finds its
// entry, sees the owner is gone and reaps what the entry lists.
type liveRun struct {
	id  string
	dir string
}

// registerRun creates the run's entry. data is the folder of the nodes'
// data, which a reaper removes along with the processes.
func registerRun(base, id, data string) (*liveRun, error) {
	dir := filepath.Join(base, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("live registry: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte(data), 0o600); err != nil {
		return nil, fmt.Errorf("live registry: %w", err)
	}
	start, err := ProcStartTime(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("live registry: %w", err)
	}
	owner := fmt.Sprintf("%d %d\n", os.Getpid(), start)
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(owner), 0o600); err != nil {
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
// registry entries with their clock offset files. Runs whose harness is
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
		if data, err := os.ReadFile(filepath.Join(dir, "data")); err == nil && filepath.IsAbs(string(data)) &&
			filepath.Base(string(data)) == "nodes" {
			errs = append(errs, os.RemoveAll(string(data)))
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
	b, err := os.ReadFile(filepath.Join(dir, "owner"))
	if err != nil {
		// An entry being created right now has no owner file yet; one
		// without it for long is garbage, but never worth a wrong kill.
		info, serr := os.Stat(dir)
		return serr == nil && info.ModTime().After(time.Now().Add(-graceForNewEntries))
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscanf(string(b), "%d %d", &pid, &start); err != nil {
		return false
	}
	got, err := ProcStartTime(pid)
	return err == nil && got == start
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

// procStartTime reads a process's start time (clock ticks since boot).
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

// procState reads a process's state letter (R, S, T, Z, ...).
func procState(pid int) (byte, error) {
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
