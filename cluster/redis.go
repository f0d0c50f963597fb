package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/fault"
)

// ErrNoRedisServer means redis-server is not installed.
var ErrNoRedisServer = errors.New("redis-server not found in PATH: install it (apt-get install -y redis-server)")

// Redis is the Redis kind: a redis-server master (or a replica of one),
// with every fault.
var Redis = &Kind{
	Name:        "redis",
	Binary:      "redis-server",
	NotFound:    ErrNoRedisServer,
	Port:        6379,
	ConfigFile:  "redis.conf",
	Config:      redisConfig,
	Args:        func(conf string) []string { return []string{conf} },
	Dial:        func(addr, password string) Conn { return DialRedis(addr, password) },
	ReadyLine:   "Ready to accept connections",
	Persistence: []Persistence{PersistNone, PersistAOFEverysec, PersistAOFAlways},
	Faults:      []fault.Capability{fault.Link, fault.Pause, fault.Kill, fault.Stop, fault.Wipe, fault.Clock, fault.Replica, fault.Disconnect, fault.Power, fault.Fsync, fault.CPU},
}

// redisConfig renders redis.conf. Both backends write it, so a setting
// that matters to the harness (no snapshot on SIGTERM, a readable run
// marker) is decided once, here.
func redisConfig(c ServerConfig) string {
	debug := "no"
	if c.Debug {
		debug = "local"
	}
	lines := []string{
		"port " + strconv.Itoa(c.Port),
		"bind " + c.Bind,
		"protected-mode yes",
		"requirepass " + quoteConf(c.Password),
		"dir " + quoteConf(c.DataDir),
		"logfile " + quoteConf(c.LogFile),
		"daemonize no",
		// Without this Redis snapshots on SIGTERM, and a "restart without
		// persistence" would quietly keep its data.
		`save ""`,
		// DEBUG (SLEEP, SET-ACTIVE-EXPIRE, ...) can stall or corrupt a
		// node; the harness never sends it, only some tests do.
		"enable-debug-command " + debug,
		// Redis rewrites its process title over the environment block by
		// default, which would hide the run marker from the next start's
		// reaper.
		"set-proc-title no",
		// A replica's first sync must not wait for more replicas to come
		// along (the default waits 5 s).
		"repl-diskless-sync-delay 0",
	}
	if c.AnnounceIP != "" {
		lines = append(lines, "replica-announce-ip "+c.AnnounceIP, "replica-announce-port "+strconv.Itoa(c.Port))
	}
	if c.ReplicaOf != "" {
		host, port, _ := net.SplitHostPort(c.ReplicaOf)
		lines = append(lines, "replicaof "+quoteConf(host)+" "+port, "masterauth "+quoteConf(c.Password))
	}
	switch c.Persistence {
	case PersistAOFEverysec:
		lines = append(lines, "appendonly yes", "appendfsync everysec")
	case PersistAOFAlways:
		lines = append(lines, "appendonly yes", "appendfsync always")
	default:
		lines = append(lines, "appendonly no")
	}
	return strings.Join(lines, "\n") + "\n"
}

// quoteConf quotes a value for redis.conf (sdssplitargs syntax).
func quoteConf(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// RedisConn is the harness's connection to a Redis node: a go-redis client
// that fails fast (no retries, one-second timeouts), so that a probe of a
// node that is down or frozen says so at once. Its buffers are 4 KiB, not
// go-redis's 32 KiB: INFO is the largest reply it reads.
type RedisConn struct {
	*redis.Client
}

// DialRedis makes the connection; go-redis dials on first use.
func DialRedis(addr, password string) *RedisConn {
	return &RedisConn{redis.NewClient(&redis.Options{
		Addr:        addr,
		Password:    password,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaxRetries: -1, PoolSize: 2,
		ReadBufferSize: 4 << 10, WriteBufferSize: 4 << 10, PipelineReadBufferSize: 4 << 10, PipelineWriteBufferSize: 4 << 10,
	})}
}

// Probe asks the server for its process id (INFO server), which an
// authenticated answer carries, and whether it is still loading its data
// (INFO persistence): INFO is answered while Redis loads its AOF or RDB,
// but a GET then fails with LOADING, so a server still loading is not
// ready (a restarted node under AOF always answered a test's GET with
// LOADING right after its probe passed).
func (c *RedisConn) Probe(ctx context.Context) (int, error) {
	info, err := c.Info(ctx, "server", "persistence").Result()
	if err != nil {
		return 0, err
	}
	pid, loading := -1, false
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			if pid, err = strconv.Atoi(v); err != nil {
				return 0, fmt.Errorf("INFO server: process_id %q: %w", v, err)
			}
		}
		if line == "loading:1" {
			loading = true
		}
	}
	switch {
	case pid < 0:
		return 0, errors.New("INFO server has no process_id")
	case loading:
		return 0, errors.New("still loading its data (INFO persistence: loading:1)")
	}
	return pid, nil
}

// Promote implements ReplicationConn: REPLICAOF NO ONE.
func (c *RedisConn) Promote(ctx context.Context) error {
	if err := c.Do(ctx, "replicaof", "no", "one").Err(); err != nil {
		return fmt.Errorf("REPLICAOF NO ONE: %w", err)
	}
	return nil
}

// Follow implements ReplicationConn: the master's password, then REPLICAOF.
func (c *RedisConn) Follow(ctx context.Context, addr, password string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("follow %q: want host:port: %w", addr, err)
	}
	if err := c.ConfigSet(ctx, "masterauth", password).Err(); err != nil {
		return fmt.Errorf("follow: %w", err)
	}
	if err := c.Do(ctx, "replicaof", host, port).Err(); err != nil {
		return fmt.Errorf("REPLICAOF %s %s: %w", host, port, err)
	}
	return nil
}

// WaitSynced implements ReplicationConn: it waits until the replica has
// its link to its master up, its sync finished and, under AOF, the rewrite
// that follows a sync done: until then Redis keeps no AOF a restart could
// load, and a replica killed early comes back empty whatever appendfsync
// says.
func (c *RedisConn) WaitSynced(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ictx, cancel := context.WithTimeout(ctx, time.Second)
		info, err := c.Info(ictx, "replication", "persistence").Result()
		cancel()
		if err == nil && strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0") &&
			strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica not in sync: %w (last INFO error: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}
