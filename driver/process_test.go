package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/internal/stall"
	"splitbrain/workload"
)

// These drivers are deliberately broken or scripted shell programs: what
// is tested is the harness's side of the protocol, which has nothing to do
// with a server. The real drivers run against real nodes in
// ./runner and ./cmd/splitbrain.

const ready = `read hello; echo '{"op":"ready","name":"fake","points":["after-acquire"]}'; `

type recordGate struct {
	mu     sync.Mutex
	points []string
}

func (g *recordGate) At(_ context.Context, p string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.points = append(g.points, p)
}

func start(t *testing.T, script string, timeout time.Duration) (*Proc, error) {
	t.Helper()
	p, err := Start(context.Background(), Config{
		Command: []string{"sh", "-c", script}, Name: "fake", Client: "c1",
		Nodes: []Node{{Name: "n1", Addr: "127.0.0.1:1"}}, Password: "secret",
		ReplyTimeout: timeout, StartTimeout: 30 * time.Second,
	})
	if p != nil {
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
	}
	return p, err
}

func TestBrokenDrivers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		// atStart: the driver breaks before ready.
		atStart bool
		want    []string
		noAns   bool
	}{
		{name: "garbage instead of ready", atStart: true,
			script: `read hello; echo 'Traceback: oops'; sleep 5`,
			want:   []string{"driver fake of c1", "not the protocol", `"Traceback: oops"`}},
		{name: "dies before ready", atStart: true,
			script: `read hello; echo 'cannot import redis' >&2; exit 3`,
			want:   []string{"closed its stdout before saying ready", "exit status 3", "cannot import redis"}},
		{name: "garbage reply",
			script: ready + `read req; echo 'acquired!'; sleep 5`,
			want:   []string{"not the protocol while acquire #1 was asked", `"acquired!"`}},
		{name: "unknown field",
			script: ready + `read req; echo '{"op":"reply","id":1,"result":"ok","validty_ms":3}'; sleep 5`,
			want:   []string{"unknown field", "validty_ms"}},
		{name: "wrong id",
			script: ready + `read req; echo '{"op":"reply","id":7,"result":"ok","value":"v"}'; sleep 5`,
			want:   []string{"answered #7, a request never sent or already answered, while acquire #1 was asked"}},
		{name: "bad result",
			script: ready + `read req; echo '{"op":"reply","id":1,"result":"maybe"}'; sleep 5`,
			want:   []string{`"result" "maybe"; want ok, fail or unknown`}},
		{name: "dies mid-run",
			script: ready + `read req; echo 'segfault in lock' >&2; kill -9 $$`,
			want:   []string{"exited before answering acquire #1", "signal: killed", "segfault in lock"}},
		{name: "never answers", noAns: true,
			script: ready + `read req; sleep 30`,
			want:   []string{"acquire #1: no answer in time"}},
		// Issue 33, hardening 9: an escape sequence in the name reached
		// the terminal raw.
		{name: "escape sequence in its name", atStart: true,
			script: `read hello; printf '{"op":"ready","name":"fake\\u001b]0;owned\\u0007"}\n'; sleep 5`,
			want:   []string{`"name"`, "control or unprintable character", `\x1b`}},
		{name: "a name too long", atStart: true,
			script: `read hello; printf '{"op":"ready","name":"%0200d"}\n' 0; sleep 5`,
			want:   []string{`"name" is 200 bytes long; want at most 100`}},
		{name: "escape sequence in a point",
			script: ready + `read req; printf '{"op":"point","id":1,"point":"after\\u001b[2J"}\n'; sleep 5`,
			want:   []string{`"point"`, "control or unprintable character"}},
		{name: "lost without claiming it",
			script: ready + `echo '{"op":"lost","value":"v"}'; read req; sleep 5`,
			want:   []string{`a lost from a driver whose ready did not claim "lost"`, `"{\"op\":\"lost\"`}},
		{name: "lost without a value",
			script: `read hello; echo '{"op":"ready","name":"fake","lost":true}'; echo '{"op":"lost"}'; read req; sleep 5`,
			want:   []string{`a lost needs "value"`}},
		{name: "ok without a value",
			script: ready + `read req; echo '{"op":"reply","id":1,"result":"ok"}'; sleep 5`,
			want:   []string{`answered acquire #1 ok without "value"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := start(t, tc.script, 500*time.Millisecond)
			if tc.atStart {
				if err == nil {
					t.Fatal("Start succeeded, want an error")
				}
			} else {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				l := &Lock{Proc: p}
				_, err = l.Acquire(context.Background(), "k", time.Second)
				if err == nil {
					t.Fatal("Acquire succeeded, want an error")
				}
				if errors.Is(err, workload.ErrNotAcquired) {
					t.Errorf("a broken driver's acquire is a refusal (%v), want an unknown outcome", err)
				}
				if tc.noAns != errors.Is(err, ErrNoAnswer) {
					t.Errorf("errors.Is(err, ErrNoAnswer) = %v, want %v", !tc.noAns, tc.noAns)
				}
				var de *Error
				if !tc.noAns && !errors.As(err, &de) {
					t.Errorf("error %T is not a *driver.Error", err)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the password: %v", err)
			}
			t.Logf("%v", err)
		})
	}
}

// A driver that claims lost ends a lease's belief when it says so:
// right after the acquire's reply (before the harness has made the
// lease), or in the middle of another request, which goes on; a lease it
// says nothing of stays believed.
func TestLost(t *testing.T) {
	t.Parallel()
	p, err := start(t, `read hello; echo '{"op":"ready","name":"fake","lost":true}'
read req; echo '{"op":"reply","id":1,"result":"ok","value":"v1"}'; echo '{"op":"lost","value":"v1"}'
read req; echo '{"op":"lost","value":"v9"}'; echo '{"op":"reply","id":2,"result":"ok","value":"v2"}'
read req; echo '{"op":"reply","id":3,"result":"ok"}'; while read line; do :; done`, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l := &Lock{Proc: p}
	ctx := context.Background()
	l1, err := l.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := l.Acquire(ctx, "j", time.Second)
	if err != nil {
		t.Fatalf("a lost in the middle of a request broke it: %v", err)
	}
	select {
	case <-l1.Lost:
	case <-time.After(5 * time.Second):
		t.Fatal("lease v1: the driver said lost, and its Lost channel is still open")
	}
	if l2.Lost == nil {
		t.Fatal("lease v2 has no Lost channel from a driver that claims lost")
	}
	select {
	case <-l2.Lost:
		t.Fatal("lease v2: closed, and the driver said nothing of it")
	default:
	}
	if err := l.Release(ctx, l2); err != nil {
		t.Fatalf("release: %v", err)
	}
	p.mu.Lock()
	kept := len(p.lost)
	p.mu.Unlock()
	// v1 (never released here) and v9 (a lease the harness never had).
	if kept != 2 {
		t.Errorf("%d leases' notes kept after v2's release; want 2 (v1, v9)", kept)
	}
}

// A lost said as the driver exits, after Stop closed its stdin (kazoo's
// client goes LOST at its own stop), is no news: the lease's belief is
// not ended by it, and nothing acts on it.
func TestLostAtStopIsIgnored(t *testing.T) {
	t.Parallel()
	p, err := start(t, `read hello; echo '{"op":"ready","name":"fake","lost":true}'
read req; echo '{"op":"reply","id":1,"result":"ok","value":"v1"}'
while read line; do :; done; echo '{"op":"lost","value":"v1"}'`, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l := &Lock{Proc: p}
	l1, err := l.Acquire(context.Background(), "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case <-l1.Lost:
		t.Fatal("a lost said after the stop closed the lease's Lost channel")
	default:
	}
}

func TestRepliesAndPoints(t *testing.T) {
	t.Parallel()
	// acquire: a point, then ok; extend: ok; release: fail; acquire: fail;
	// acquire: unknown.
	script := ready + `read req; echo '{"op":"point","id":1,"point":"after-acquire"}'; read go
echo "got $go" >&2
echo '{"op":"reply","id":1,"result":"ok","value":"v1","validity_ms":500,"token":9}'
read req; echo '{"op":"reply","id":2,"result":"ok","validity_ms":700}'
read req; echo '{"op":"reply","id":3,"result":"fail","detail":"not owned"}'
read req; echo '{"op":"reply","id":4,"result":"fail","detail":"held"}'
read req; echo '{"op":"reply","id":5,"result":"unknown","detail":"timeout"}'
read eof; exit 0`
	p, err := start(t, script, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Points(); len(got) != 1 || got[0] != "after-acquire" {
		t.Errorf("Points() = %v, want [after-acquire]", got)
	}
	g := &recordGate{}
	l := &Lock{Proc: p, Gate: g}
	ctx := context.Background()
	before := time.Now()
	lease, err := l.Acquire(ctx, "k", time.Second)
	after := time.Now()
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if lease.Value != "v1" || lease.Token == nil || *lease.Token != 9 {
		t.Errorf("lease %+v, want value v1 and token 9", lease)
	}
	// The deadline is the reply's reading plus the validity (the reply has no mono_ns).
	if lease.Deadline.Before(before.Add(500*time.Millisecond)) || lease.Deadline.After(after.Add(500*time.Millisecond)) {
		t.Errorf("deadline not within the call + 500ms")
	}
	if len(g.points) != 1 || g.points[0] != "after-acquire" {
		t.Errorf("gate saw %v, want [after-acquire]", g.points)
	}
	ext, err := l.Extend(ctx, lease, time.Second)
	if err != nil || ext.Value != "v1" || ext.Deadline.IsZero() {
		t.Errorf("Extend: %+v, %v; want the same value, a new deadline", ext, err)
	}
	if err := l.Release(ctx, ext); !errors.Is(err, workload.ErrNotHeld) || !strings.Contains(err.Error(), "not owned") {
		t.Errorf("Release: %v, want ErrNotHeld with the driver's detail", err)
	}
	if _, err := l.Acquire(ctx, "k", time.Second); !errors.Is(err, workload.ErrNotAcquired) {
		t.Errorf("Acquire: %v, want ErrNotAcquired", err)
	}
	_, err = l.Acquire(ctx, "k", time.Second)
	if err == nil || errors.Is(err, workload.ErrNotAcquired) || !strings.Contains(err.Error(), "outcome unknown") {
		t.Errorf("Acquire: %v, want an unknown outcome", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if got := p.ExitStatus(); got != "exit status 0" {
		t.Errorf("exit %q after stdin closed, want exit status 0", got)
	}
	if !strings.Contains(p.Stderr(), `got {"op":"go","id":1,"point":"after-acquire"}`) {
		t.Errorf("the driver's stderr does not show the go-ahead: %q", p.Stderr())
	}
}

// A driver that ignores the end of its stdin is killed, its registry pid
// file removed; one that is registered carries the entry's marker.
func TestStopKillsAndUnregisters(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	live, _, err := cluster.RegisterLive(cache, "drvtest-"+cluster.RandomHex(4))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Remove() }()
	p, err := Start(context.Background(), Config{
		Command: []string{"sh", "-c", ready + `trap '' TERM; while :; do sleep 1; done`},
		Client:  "c1", Live: live,
	})
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(live.Dir(), "driver-c1.pid")
	if _, err := os.Stat(pidFile); err != nil {
		t.Errorf("no pid file in the registry entry: %v", err)
	}
	env, _ := os.ReadFile("/proc/" + itoa(p.Pid()) + "/environ")
	if !strings.Contains(string(env), cluster.RunEnv+"="+live.ID()) {
		t.Errorf("the driver's environment lacks the run marker")
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	// Stop resumes it, closes its stdin and kills it after the grace.
	if err := p.Stop(context.Background()); err == nil || !strings.Contains(err.Error(), "still running 2s after its stdin closed: killed") {
		t.Errorf("Stop: %v, want the kill reported", err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned with the driver running")
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("pid file left after Stop: %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// A driver whose child starts a session of its own and keeps the driver's
// stdout open (issue 33, hardening 6): Stop must not wait for the pipe
// forever, and the child must not outlive the driver. It hung the harness,
// ignoring SIGTERM, and the child outlived the next start.
func TestStopEndsWhatTheDriverStarted(t *testing.T) {
	t.Parallel()
	o, err := newOwner()
	if err != nil {
		t.Skipf("this machine gives the harness no cgroup, so a child that leaves the driver's session escapes: %v", err)
	}
	if err := o.remove(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	p, err := start(t, ready+`setsid sleep 1000 & echo $! > `+pidFile+`; while read line; do :; done`, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	for range 100 {
		if b, err := os.ReadFile(pidFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("the driver did not say its child's pid")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Stop still waiting a minute on: the child holds the driver's stdout")
	}
	<-p.Exited()
	if running(child) {
		t.Errorf("the driver's child %d, in a session of its own, outlived Stop", child)
	}
}

// running reports whether pid is a process that has not exited (a zombie
// waiting for a parent that does not reap it has).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// A driver that floods its stderr fills the log up to its cap, not the
// disk (issue 33, hardening 8: 3.7 GB in 20 s); the tail is kept.
func TestStderrFloodIsCapped(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	p, err := Start(context.Background(), Config{
		Command: []string{"sh", "-c", ready + `i=0; while [ $i -lt 40000 ]; do echo "noise line $i of a driver that talks too much" >&2; i=$((i+1)); done; echo last words >&2; while read line; do :; done`},
		Name:    "fake", Client: "c1", Log: &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 500 {
		if strings.Contains(p.Stderr(), "last words") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Stderr(), "last words") {
		t.Errorf("the stderr's tail lost its last line: %q", p.Stderr())
	}
	if n := log.Len(); n > maxStderrLog+64<<10 {
		t.Errorf("the log holds %d bytes for about 2 MB of stderr, want at most its cap (%d) and the transcript", n, maxStderrLog)
	}
	if !strings.Contains(log.String(), "the rest is not logged") {
		t.Error("the log does not say that the rest of stderr went unlogged")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Pause returns once every process and thread of the driver's group has
// stopped: busy children on every core, which a SIGSTOP queued by kill(2)
// reaches a scheduling round later. Before, the harness sent the point's
// "go" at once, and a driver's thread under load answered it (Curator,
// 1 ms after the SIGSTOP: the pause froze nothing).
func TestPauseWaitsUntilStopped(t *testing.T) {
	t.Parallel()
	p, err := Start(context.Background(), Config{
		Command: []string{"sh", "-c", ready + `for i in 1 2 3 4 5 6; do (while :; do :; done) & done; while read line; do :; done`},
		Client:  "c1",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Kill() }()
	for try := range 20 {
		time.Sleep(20 * time.Millisecond) // the loops run again
		if err := p.Pause(); err != nil {
			t.Fatal(err)
		}
		if running, err := groupRunning(p.Pid()); err != nil || running != "" {
			t.Fatalf("pause %d: thread %s still runs after Pause returned (%v)", try, running, err)
		}
		if err := p.Resume(); err != nil {
			t.Fatal(err)
		}
	}
}

// A reply stamped with the monotonic clock is counted from its writing;
// the stamp moves the moment no further than the request's bounds.
func TestWrittenAt(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	const now = int64(10 * time.Second)
	for _, tc := range []struct {
		name  string
		mono  int64
		slack time.Duration
		want  time.Duration // before at
	}{
		{"written 3ms before it was read", now - int64(3*time.Millisecond), 10 * time.Millisecond, 3 * time.Millisecond},
		{"stamped before the request was sent", now - int64(time.Second), 10 * time.Millisecond, 10 * time.Millisecond},
		{"stamped after it was read (another clock)", now + int64(time.Second), 10 * time.Millisecond, 0},
	} {
		if got := at.Sub(written(at, tc.mono, now, tc.slack)); got != tc.want {
			t.Errorf("%s: written %v before its reading, want %v", tc.name, got, tc.want)
		}
	}
}

// A driver whose reply sat 300 ms between its writing and the harness's
// reading (here: the driver sleeps after stamping it) gets the deadline
// its lock told its user, not one 300 ms late.
func TestStampedReplyCountsFromItsWriting(t *testing.T) {
	t.Parallel()
	script := ready + `read req; m=$(/usr/bin/python3 -c 'import time; print(time.monotonic_ns())'); sleep 0.3
echo "{\"op\":\"reply\",\"id\":1,\"result\":\"ok\",\"value\":\"v1\",\"validity_ms\":500,\"mono_ns\":$m}"
read eof; exit 0`
	p, err := start(t, script, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	lease, err := (&Lock{Proc: p}).Acquire(context.Background(), "k", time.Second)
	after := time.Now()
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if lease.Deadline.Before(before.Add(500*time.Millisecond)) || lease.Deadline.After(after.Add(250*time.Millisecond)) {
		t.Errorf("deadline %v after the call's start (which took %v), want 500ms from the stamp, before its reading",
			lease.Deadline.Sub(before), after.Sub(before))
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// The kernel's count of a driver waiting for a CPU (its cgroup's
// cpu.pressure, time in which some process of it waited): four busy
// processes of the driver on one CPU leave three waiting at every moment,
// so the count grows with the wall clock, and the stall watch calls that
// standing still; a driver that only reads its stdin waits for none.
// Where the machine gives no cgroup, the error says so.
func TestCPUWaited(t *testing.T) {
	t.Parallel()
	if o, err := newOwner(); err != nil {
		p, serr := start(t, ready+`while read line; do :; done`, 5*time.Second)
		if serr != nil {
			t.Fatal(serr)
		}
		if _, err := p.CPUWaited(); err == nil {
			t.Error("a driver without a cgroup of its own counted its waiting")
		}
		t.Skipf("this machine gives the harness no cgroup: %v", err)
	} else if err := o.remove(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		script string
		busy   bool
	}{
		{"four busy on one CPU", ready + `for i in 1 2 3 4; do taskset -c 0 sh -c 'while :; do :; done' & done; while read line; do :; done`, true},
		{"quiet", ready + `while read line; do :; done`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := start(t, tc.script, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			w0, err := p.CPUWaited()
			if err != nil {
				if errors.Is(err, errNoPressure) {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var stood time.Duration
			if err := stall.WatchWaited(ctx, 25*time.Millisecond, 100*time.Millisecond, 0.9, p.CPUWaited, func(d time.Duration) { stood += d }); err != nil {
				t.Fatal(err)
			}
			w1, err := p.CPUWaited()
			if err != nil {
				t.Fatal(err)
			}
			grew := w1 - w0
			if tc.busy && (grew < 500*time.Millisecond || stood < 500*time.Millisecond) {
				t.Errorf("waited %v and stood still %v in a second, want most of it", grew, stood)
			}
			if !tc.busy && (grew > 200*time.Millisecond || stood > 0) {
				t.Errorf("a quiet driver waited %v and stood still %v in a second", grew, stood)
			}
		})
	}
}

// someTotal reads the "some" line of a pressure file.
func TestSomeTotal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"some avg10=0.00 avg60=0.00 avg300=0.00 total=721157\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=688350\n", 721157 * time.Microsecond, ""},
		{"some avg10=1.00 total=0\n", 0, ""},
		{"full avg10=0.00 total=5\n", 0, `has no "some … total="`},
		{"some avg10=0.00 total=-3\n", 0, "no count of microseconds"},
		{"some avg10=0.00 total=x\n", 0, "no count of microseconds"},
		{"", 0, `has no "some … total="`},
	} {
		got, err := someTotal(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("someTotal(%q) = %v, %v; want %v, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}
