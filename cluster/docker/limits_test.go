package docker

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"splitbrain/cluster"
)

// Every node's container runs under the memory (no swap) and pid limits,
// replicas included and also after an amnesia restart recreates it.
func TestContainersAreLimited(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, cluster.Config{Nodes: 1, Persistence: cluster.PersistAOFAlways})
	ctx := testCtx(t)
	addReplica(t, c, cluster.ReplicaSpec{Name: "r1", Of: "n1"})
	n1 := c.nodes[0]
	mustDo(t, "kill", n1.Kill(ctx))
	mustDo(t, "wipe (a new container)", n1.WipeData(ctx))
	mustDo(t, "start", n1.Start(ctx))
	for _, n := range c.all() {
		got, err := c.eng.containerLimits(ctx, n.ContainerID())
		mustDo(t, "inspect "+n.Name(), err)
		want := containerLimits{Memory: nodeMemory, MemorySwap: nodeMemory, Pids: nodePids}
		if got != want {
			t.Errorf("%s: limits %+v, want %+v", n.Name(), got, want)
		}
	}
}

// While the containers run, the run's folder holds no file with the
// password: the configs are in the private state folder (0700, outside
// the run's folder), which Close removes; the logs Close writes to the run's
// folder hold none either.
func TestRunFolderHoldsNoPassword(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := startTestCluster(t, cluster.Config{Nodes: 2, Dir: dir})
	ctx := testCtx(t)
	addReplica(t, c, cluster.ReplicaSpec{Name: "r1", Of: "n1"})
	holding := func(root string) []string {
		var found []string
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			b, err := os.ReadFile(path)
			if err == nil && bytes.Contains(b, []byte(c.Password())) {
				found = append(found, path)
			}
			return err
		})
		mustDo(t, "walk "+root, err)
		return found
	}
	if found := holding(dir); len(found) != 0 {
		t.Errorf("the live run's folder holds the password in %v", found)
	}
	state := c.StateDir()
	if strings.HasPrefix(state, dir+string(filepath.Separator)) {
		t.Errorf("state folder %s inside the run folder %s", state, dir)
	}
	for _, d := range []string{filepath.Dir(state), state} {
		info, err := os.Lstat(d)
		mustDo(t, "stat", err)
		if !info.IsDir() || info.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want a folder with 0700", d, info.Mode())
		}
	}
	if len(holding(state)) == 0 {
		t.Error("no file of the state folder holds the password: where are the configs?")
	}
	mustDo(t, "close", c.Close(ctx))
	if found := holding(dir); len(found) != 0 {
		t.Errorf("after close the run's folder holds the password in %v", found)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "r1.log")); err != nil {
		t.Errorf("replica's log not written: %v", err)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state folder left after close: %v", err)
	}
}
