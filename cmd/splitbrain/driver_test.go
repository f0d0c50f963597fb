package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/internal/gobuild"
)

const fakeReady = `read hello; echo '{"op":"ready","name":"broken"}'; `

// splitbrain driver check against real nodes: the built-in redis-py
// driver conforms; each deliberately broken driver fails with a message
// that says what is wrong, and leaves nothing running.
func TestDriverCheck(t *testing.T) {
	t.Parallel()
	// Our Redlock as a driver, the protocol's reference.
	reference := filepath.Join(t.TempDir(), "redlock-driver")
	if err := gobuild.Build(reference, "splitbrain/cmd/redlock-driver"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{name: "redis-py conforms", args: []string{"redis-py"}, code: 0,
			want: []string{"ok    describe: claims redis, one master with replicas (or through Sentinel); redis-py ",
				"ok    kind redis-py: its ready agrees with package locks", "ok    acquire: granted", "ok    refusal",
				"ok    points: reached [after-replies after-acquire before-release]", "ok    release of a lost lease: c1 stopped",
				"on one redis-server node through a sentinel", "ok    route: reached the master through the route hello gave",
				"ok    unknown outcome", "ok    kill in the middle", "every check passed (23)"}},
		{name: "redlock-driver conforms", args: []string{"--", reference}, code: 0,
			want: []string{"ok    acquire: granted", "ok    points: reached [after-replies after-acquire before-release]",
				"ok    unknown outcome: every server stopped: fail", "every check passed (11)"}},
		{name: "garbage output", args: []string{"sh", "-c", fakeReady + `read req; echo 'OK granted'; sleep 60`}, code: 1,
			want: []string{"FAIL  acquire", "printed a line that is not the protocol", `"OK granted"`}},
		{name: "wrong ids", args: []string{"sh", "-c", fakeReady + `read req; echo '{"op":"reply","id":99,"result":"ok","value":"v"}'; sleep 60`}, code: 1,
			want: []string{"FAIL  acquire", "answered #99, a request never sent or already answered, while acquire #1 was asked"}},
		{name: "dies mid-run", args: []string{"sh", "-c", fakeReady + `read req; echo 'panic: assignment to entry in nil map' >&2; exit 2`}, code: 1,
			want: []string{"FAIL  acquire", "exited before answering acquire #1 (exit status 2)", "panic: assignment to entry in nil map"}},
		// malkusch/lock's keys live 2 s at the least: checked there, and
		// a --ttl under it refused before anything starts.
		{name: "a TTL the lock cannot take", args: []string{"--ttl", "1s", "malkusch-redlock"}, code: 254,
			want: []string{"--ttl 1s: malkusch-redlock cannot be asked for a TTL under 2s"}},
		{name: "never answers", args: []string{"--reply-timeout", "1s", "sh", "-c", fakeReady + `read req; sleep 60`}, code: 1,
			want: []string{"FAIL  acquire", "acquire #1: no answer in time (1s)"}},
		{name: "grants everything", args: []string{"sh", "-c", fakeReady +
			`while read req; do id=$(echo "$req" | sed 's/.*"id":\([0-9]*\).*/\1/'); echo "{\"op\":\"reply\",\"id\":$id,\"result\":\"ok\",\"value\":\"v$id\",\"validity_ms\":900}"; done`}, code: 1,
			want: []string{"FAIL  refusal: c2 was granted the key c1 holds: the lock is not exclusive", "FAIL  release of a lost lease", "FAIL  unknown outcome: granted while every server was stopped"}},
		// A point announced twice in one request of one attempt: the
		// driver would hold its client at the wrong moment.
		{name: "point announced twice", args: []string{"sh", "-c", fakeReady +
			`read req; p='{"op":"point","id":1,"point":"after-replies"}'; echo "$p"; read go; echo "$p"; read go; sleep 60`}, code: 1,
			want: []string{"FAIL  acquire", "announced point after-replies 2 times in acquire #1, which makes 1 attempt(s)"}},
		// A lock whose release does not report a lease already gone says
		// so in its ready: the check cannot tell, and does not fail it.
		{name: "release unreported", args: []string{"sh", "-c", `read hello; echo '{"op":"ready","name":"quiet","servers":["redis"],"deployments":["masters"],"unreported":["release"]}'; ` +
			grantWith(900)}, code: 1,
			want: []string{"ok    describe: claims redis, independent masters", "cannot tell release of a lost lease: c1 stopped",
				"FAIL  refusal", "; 1 the lock does not report (cannot tell)"}},
		// Both sides of the validity bound (the TTL, 1s, and a tenth for
		// the drivers' clocks): a driver's own figure decides, not how
		// long its reply waited to be read.
		{name: "validity within the bound", args: []string{"sh", "-c", fakeReady + grantWith(1050)}, code: 1,
			want: []string{"ok    acquire: granted, value \"v1\", validity"}},
		{name: "validity past the bound", args: []string{"sh", "-c", fakeReady + grantWith(5000)}, code: 1,
			// The figure shown is read after the call, a millisecond or
			// so under the driver's 5s (CI: 4.999s).
			want: []string{"FAIL  acquire: granted, value \"v1\", BAD validity ", ", more than the TTL 1s asked for"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			res := e.runFor(3*time.Minute, append([]string{"driver", "check", "--dir", t.TempDir()}, tc.args...)...)
			if res.code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", res.code, tc.code, res.stdout, res.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.stdout+res.stderr, w) {
					t.Errorf("output lacks %q:\n%s%s", w, res.stdout, res.stderr)
				}
			}
			t.Logf("%s", res.stdout)
			e.checkClean()
		})
	}
}

// The built-in drivers of the locks people run conform, each on real
// servers of the kind it claims (kazoo and Curator on a ZooKeeper
// ensemble, Symfony and Laravel on redis-server nodes, tooz on an etcd
// cluster): one check each, one after another (a ZooKeeper ensemble and
// three JVMs are a lot for two cores).
func TestBuiltinDriversCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"kazoo", []string{"ok    describe: claims zookeeper; kazoo 2.", "on a 3-member ZooKeeper ensemble",
			"ok    acquire: granted", "no validity_ms: the belief lasts until the release, token ", "ok    release: released; c2 took the key after it, token ",
			"cannot tell release of a lost lease", "ok    unknown outcome: every server stopped: unknown after",
			"every check passed (11); 1 the lock does not report (cannot tell)"}},
		// With a state listener: the lease of the holder stopped until c2
		// took its key is told lost when it runs again.
		{"kazoo-listener", []string{"with a state listener\", announces points", "ok    lost told: c1 said its lease lost",
			"cannot tell release of a lost lease", "every check passed (12); 1 the lock does not report (cannot tell)"}},
		{"curator", []string{"ok    describe: claims zookeeper; curator 5.", ", zookeeper 3.", "ok    release: released; c2 took the key after it, token ",
			"cannot tell release of a lost lease", "every check passed (11); 1 the lock does not report (cannot tell)"}},
		{"curator-listener", []string{"with a state listener\", announces points", "ok    lost told: c1 said its lease lost",
			"cannot tell release of a lost lease", "every check passed (12); 1 the lock does not report (cannot tell)"}},
		// Through Sentinel too: each acquire asks the sentinels for the
		// master and connects to the route hello gave for it.
		{"symfony-redis", []string{"ok    describe: claims redis, one master with replicas (or through Sentinel); symfony/lock 5.", ", phpredis ",
			"ok    points: reached [after-replies after-acquire before-release], as announced",
			"on one redis-server node through a sentinel", "ok    route: reached the master through the route hello gave",
			"cannot tell release of a lost lease", "every check passed (21); 2 the lock does not report (cannot tell)"}},
		{"symfony-redlock", []string{"ok    describe: claims redis, independent masters; symfony/lock 5.", "on 3 redis-server nodes (independent masters)",
			"cannot tell release of a lost lease", "every check passed (11); 1 the lock does not report (cannot tell)"}},
		{"laravel", []string{"ok    describe: claims redis, one master with replicas; illuminate/cache ",
			"ok    extend: the lock has no extension (its ready: unsupported extend)", "ok    release of a lost lease: c1 stopped",
			"every check passed (12)"}},
		// At its shortest TTL, 2 s (its key lives the mutex's timeout
		// + 1 s); a release after the timeout is refused by unlock()
		// (ExecutionOutsideLockException, in the transcript).
		{"malkusch-redlock", []string{"ok    describe: claims redis, independent masters; malkusch/lock 2.", "TTL 2s",
			"ok    extend: the lock has no extension (its ready: unsupported extend)",
			"ok    release of a lost lease: c1 stopped", "every check passed (12)"}},
		// On etcd: TLS from hello's files, through the gRPC gateway; a
		// release of a lost lease says fail (release() returns False).
		{"tooz-etcd", []string{"ok    describe: claims etcd; tooz 3.", "on a 3-member etcd cluster", "ok    acquire: granted",
			"ok    release of a lost lease: c1 stopped", "ok    release: released; c2 took the key after it, token ",
			"every check passed (12)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.runFor(5*time.Minute, "driver", "check", "--dir", t.TempDir(), tc.name)
			if res.code != 0 {
				t.Errorf("exit %d, want 0\n%s%s", res.code, res.stdout, res.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, res.stdout)
				}
			}
			t.Logf("%s", res.stdout)
			e.checkClean()
		})
	}
}

// grantWith is a shell driver that grants every request with the validity
// given, in milliseconds.
func grantWith(validityMS int) string {
	return fmt.Sprintf(`while read req; do id=$(echo "$req" | sed 's/.*"id":\([0-9]*\).*/\1/'); echo "{\"op\":\"reply\",\"id\":$id,\"result\":\"ok\",\"value\":\"v$id\",\"validity_ms\":%d}"; done`, validityMS)
}

func TestDriverCheckUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"driver"}, "driver wants a subcommand: check"},
		{[]string{"driver", "check"}, "driver check wants the driver's command (or a built-in driver: redis-py, kazoo, kazoo-listener, curator, curator-listener, symfony-redis, symfony-redlock, laravel, malkusch-redlock, tooz-etcd)"},
		{[]string{"driver", "check", "--nodes", "0", "x"}, "--nodes 0: want a whole number from 1 to 9"},
	} {
		res := e.run(tc.args...)
		if res.code != 254 || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 254 and %q", tc.args, res.code, res.stderr, tc.want)
		}
	}
}

const driverLongScenario = `name: driver-long-wait
description: c1 takes redis-py's lock through its driver, then a long wait.
expect: any
cluster:
  nodes: 1
lock:
  kind: redis-py
  ttl: 2s
workload:
  clients: 2
steps:
  - acquire: {client: c1}
  - wait: 60s
`

// A harness killed with SIGKILL leaves its drivers' registry entry; a
// driver that outlived it (Pdeathsig follows the thread that started it,
// and is lost across a setuid exec) is killed by the next start, which
// also removes the entry: nothing is left running.
func TestKilledHarnessDriversAreReaped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "driver-long-wait.yaml")
	writeFile(t, file, driverLongScenario)
	r := e.start("run", file, "--seed", "1", "--store", filepath.Join(t.TempDir(), "runs"))
	r.waitFor(t, "wait 1m0s", 60*time.Second)
	t.Logf("running before SIGKILL: %s", describe(e.procs()))
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 10*time.Second)

	var entry string
	for _, name := range e.liveEntries() {
		if strings.HasPrefix(name, "drv-") {
			entry = filepath.Join(e.liveDir(), name)
		}
	}
	if entry == "" {
		t.Fatalf("no drivers' entry in the live registry after SIGKILL: %v", e.liveEntries())
	}
	if pids, _ := filepath.Glob(filepath.Join(entry, "driver-c*.pid")); len(pids) != 2 {
		t.Errorf("the drivers' entry lists %v, want c1's and c2's pid files", pids)
	}
	// A driver that survived: marked with the dead run's entry, listed in it.
	survivor := exec.Command("sleep", "600")
	survivor.Env = append(os.Environ(), cluster.RunEnv+"="+filepath.Base(entry), "XDG_CACHE_HOME="+e.cache)
	survivor.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := survivor.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = survivor.Wait(); close(exited) }()
	t.Cleanup(func() { _ = survivor.Process.Kill(); <-exited })
	pid := survivor.Process.Pid
	writeFile(t, filepath.Join(entry, "driver-c9.pid"), fmt.Sprintf("%d %d\n", pid, procStartTime(t, pid)))

	res := e.run("run", "clock-jump-control", "--store", filepath.Join(t.TempDir(), "runs"))
	if res.code != 0 {
		t.Errorf("exit code %d of the run after the crash, want 0\n%s", res.code, res.stdout)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Errorf("the next start did not kill the dead run's surviving driver (pid %d)", pid)
	}
	e.checkClean()
}
