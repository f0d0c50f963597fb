package local_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
)

// filesHolding lists the files under root whose content holds secret.
func filesHolding(t *testing.T, root, secret string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// While the nodes run, the run's folder (what serve publishes) holds their
// logs and no file with the password; the configs, data and clock files
// are in the private state folder, mode 0700, which Close removes.
func TestLiveRunFolderHoldsNoPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, cache := t.TempDir(), t.TempDir()
	cl, err := local.Start(ctx, cluster.Config{Nodes: 2, Dir: dir, CacheDir: cache,
		NodePersistence: map[string]cluster.Persistence{"n2": cluster.PersistAOFAlways}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(testCtx(t))
	// A replica too: its config holds the password twice (masterauth).
	if _, err := cluster.StartReplica(ctx, cl, cluster.ReplicaSpec{Name: "r1", Of: "n2"}); err != nil {
		t.Fatal(err)
	}
	if found := filesHolding(t, dir, cl.Password()); len(found) != 0 {
		t.Errorf("the run folder holds the password in %v", found)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "n1.log")); err != nil {
		t.Errorf("node log not in the run folder: %v", err)
	}
	state := cl.StateDir()
	if strings.HasPrefix(state, dir+string(filepath.Separator)) {
		t.Errorf("state folder %s is inside the run folder %s", state, dir)
	}
	info, err := os.Lstat(state)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o700 || !info.IsDir() {
		t.Errorf("state folder %s has mode %v, want a folder with 0700", state, info.Mode())
	}
	if found := filesHolding(t, state, cl.Password()); len(found) == 0 {
		t.Errorf("no file of the state folder holds the password: are the configs elsewhere?")
	}
	if err := cl.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("state folder left after Close: %v", err)
	}
}

// A live registry planted as a link (a shared cache dir) stops the start
// before any node writes its config through it.
func TestStartRefusesPlantedRegistryLink(t *testing.T) {
	cache := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(cache, "live")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := local.Start(ctx, cluster.Config{Nodes: 1, Dir: t.TempDir(), CacheDir: cache})
	if err == nil {
		cl.Close(ctx)
		t.Fatal("started through a planted link")
	}
	if !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("error %v, want one naming the link", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("wrote %v where the link points", entries)
	}
}

// A node's log is opened again at every start; a link swapped in for it
// while the node was down (issue 33, hardening 3: root appended 37 KB of
// node logs to a file of another user's choosing) stops the restart, and
// the file it points to is left as it was.
func TestRestartRefusesLogSwappedForLink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	cl, err := local.Start(ctx, cluster.Config{Nodes: 1, Dir: dir, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(testCtx(t))
	n, _ := cl.Process("n1")
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "logs", "n1.log")
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, log); err != nil {
		t.Fatal(err)
	}
	err = n.Start(ctx)
	if err == nil {
		t.Fatal("the node restarted with its log swapped for a link")
	}
	t.Logf("refused: %v", err)
	if b, _ := os.ReadFile(victim); string(b) != "before\n" {
		t.Errorf("the link's target now holds %q", b)
	}
	if n.Running() {
		t.Errorf("n1 runs")
	}
}

// Issue 33, hardening 10: etcd's served logs held the first 8 hex digits
// of the run's password. The run folder of an ensemble of each consensus
// kind, once it has served a write, holds no 8 digits of it in a row.
func TestConsensusLogsHoldNoPartOfThePassword(t *testing.T) {
	for _, ops := range []ensembleOps{zooKeeperOps, etcdOps} {
		t.Run(ops.kind.Name, func(t *testing.T) {
			if ops.kind.Requires != nil {
				if err := ops.kind.Requires(); err != nil {
					t.Skip(err)
				}
			}
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dir := t.TempDir()
			cl, err := local.Start(ctx, cluster.Config{Kind: ops.kind, Nodes: 3, Dir: dir, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close(testCtx(t))
			if err := ops.put(ctx, cl, "k", "v"); err != nil {
				t.Fatal(err)
			}
			pw := cl.Password()
			for i := 0; i+8 <= len(pw); i++ {
				if found := filesHolding(t, dir, pw[i:i+8]); len(found) > 0 {
					t.Errorf("%v hold %q of the password", found, pw[i:i+8])
				}
			}
		})
	}
}
