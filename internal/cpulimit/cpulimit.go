// Package cpulimit starves a process of CPU: it gets a share of one CPU
// (a CFS quota, share × 100 ms of every 100 ms period) until the limit is
// lifted, so that its timers, renewals and replies run late without a
// clean pause, as under a busy machine or a noisy neighbour.
//
// It uses cgroups: v2's cpu.max where the harness's cgroup delegates the
// cpu controller to its children, else v1's cpu controller (cpu.cfs_quota_us)
// where that hierarchy is mounted and writable. Where neither is,
// Available says why, and nothing is starved. A limit moves the process
// (every thread, and what it forks meanwhile) into a cgroup of the
// harness's, named splitbrain-cpu-<harness pid>-<n>, and back into the
// cgroup it came from at the end; one a crashed harness left is emptied
// and removed by the next one.
package cpulimit

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

	"splitbrain/fault"
)

// Period is the CFS period of a limit: the process runs at most share ×
// Period of every Period.
const Period = 100_000 // µs

// MinShare and MaxShare bound a limit's share of one CPU: the kernel's
// smallest quota is 1 ms of a period; a whole CPU is no starvation.
const (
	MinShare = fault.MinCPUShare
	MaxShare = fault.MaxCPUShare
)

const prefix = "splitbrain-cpu-"

// CheckShare says what is wrong with a share of one CPU, or nil.
func CheckShare(share float64) error {
	if !(share >= MinShare && share <= MaxShare) {
		return fmt.Errorf("CPU share %v: want from %v to %v of one CPU, such as 0.05 (5%%)", share, MinShare, MaxShare)
	}
	return nil
}

// hierarchy is where limits are set on this machine.
type hierarchy struct {
	v2 bool
	// mount is the hierarchy's mount point; base (v2) the harness's own
	// cgroup in it, where limits' cgroups are made.
	mount, base string
}

var (
	found    hierarchy
	notFound error
	findOnce sync.Once
	seq      atomic.Int64
)

// Available says why a process cannot be starved here, or nil.
func Available() error {
	findOnce.Do(func() { found, notFound = find() })
	return notFound
}

// find picks the hierarchy: v2 where the harness's cgroup hands the cpu
// controller down, else a writable v1 cpu hierarchy; it proves either by
// making (and removing) a cgroup there, and reaps dead harnesses' ones.
func find() (hierarchy, error) {
	var why []string
	if m, err := mountOf("cgroup2", ""); err == nil {
		own, err := ownCgroup("")
		if err == nil {
			base := filepath.Join(m, own)
			ctl, _ := os.ReadFile(filepath.Join(base, "cgroup.subtree_control"))
			if hasWord(string(ctl), "cpu") {
				h := hierarchy{v2: true, mount: m, base: base}
				if err := h.probe(); err == nil {
					return h, nil
				} else {
					why = append(why, "cgroup v2: "+err.Error())
				}
			} else {
				why = append(why, fmt.Sprintf("cgroup v2: the harness's cgroup %s does not hand the cpu controller to its children (its cgroup.subtree_control has no cpu)", base))
			}
		} else {
			why = append(why, "cgroup v2: "+err.Error())
		}
	} else {
		why = append(why, "cgroup v2: "+err.Error())
	}
	if m, err := mountOf("cgroup", "cpu"); err == nil {
		own, err := ownCgroup("cpu")
		if err == nil {
			h := hierarchy{mount: m, base: filepath.Join(m, own)}
			if err := h.probe(); err == nil {
				return h, nil
			} else {
				why = append(why, "cgroup v1: "+err.Error())
			}
		} else {
			why = append(why, "cgroup v1: "+err.Error())
		}
	} else {
		why = append(why, "cgroup v1: "+err.Error())
	}
	return hierarchy{}, fmt.Errorf("no CPU limits on this machine: %s", strings.Join(why, "; "))
}

// probe makes and removes a cgroup where limits will go, after reaping
// what dead harnesses left there.
func (h hierarchy) probe() error {
	reap(h.base)
	dir := filepath.Join(h.base, fmt.Sprintf("%s%d-probe", prefix, os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cannot make a cgroup in %s: %w", h.base, err)
	}
	defer os.Remove(dir)
	if _, err := os.Stat(filepath.Join(dir, h.quotaFile())); err != nil {
		return fmt.Errorf("a cgroup made in %s has no %s", h.base, h.quotaFile())
	}
	return nil
}

func (h hierarchy) quotaFile() string {
	if h.v2 {
		return "cpu.max"
	}
	return "cpu.cfs_quota_us"
}

// Limit gives process pid share of one CPU until undo is called. The
// process and everything it forks meanwhile run in a cgroup of their own,
// and go back to pid's cgroup at the undo.
func Limit(pid int, share float64) (undo func() error, err error) {
	if err := CheckShare(share); err != nil {
		return nil, err
	}
	if err := Available(); err != nil {
		return nil, err
	}
	h := found
	ctrl := "cpu"
	if h.v2 {
		ctrl = ""
	}
	from, err := cgroupOf(pid, ctrl)
	if err != nil {
		return nil, err
	}
	origin := filepath.Join(h.mount, from)
	quota := max(int64(share*Period), 1000)
	if h.v2 && origin != h.base {
		// A cgroup of its own below the harness's (a lock driver's,
		// whose cgroup.kill ends it and all it started): limited where
		// it is, so that it stays there.
		if old, err := os.ReadFile(filepath.Join(origin, "cpu.max")); err == nil {
			if err := write(origin, "cpu.max", fmt.Sprintf("%d %d", quota, Period)); err != nil {
				return nil, fmt.Errorf("cpu limit of pid %d: %w", pid, err)
			}
			var once sync.Once
			var undoErr error
			return func() error {
				once.Do(func() {
					if err := write(origin, "cpu.max", strings.TrimSpace(string(old))); err != nil && !errors.Is(err, os.ErrNotExist) {
						undoErr = fmt.Errorf("lifting the cpu limit of %s: %w", origin, err)
					}
				})
				return undoErr
			}, nil
		}
	}
	dir := filepath.Join(h.base, fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cpu limit: %w", err)
	}
	fail := func(err error) (func() error, error) {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("cpu limit of pid %d: %w", pid, err)
	}
	if h.v2 {
		err = write(dir, "cpu.max", fmt.Sprintf("%d %d", quota, Period))
	} else {
		err = errors.Join(write(dir, "cpu.cfs_period_us", strconv.Itoa(Period)), write(dir, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)))
	}
	if err != nil {
		return fail(err)
	}
	// cgroup.procs moves the whole process, every thread of it.
	if err := write(dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
		return fail(err)
	}
	var once sync.Once
	var undoErr error
	return func() error {
		once.Do(func() { undoErr = release(dir, origin) })
		return undoErr
	}, nil
}

// Throttled is how many periods the processes in the limit of pid were
// held back in: the kernel's word that the limit acts (nr_throttled).
func Throttled(pid int) (int64, error) {
	if err := Available(); err != nil {
		return 0, err
	}
	ctrl := "cpu"
	if found.v2 {
		ctrl = ""
	}
	cg, err := cgroupOf(pid, ctrl)
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(found.mount, cg, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "nr_throttled "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("cpu.stat has no nr_throttled")
}

// Cgroup is pid's cgroup in the hierarchy limits use, for tests and
// messages.
func Cgroup(pid int) (string, error) {
	if err := Available(); err != nil {
		return "", err
	}
	ctrl := "cpu"
	if found.v2 {
		ctrl = ""
	}
	return cgroupOf(pid, ctrl)
}

// release moves every process of dir back to origin (or, where origin is
// gone, to dir's parent) and removes dir.
func release(dir, origin string) error {
	var errs []error
	for _, pid := range procs(dir) {
		err := write(origin, "cgroup.procs", strconv.Itoa(pid))
		if err != nil {
			err = write(filepath.Dir(dir), "cgroup.procs", strconv.Itoa(pid))
		}
		if err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lifting the cpu limit %s: %w", dir, err)
	}
	return nil
}

// reap empties and removes the limits of harnesses that no longer run.
func reap(base string) {
	for _, dir := range DeadHarnesses(base, prefix) {
		_ = release(dir, base)
	}
}

// DeadHarnesses lists the cgroups under base named prefix + a harness's
// pid (+ "-" and anything), whose harness no longer runs: what a harness
// that died left behind, for the next one to empty and remove.
func DeadHarnesses(base, prefix string) []string {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		out = append(out, filepath.Join(base, e.Name()))
	}
	return out
}

// V2Base is the harness's own cgroup in the cgroup v2 hierarchy, as a
// folder: where the cgroups it makes for its children go.
func V2Base() (string, error) {
	m, err := mountOf("cgroup2", "")
	if err != nil {
		return "", err
	}
	own, err := ownCgroup("")
	if err != nil {
		return "", err
	}
	return filepath.Join(m, own), nil
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func procs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func write(dir, file, value string) error {
	return os.WriteFile(filepath.Join(dir, file), []byte(value), 0)
}

// cgroupOf is pid's cgroup path in the hierarchy of controller ctrl (""
// for v2's unified one).
func cgroupOf(pid int, ctrl string) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", fmt.Errorf("cpu limit: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if (ctrl == "" && parts[0] == "0" && parts[1] == "") || (ctrl != "" && hasWord(strings.ReplaceAll(parts[1], ",", " "), ctrl)) {
			return filepath.Clean("/" + parts[2]), nil
		}
	}
	if ctrl == "" {
		return "", fmt.Errorf("pid %d is in no cgroup v2", pid)
	}
	return "", fmt.Errorf("pid %d is in no cgroup of the %s controller", pid, ctrl)
}

func ownCgroup(ctrl string) (string, error) { return cgroupOf(os.Getpid(), ctrl) }

// mountOf finds where a cgroup hierarchy is mounted: fstype cgroup2, or
// cgroup with option opt among its super options (v1's "cpu").
func mountOf(fstype, opt string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options... - fstype source super
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld != "-" || i+3 >= len(fields) || fields[i+1] != fstype || len(fields) <= 4 {
				continue
			}
			if opt == "" || hasWord(strings.ReplaceAll(fields[i+3], ",", " "), opt) {
				if fields[3] != "/" {
					break // a bind of a sub-tree: paths in /proc/*/cgroup do not start at it
				}
				return fields[4], nil
			}
		}
	}
	if opt != "" {
		return "", fmt.Errorf("no %s hierarchy with the %s controller is mounted", fstype, opt)
	}
	return "", fmt.Errorf("no %s hierarchy is mounted", fstype)
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}
