package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// FollowMaster makes the running server behind admin (node name, for
// messages) a replica of the master at addr, host:port, which it
// authenticates to with password. Both backends' nodes use it.
func FollowMaster(ctx context.Context, admin *redis.Client, name, password, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("node %s: follow %q: want host:port: %w", name, addr, err)
	}
	if err := admin.ConfigSet(ctx, "masterauth", password).Err(); err != nil {
		return fmt.Errorf("node %s: follow: %w", name, err)
	}
	if err := admin.Do(ctx, "replicaof", host, port).Err(); err != nil {
		return fmt.Errorf("node %s: REPLICAOF %s %s: %w", name, host, port, err)
	}
	return nil
}

// WaitReplicaSynced waits until the replica behind admin has its link to
// its master up, its sync finished and, under AOF, the rewrite that follows
// a sync done: until then Redis keeps no AOF a restart could load, and a
// replica killed early comes back empty whatever appendfsync says.
func WaitReplicaSynced(ctx context.Context, admin *redis.Client, name string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ictx, cancel := context.WithTimeout(ctx, time.Second)
		info, err := admin.Info(ictx, "replication", "persistence").Result()
		cancel()
		if err == nil && strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0") &&
			strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: replica not in sync: %w (last INFO error: %v)", name, ctx.Err(), err)
		case <-tick.C:
		}
	}
}
