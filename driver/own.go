package driver

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A driver is a program of the user's, and what it starts is the harness's
// to end: a child that starts a session of its own (setsid) leaves the
// driver's process group, and one that keeps the driver's stdout open would
// keep the harness reading it forever. So each driver process is started
// in a cgroup (v2) of its own where the machine lets the harness make one:
// every descendant stays in it whatever it does with sessions and groups,
// and cgroup.kill ends them all at once. Where there is no writable cgroup
// v2 hierarchy, the driver gets a session of its own (setsid), which its
// children share unless they leave it; Proc.Owned says which.

// cgroupPrefix names the harness's driver cgroups: cgroupPrefix + the
// harness's pid + "-" + a sequence number, so that a later start can tell
// a dead harness's leftovers from a live one's.
const cgroupPrefix = "splitbrain-driver-"

var (
	cgroupSeq atomic.Int64
	reapOnce  sync.Once
)

// owner is the cgroup a driver process and its descendants run in.
type owner struct {
	dir string
	fd  *os.File
}

// newOwner makes a cgroup for one driver, after reaping what dead
// harnesses left; it returns why there is none when it cannot make one.
func newOwner() (*owner, error) {
	base, err := cgroupBase()
	if err != nil {
		return nil, err
	}
	// Once per harness: a dead harness's leftovers do not come back.
	reapOnce.Do(func() { reapCgroups(base) })
	dir := filepath.Join(base, fmt.Sprintf("%s%d-%d", cgroupPrefix, os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("no cgroup for the driver: %w", err)
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("no cgroup for the driver: %w", err)
	}
	return &owner{dir: dir, fd: fd}, nil
}

// attr starts the process in the cgroup (clone3's CLONE_INTO_CGROUP: it is
// in there from its first instruction, before it can start anything).
func (o *owner) attr(a *syscall.SysProcAttr) {
	a.UseCgroupFD = true
	a.CgroupFD = int(o.fd.Fd())
}

// killAll kills every process in the cgroup and waits, briefly, until it
// is empty.
func (o *owner) killAll() error {
	if err := os.WriteFile(filepath.Join(o.dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return fmt.Errorf("killing the driver's cgroup %s: %w", o.dir, err)
	}
	deadline := time.Now().Add(stopGrace)
	for populated(o.dir) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the driver's cgroup %s still has processes %v after cgroup.kill", o.dir, stopGrace)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// remove removes the (empty) cgroup.
func (o *owner) remove() error {
	_ = o.fd.Close()
	if err := os.Remove(o.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the driver's cgroup: %w", err)
	}
	return nil
}

// populated reports whether the cgroup (or a descendant) has a process.
func populated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "populated "); ok {
			return v != "0"
		}
	}
	return false
}

// cgroupBase is the harness's own cgroup in the cgroup v2 hierarchy, where
// the drivers' cgroups are made.
func cgroupBase() (string, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("no cgroup for the driver: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return filepath.Join(mount, filepath.Clean("/"+p)), nil
		}
	}
	return "", errors.New("no cgroup for the driver: the harness is in no cgroup v2")
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("no cgroup for the driver: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options... - fstype source super
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4], nil
			}
		}
	}
	return "", errors.New("no cgroup for the driver: no cgroup v2 hierarchy is mounted")
}

// reapCgroups kills and removes the driver cgroups of harnesses that are no
// longer running: whatever their drivers left behind when the harness died.
func reapCgroups(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), cgroupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		o := &owner{dir: filepath.Join(base, e.Name())}
		if o.killAll() == nil {
			_ = os.Remove(o.dir)
		}
	}
}

// alive reports whether process pid exists (EPERM: it does, another
// user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
