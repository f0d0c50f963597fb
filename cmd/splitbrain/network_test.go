package main_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// impostorScenario kills n1 and, while it is down, has c2 take the lock:
// c2's client dials n1's port again, where another user's process may be
// listening by then.
const impostorScenario = `name: impostor
description: n1 is down while c2 takes the lock.
expect: safe
cluster:
  nodes: 3
lock:
  kind: redlock
  ttl: 2s
  node_timeout: 250ms
workload:
  clients: 2
steps:
  - acquire: {client: c1}
  - release: {client: c1}
  - kill: {node: n1}
  - wait: 1500ms
  - acquire: {client: c2}
  - release: {client: c2}
  - wait: 2s
  - restart: {node: n1}
`

// impostorScript, run as another user, listens on the port given first
// (a stopped node's) for a while, printing what the clients send it, and
// tries to connect to the ports given after it (running nodes').
const impostorScript = `
import socket, sys, time
port, others = int(sys.argv[1]), [int(p) for p in sys.argv[2:]]
for p in others:
    try:
        socket.create_connection(("127.0.0.1", p), timeout=1).close()
        print("connect", p, "ok", flush=True)
    except OSError as e:
        print("connect", p, "failed:", e, flush=True)
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", port))
l.listen(16)
print("listening", flush=True)
l.settimeout(0.2)
end = time.time() + 3
while time.time() < end:
    try:
        c, _ = l.accept()
    except socket.timeout:
        continue
    c.settimeout(0.5)
    try:
        print("received", repr(c.recv(4096)), flush=True)
    except OSError:
        pass
    c.close()
l.close()
print("done", flush=True)
`

// Issue 33, hardening 1: while a local node is down, another user binds
// its port; the clients then send that process the run's password
// (HELLO 3 AUTH default ...) and believe its answers. On the shared
// loopback (SPLITBRAIN_SHARED_LOOPBACK=1) the attack works, which shows
// that the test reproduces it; in the private network namespace that run
// and suite play in by default the impostor's port is another loopback's,
// it receives nothing, and the running nodes refuse it.
func TestImpostorCannotStandInForANode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user (the project's machines and CI run as root)")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs Debian's python3 (/usr/bin/python3, readable by every user) for the impostor")
	}
	t.Parallel()
	for _, tc := range []struct {
		name   string
		shared bool
	}{{"shared loopback", true}, {"private network", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			file := filepath.Join(t.TempDir(), "impostor.yaml")
			writeFile(t, file, impostorScenario)
			store := filepath.Join(t.TempDir(), "runs")
			args := []string{"run", file, "--seed", "1", "--store", store}
			var r *running
			if tc.shared {
				e.vars = append(e.vars, "SPLITBRAIN_SHARED_LOOPBACK=1")
			}
			r = e.start(args...)
			r.waitFor(t, "n1 killed", 60*time.Second)
			ports, password := e.nodePorts(t)
			if len(ports) != 3 {
				t.Fatalf("node ports %v, want n1..n3", ports)
			}
			imp := exec.Command("/usr/bin/python3", "-c", impostorScript, ports["n1"], ports["n2"], ports["n3"])
			imp.Dir = "/"
			imp.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			imp.Stderr = os.Stderr
			out, err := imp.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := imp.Start(); err != nil {
				t.Fatal(err)
			}
			var lines []string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			if err := imp.Wait(); err != nil {
				t.Fatalf("impostor: %v\n%s", err, strings.Join(lines, "\n"))
			}
			said := strings.Join(lines, "\n")
			t.Logf("the impostor (uid 65534) on n1's port %s:\n%s", ports["n1"], said)
			code := r.wait(t, 60*time.Second)
			if !strings.Contains(said, "listening") {
				t.Fatalf("the impostor could not bind n1's port")
			}
			captured := strings.Contains(said, password)
			if tc.shared {
				if !captured || !strings.Contains(said, "connect "+ports["n2"]+" ok") {
					t.Errorf("on the shared loopback the impostor should reach n2 and receive the password; the test no longer reproduces the attack")
				}
				return
			}
			if captured || strings.Contains(said, "received") {
				t.Errorf("the impostor received a client's bytes in the private network")
			}
			for _, n := range []string{"n2", "n3"} {
				if strings.Contains(said, "connect "+ports[n]+" ok") {
					t.Errorf("the impostor connected to %s's port", n)
				}
			}
			if code != 0 {
				t.Errorf("exit %d, want 0 (valid, as without the impostor)", code)
			}
			e.checkClean()
		})
	}
}

// nodePorts reads the running nodes' ports and the run's password from
// their configs in the live registry.
func (e *env) nodePorts(t *testing.T) (map[string]string, string) {
	t.Helper()
	confs, _ := filepath.Glob(filepath.Join(e.liveDir(), "*", "n*", "redis.conf"))
	ports := map[string]string{}
	var password string
	for _, c := range confs {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "port "); ok {
				ports[filepath.Base(filepath.Dir(c))] = p
			}
			if p, ok := strings.CutPrefix(line, "requirepass "); ok {
				password = strings.Trim(p, `"`)
			}
		}
	}
	return ports, password
}
