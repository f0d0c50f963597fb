package cluster

import (
	"net"
	"strconv"
	"strings"
)

// RedisConf is what a node's redis.conf says. Both backends write it, so a
// setting that matters to the harness (no snapshot on SIGTERM, a readable
// run marker) is decided once, here.
type RedisConf struct {
	Port     int
	Bind     string
	Password string
	Dir      string
	// LogFile empty means stdout.
	LogFile     string
	Persistence Persistence
	// ReplicaOf is the master's host:port for a replica, empty otherwise.
	ReplicaOf string
}

// String renders the configuration file.
func (c RedisConf) String() string {
	lines := []string{
		"port " + strconv.Itoa(c.Port),
		"bind " + c.Bind,
		"protected-mode yes",
		"requirepass " + quoteConf(c.Password),
		"dir " + quoteConf(c.Dir),
		"logfile " + quoteConf(c.LogFile),
		"daemonize no",
		// Without this Redis snapshots on SIGTERM, and a "restart without
		// persistence" would quietly keep its data.
		`save ""`,
		"enable-debug-command local",
		// Redis rewrites its process title over the environment block by
		// default, which would hide the run marker from the next start's
		// reaper.
		"set-proc-title no",
		// A replica's first sync must not wait for more replicas to come
		// along (the default waits 5 s).
		"repl-diskless-sync-delay 0",
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
