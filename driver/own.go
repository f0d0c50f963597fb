package driver

import (
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

	"splitbrain/internal/cpulimit"
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
	base, err := cpulimit.V2Base()
	if err != nil {
		return nil, fmt.Errorf("no cgroup for the driver: %w", err)
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

// reapCgroups kills and removes the driver cgroups of harnesses that are no
// longer running: whatever their drivers left behind when the harness died.
func reapCgroups(base string) {
	for _, dir := range cpulimit.DeadHarnesses(base, cgroupPrefix) {
		o := &owner{dir: dir}
		if o.killAll() == nil {
			_ = os.Remove(o.dir)
		}
	}
}

// errNoPressure: the kernel keeps no pressure counts for the cgroup.
var errNoPressure = errors.New("the kernel keeps no CPU pressure count (PSI) for the driver's cgroup")

// cpuWaited reads the cgroup's cpu.pressure: the total time, in all,
// that some process of the cgroup had work and waited for a CPU (its
// "some" line's total, in µs).
func (o *owner) cpuWaited() (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(o.dir, "cpu.pressure"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, errNoPressure
	}
	if err != nil {
		return 0, fmt.Errorf("reading the driver's CPU pressure: %w", err)
	}
	return someTotal(string(b))
}

// someTotal is the total of a pressure file's "some" line
// ("some avg10=0.00 avg60=0.00 avg300=0.00 total=1234", µs).
func someTotal(pressure string) (time.Duration, error) {
	for _, l := range strings.Split(pressure, "\n") {
		rest, ok := strings.CutPrefix(l, "some ")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil || us < 0 {
					return 0, fmt.Errorf("the CPU pressure's total %q is no count of microseconds", v)
				}
				return time.Duration(us) * time.Microsecond, nil
			}
		}
	}
	return 0, fmt.Errorf("the CPU pressure %q has no \"some … total=\"", strings.TrimSpace(pressure))
}
