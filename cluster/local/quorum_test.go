package local_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"splitbrain/cluster"
)

// Issue 33, hardening 4: ZooKeeper's quorum port took any peer; a server
// that joined a run's ensemble as an observer, without the run's password,
// was sent the whole data tree, the run's ACL digest included. The quorum
// is authenticated now (SASL DIGEST-MD5 with the run's password): the same
// observer is refused, is never in sync, and receives no znode.
func TestStrangerCannotJoinTheQuorum(t *testing.T) {
	if err := cluster.ZooKeeper.Requires(); err != nil {
		t.Skip(err)
	}
	cl := startEnsemble(t, cluster.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := zooKeeperOps.put(ctx, cl, "secret", "the run's data"); err != nil {
		t.Fatal(err)
	}
	// The members' peers, as every member's config lists them.
	conf, err := os.ReadFile(filepath.Join(cl.StateDir(), "n1", "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, line := range strings.Split(string(conf), "\n") {
		if strings.HasPrefix(line, "server.") {
			servers = append(servers, line)
		}
	}
	if len(servers) != 3 {
		t.Fatalf("servers in n1's config: %q", servers)
	}
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte("4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	observer := append([]string{
		"tickTime=100", "initLimit=100", "syncLimit=10", "dataDir=" + data,
		"clientPort=" + strconv.Itoa(ports[0]), "clientPortAddress=127.0.0.1",
		"peerType=observer", "admin.enableServer=false", "4lw.commands.whitelist=srvr",
		"standaloneEnabled=false", "reconfigEnabled=false",
		fmt.Sprintf("server.4=127.0.0.1:%d:%d:observer", ports[1], ports[2]),
	}, servers...)
	confPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(confPath, []byte(strings.Join(observer, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	// The server's own arguments, less the run's credentials, which the
	// stranger does not have.
	var args []string
	for _, a := range cluster.ZooKeeper.Args(confPath) {
		if !strings.HasPrefix(a, "-Djava.security.auth.login.config=") {
			args = append(args, a)
		}
	}
	cmd := exec.Command("java", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = data, &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Logf("the observer's log, last lines:\n%s", tail(log.String(), 1500))
	}()
	// A stranger let in syncs within a second or two; given ten.
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		mode, err := cluster.ZooKeeperMode(pctx, addr)
		pcancel()
		if err == nil && mode == "observer" {
			t.Fatalf("the observer without the password joined the ensemble and serves its data")
		}
		time.Sleep(200 * time.Millisecond)
	}
	var got []string
	_ = filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(cluster.ZooKeeperUser+":")) || bytes.Contains(b, []byte("the run's data")) {
				got = append(got, path)
			}
		}
		return nil
	})
	if len(got) > 0 {
		t.Errorf("the observer received the run's znodes or ACL digest: %v", got)
	}
}

func freePorts(n int) ([]int, error) {
	var out []int
	for len(out) < n {
		p, err := cluster.FreePort()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
