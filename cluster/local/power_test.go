package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"splitbrain/cluster"
)

// powerNode starts one Redis node with persistence p.
func powerNode(t *testing.T, p cluster.Persistence) *Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := Start(ctx, cluster.Config{Nodes: 1, Dir: t.TempDir(), CacheDir: t.TempDir(), Persistence: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close(context.Background()) })
	return cl.Processes()[0]
}

// setCommand is a SET of key as it stands in the AOF: as go-redis sent it.
func setCommand(key string) []byte {
	return fmt.Appendf(nil, "*3\r\n$3\r\nset\r\n$%d\r\n%s\r\n$1\r\nv\r\n", len(key), key)
}

// aofTail is the node's incremental AOF (Redis 7's multi-part AOF).
func aofTail(t *testing.T, n *Process) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(n.dataDir, "appendonlydir", "*.incr.aof"))
	if err != nil || len(m) != 1 {
		t.Fatalf("incremental AOFs %v (%v), want one", m, err)
	}
	return m[0]
}

// powerLoss writes keys as fast as acknowledgements come, up to the kill,
// loses the node's power, and returns the keys written, the AOF as it
// was before the cut, what the cut kept of it, and which keys survived
// the restart.
func powerLoss(t *testing.T, n *Process, round int) (keys []string, aof []byte, loss cluster.PowerLoss, survived map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := n.Admin()
	// A second and a half of writes: an everysec node syncs at least once
	// in it, and keeps writing after its last sync.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		k := fmt.Sprintf("r%d-key-%06d", round, len(keys))
		if err := admin.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	aof, err := os.ReadFile(aofTail(t, n))
	if err != nil {
		t.Fatal(err)
	}
	if loss, err = n.LoseUnsynced(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The node answers INFO (its readiness probe) while it still loads
	// its AOF, and LOADING to the rest.
	for admin.Ping(ctx).Err() != nil {
		if ctx.Err() != nil {
			t.Fatalf("node not loaded after its restart: %v", admin.Ping(ctx).Err())
		}
		time.Sleep(10 * time.Millisecond)
	}
	survived = map[string]bool{}
	for _, k := range keys {
		v, err := admin.Exists(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if v == 1 {
			survived[k] = true
		}
	}
	return keys, aof, loss, survived
}

// A power loss keeps of each file exactly what the server had fsynced:
// under appendfsync everysec the writes of the last moments before it are
// gone, those the AOF held up to its last fsync survive; under always
// every acknowledged write survives. The fsynced prefix is read from the
// AOF itself: a key survives if and only if its SET lies within the bytes
// the cut kept.
func TestPowerLossKeepsTheFsyncedPrefix(t *testing.T) {
	t.Run("everysec", func(t *testing.T) {
		n := powerNode(t, cluster.PersistAOFEverysec)
		// An fsync can land between the last write and the kill; then
		// nothing is lost, and the round is played again.
		for round := range 5 {
			keys, aof, loss, survived := powerLoss(t, n, round)
			checkPrefix(t, keys, aof, loss, survived)
			if loss.Lost() > 0 {
				if survived[keys[len(keys)-1]] {
					t.Errorf("the last write before the power loss survived under everysec")
				}
				t.Logf("round %d: %d of %d writes survived; %s", round, len(survived), len(keys), loss)
				return
			}
		}
		t.Error("five power losses under everysec lost nothing: every one came just after an fsync")
	})
	t.Run("always", func(t *testing.T) {
		n := powerNode(t, cluster.PersistAOFAlways)
		keys, aof, loss, survived := powerLoss(t, n, 0)
		checkPrefix(t, keys, aof, loss, survived)
		for _, k := range keys {
			if !survived[k] {
				t.Errorf("%s lost", k)
			}
		}
		if loss.Lost() != 0 || len(survived) != len(keys) {
			t.Errorf("under always a power loss lost %d bytes and %d of %d acknowledged writes (%s); want none",
				loss.Lost(), len(keys)-len(survived), len(keys), loss)
		}
	})
}

// checkPrefix: each key survived if and only if its SET is within what the
// cut kept of the AOF.
func checkPrefix(t *testing.T, keys []string, aof []byte, loss cluster.PowerLoss, survived map[string]bool) {
	t.Helper()
	kept := int64(len(aof))
	for _, f := range loss.Files {
		if filepath.Ext(f.Path) == ".aof" && f.Size == int64(len(aof)) {
			kept = f.Synced
		}
	}
	var wrong int
	for _, k := range keys {
		if in := bytes.Contains(aof[:kept], setCommand(k)); in != survived[k] {
			if wrong++; wrong <= 3 {
				t.Errorf("%s: within the fsynced %d of %d bytes: %v; survived: %v", k, kept, len(aof), in, survived[k])
			}
		}
	}
	if wrong > 3 {
		t.Errorf("... and %d more", wrong-3)
	}
}
