package docker

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
)

// WipeData, the nemesis's amnesia hook, refuses a running node and empties
// a stopped one: with AOF the volume is replaced, without persistence the
// tmpfs was emptied by the stop already.
func TestWipeData(t *testing.T) {
	t.Parallel()
	for _, p := range []cluster.Persistence{cluster.PersistAOFAlways, cluster.PersistNone} {
		t.Run(string(p), func(t *testing.T) {
			c := startTestCluster(t, cluster.Config{Nodes: 1, Persistence: p})
			n := c.nodes[0]
			ctx := testCtx(t)
			mustDo(t, "SET", n.Admin().Set(ctx, "acked", "1", 0).Err())
			if err := n.WipeData(ctx); err == nil || !strings.Contains(err.Error(), "running") {
				t.Errorf("wipe of a running node: %v, want an error saying it runs", err)
			}
			if v, err := n.Admin().Get(ctx, "acked").Result(); err != nil || v != "1" {
				t.Errorf("a refused wipe lost data: GET = %q, %v", v, err)
			}
			mustDo(t, "kill", n.Kill(ctx))
			mustDo(t, "wipe", n.WipeData(ctx))
			mustDo(t, "start", n.Start(ctx))
			if err := n.Admin().Get(ctx, "acked").Err(); !errors.Is(err, redis.Nil) {
				t.Errorf("after kill, wipe, start: GET = %v, want nil (data lost)", err)
			}
		})
	}
}
