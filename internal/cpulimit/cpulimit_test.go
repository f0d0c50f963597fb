package cpulimit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuTime is the CPU time process pid has used (user + system).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// After the command's name in parentheses: fields 14 and 15 of
	// stat(5), utime and stime in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// used is the CPU time pid uses over d of wall time.
func used(t *testing.T, pid int, d time.Duration) (cpu, wall time.Duration) {
	c0, w0 := cpuTime(t, pid), time.Now()
	time.Sleep(d)
	return cpuTime(t, pid) - c0, time.Since(w0)
}

// A limited process runs at most its share of a CPU — a bound the kernel
// keeps however busy the machine is — and the kernel says it held it
// back; the undo puts it back in its cgroup, removes the limit's, and
// it runs past its share again.
func TestLimitStarvesAndUndoRestores(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("this machine gives no CPU limits: %v", err)
	}
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Process.Kill(); _ = busy.Wait() }()
	pid := busy.Process.Pid
	before, err := Cgroup(pid)
	if err != nil {
		t.Fatal(err)
	}
	const share = 0.05
	undo, err := Limit(pid, share)
	if err != nil {
		t.Fatal(err)
	}
	in, err := Cgroup(pid)
	if err != nil {
		t.Fatal(err)
	}
	if in == before || !strings.Contains(filepath.Base(in), prefix) {
		t.Errorf("limited process in cgroup %s, want one of the harness's own (it was in %s)", in, before)
	}
	cpu, wall := used(t, pid, time.Second)
	// share of every 100 ms period, and a period's share and two clock
	// ticks for the periods cut by the measurement's ends.
	bound := time.Duration(share*float64(wall)) + time.Duration(share*Period)*time.Microsecond + 20*time.Millisecond
	if cpu > bound {
		t.Errorf("limited to %v of a CPU, the process used %v of CPU in %v, more than %v", share, cpu, wall, bound)
	}
	if n, err := Throttled(pid); err != nil || n == 0 {
		t.Errorf("nr_throttled %d (%v), want the kernel to have held the process back", n, err)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if after, err := Cgroup(pid); err != nil || after != before {
		t.Errorf("after the undo the process is in %s (%v), want its cgroup from before, %s", after, err, before)
	}
	if matches, _ := filepath.Glob(filepath.Join(found.base, prefix+strconv.Itoa(os.Getpid())+"-*")); len(matches) != 0 {
		t.Errorf("limit cgroups left after the undo: %v", matches)
	}
	if cpu, wall := used(t, pid, time.Second); cpu <= bound {
		t.Errorf("after the undo the process used %v of CPU in %v, no more than its limit allowed (%v)", cpu, wall, bound)
	}
	if err := undo(); err != nil {
		t.Errorf("a second undo: %v", err)
	}
}

func TestCheckShare(t *testing.T) {
	for _, s := range []float64{0, 0.001, 1, 2, -0.5} {
		if CheckShare(s) == nil {
			t.Errorf("share %v accepted", s)
		}
	}
	for _, s := range []float64{0.01, 0.05, 0.5} {
		if err := CheckShare(s); err != nil {
			t.Errorf("share %v: %v", s, err)
		}
	}
}
