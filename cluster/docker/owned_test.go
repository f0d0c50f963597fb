package docker

import (
	"strings"
	"testing"

	"splitbrain/cluster"
)

// OwnObjects finds a live cluster's container, volume and network by this
// process's owner labels, and none of them once the cluster is closed.
func TestOwnObjects(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, cluster.Config{Nodes: 1, Persistence: "aof-always"})
	ctx := testCtx(t)
	ofRun := func() []string {
		all, err := c.eng.OwnObjects(ctx)
		mustDo(t, "own objects", err)
		var out []string
		for _, o := range all {
			if strings.HasSuffix(o, "(run "+c.RunID()+")") {
				out = append(out, o)
			}
		}
		return out
	}
	got := strings.Join(ofRun(), "\n")
	for _, kind := range []string{"container ", "volume ", "network "} {
		if !strings.Contains(got, kind) {
			t.Errorf("own objects of a live run lack a %s:\n%s", kind, got)
		}
	}
	mustDo(t, "close", c.Close(ctx))
	if left := ofRun(); len(left) != 0 {
		t.Errorf("own objects after close: %v", left)
	}
}
