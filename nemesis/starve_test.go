package nemesis_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/fault"
	"splitbrain/internal/cpulimit"
	"splitbrain/nemesis"
)

// procCPU is the CPU time process pid has used.
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// A starved node runs at most its share of a CPU while busy (a Lua loop
// of CPU work takes many times the CPU time it uses), the kernel says it
// held the server back, and the heal puts it back where it was, after
// which the same work runs unthrottled.
func TestStarveNodeRunsSlowerUntilHealed(t *testing.T) {
	if err := cpulimit.Available(); err != nil {
		t.Skipf("this machine gives no CPU limits: %v", err)
	}
	cl := startNodes(t, 1)
	ctx := context.Background()
	n := cl.Processes()[0]
	rec := &memRecorder{}
	nem := nemesis.New(rec)
	defer nem.HealAll(ctx)
	pid := n.PID()
	before, err := cpulimit.Cgroup(pid)
	if err != nil {
		t.Fatal(err)
	}
	// The harness's own connection gives up after a second.
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: cl.Password(), ReadTimeout: time.Minute})
	defer c.Close()
	// work is a script of CPU work: its wall time and the CPU it took.
	work := func() (wall, cpu time.Duration) {
		c0, w0 := procCPU(t, pid), time.Now()
		if err := c.Eval(ctx, "local x = 0 for i = 1, 10000000 do x = x + i end return 1", nil).Err(); err != nil {
			t.Fatal(err)
		}
		return time.Since(w0), procCPU(t, pid) - c0
	}
	const share = 0.05
	id, err := nem.Start(ctx, nemesis.Starve{Node: n, Share: share})
	if err != nil {
		t.Fatal(err)
	}
	wall, cpu := work()
	// A period's share and two clock ticks for the periods the
	// measurement's ends cut.
	bound := time.Duration(share*float64(wall)) + 5*time.Millisecond + 20*time.Millisecond
	if cpu > bound {
		t.Errorf("starved to %v of a CPU, the server used %v of CPU in %v of wall time, more than %v", share, cpu, wall, bound)
	}
	if th, err := cpulimit.Throttled(pid); err != nil || th == 0 {
		t.Errorf("nr_throttled %d (%v), want the kernel to have held the server back", th, err)
	}
	t.Logf("starved: the script took %v of wall time for %v of CPU", wall, cpu)
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if after, err := cpulimit.Cgroup(pid); err != nil || after != before {
		t.Errorf("after the heal the server is in %s (%v), want %s", after, err, before)
	}
	wall, cpu = work()
	if limit := time.Duration(share*float64(wall)) + 25*time.Millisecond; cpu <= limit {
		t.Errorf("after the heal the server used %v of CPU in %v, no more than its limit allowed (%v)", cpu, wall, limit)
	}
	t.Logf("healed: the script took %v of wall time for %v of CPU", wall, cpu)
	fs := rec.faults(t)
	if len(fs) != 2 || fs[0].Kind != fault.KindStarve || fs[0].Nodes[0] != "n1" || fs[0].Detail != "n1 starved: 5% of one CPU" {
		t.Errorf("recorded %+v, want n1's starvation", fs)
	}
}

// A client whose lock runs inside the harness has no process of its own
// to starve.
func TestStarveInProcessClientRefused(t *testing.T) {
	err := nemesis.Starve{Client: "c1", Share: 0.1}.Available()
	if err == nil || !strings.Contains(err.Error(), "runs inside the harness") {
		t.Errorf("starving an in-process client: %v, want refused", err)
	}
}
