package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/fault"
)

// ErrNoRedisSentinel means redis-sentinel is not installed.
var ErrNoRedisSentinel = errors.New("redis-sentinel not found in PATH: install it (apt-get install -y redis-sentinel)")

// Sentinel is the Redis Sentinel kind: a redis-sentinel watching one
// master, which it fails over to a replica with the other sentinels'
// agreement. It keeps no data; it takes the process and link faults.
var Sentinel = &Kind{
	Name:       "sentinel",
	Binary:     "redis-sentinel",
	NotFound:   ErrNoRedisSentinel,
	Port:       26379,
	ConfigFile: "sentinel.conf",
	Config:     sentinelConfig,
	Args:       func(conf string) []string { return []string{conf} },
	// Sentinel answers INFO server (with its process id) and AUTH like a
	// redis-server.
	Dial:        func(addr, password string) Conn { return DialRedis(addr, password) },
	ReadyLine:   "Sentinel ID is",
	Persistence: []Persistence{PersistNone},
	Faults:      []fault.Capability{fault.Link, fault.Pause, fault.Kill, fault.Stop, fault.Clock, fault.CPU},
}

// SentinelMaster is the name the sentinels know the master by.
const SentinelMaster = "splitbrain"

// SentinelConfig is what a sentinel watches and how quickly it acts.
type SentinelConfig struct {
	// Master is the master's host:port as every server knows it (its own
	// address, not a proxy's: sentinels tell each other and the replicas
	// this address, so it must be the same for all of them; each process
	// reaches it through its own proxy by a route, see RouteEnv).
	Master string
	// Quorum is how many sentinels must find the master down.
	Quorum int
	// DownAfter is how long the master may not answer before a sentinel
	// finds it down (down-after-milliseconds).
	DownAfter time.Duration
	// FailoverTimeout bounds a failover and spaces retries of one
	// (failover-timeout).
	FailoverTimeout time.Duration
}

// sentinelConfig renders sentinel.conf. Sentinel rewrites the file as it
// learns the other sentinels and replicas; the local backend writes it
// anew at each start, so a restarted sentinel starts from the master it
// was given and learns the rest again from it.
func sentinelConfig(c ServerConfig) string {
	s := c.Sentinel
	if s == nil {
		s = &SentinelConfig{}
	}
	host, port, _ := net.SplitHostPort(s.Master)
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	lines := []string{
		"port " + strconv.Itoa(c.Port),
		"bind " + c.Bind,
		"protected-mode yes",
		// The sentinel's own password, and the one it gives the others:
		// every sentinel of the run has the run's.
		"requirepass " + quoteConf(c.Password),
		"sentinel sentinel-pass " + quoteConf(c.Password),
		"dir " + quoteConf(c.DataDir),
		"logfile " + quoteConf(c.LogFile),
		"daemonize no",
		// Keep the environment block (and the run marker the reaper looks
		// for) readable, as for redis-server.
		"set-proc-title no",
		"sentinel resolve-hostnames no",
	}
	if c.AnnounceIP != "" {
		lines = append(lines, "sentinel announce-ip "+quoteConf(c.AnnounceIP), "sentinel announce-port "+strconv.Itoa(c.Port))
	}
	lines = append(lines,
		"sentinel monitor "+SentinelMaster+" "+host+" "+port+" "+strconv.Itoa(max(s.Quorum, 1)),
		"sentinel auth-pass "+SentinelMaster+" "+quoteConf(c.Password),
		"sentinel down-after-milliseconds "+SentinelMaster+" "+ms(s.DownAfter),
		"sentinel failover-timeout "+SentinelMaster+" "+ms(s.FailoverTimeout),
		"sentinel parallel-syncs "+SentinelMaster+" 1",
	)
	return strings.Join(lines, "\n") + "\n"
}

// RouteEnv names the environment variable through which the shim finds a
// process's routes: which proxy it dials instead of which loopback port.
const RouteEnv = "SPLITBRAIN_ROUTE_FILE"

// WriteRoutes writes routes (a server's host:port → the proxy's host:port
// the process must dial instead) to path in the shim's format, atomically:
// a connect reading it meanwhile sees the old routes or the new ones. A
// route between loopback addresses is a line of two ports; any other, of
// two IPv4 addresses with their ports (a container's).
func WriteRoutes(path string, routes map[string]string) error {
	var lines []string
	for from, via := range routes {
		fh, fp, err := net.SplitHostPort(from)
		if err != nil {
			return fmt.Errorf("route %q: %w", from, err)
		}
		vh, vp, err := net.SplitHostPort(via)
		if err != nil {
			return fmt.Errorf("route %q via %q: %w", from, via, err)
		}
		if fh == "127.0.0.1" && vh == "127.0.0.1" {
			lines = append(lines, fp+" "+vp+"\n")
			continue
		}
		for _, h := range []string{fh, vh} {
			if a, err := netip.ParseAddr(h); err != nil || !a.Is4() {
				return fmt.Errorf("route %q via %q: %q is not an IPv4 address", from, via, h)
			}
		}
		lines = append(lines, from+" "+via+"\n")
	}
	sort.Strings(lines)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "")), 0o600); err != nil {
		return fmt.Errorf("routes: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("routes: %w", err)
	}
	return nil
}

// SentinelStarter is a backend that can add sentinels.
type SentinelStarter interface {
	// ReserveSentinels reserves the addresses (host:port) of count
	// sentinels not started yet, which the harness's clients and the
	// other servers reach them at: their proxies and routes are made
	// before the first sentinel dials another.
	ReserveSentinels(count int) ([]string, error)
	// AddSentinel starts a sentinel on its reserved address, its routes
	// in place before it runs, and returns it once it answers.
	AddSentinel(ctx context.Context, spec SentinelSpec) (Node, error)
}

// SentinelSpec describes a sentinel added to a running backend.
type SentinelSpec struct {
	Name string
	// Addr is the sentinel's address, one ReserveSentinels gave.
	Addr   string
	Config SentinelConfig
	// Routes: see local.Process.SetRoutes.
	Routes map[string]string
}

// SentinelMasterInfo is a sentinel's SENTINEL MASTER answer for the
// master it watches (SentinelMaster), by field: a flat list of names and
// values over RESP2, a map over RESP3.
func SentinelMasterInfo(ctx context.Context, c *redis.Client) (map[string]string, error) {
	v, err := c.Do(ctx, "sentinel", "master", SentinelMaster).Result()
	if err != nil {
		return nil, fmt.Errorf("sentinel %s: %w", c.Options().Addr, err)
	}
	out := map[string]string{}
	switch v := v.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
		}
	case map[any]any:
		for k, x := range v {
			out[fmt.Sprint(k)] = fmt.Sprint(x)
		}
	}
	return out, nil
}
