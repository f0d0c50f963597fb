package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"splitbrain/fault"
)

// Debian's zookeeper package: the server's jar (its manifest names the
// jars it needs) and slf4j's simple binding, without which the server logs
// nothing at all.
const (
	zooKeeperJar = "/usr/share/java/zookeeper.jar"
	slf4jSimple  = "/usr/share/java/slf4j-simple.jar"
)

// ZooKeeperClassPath is the server's class path: the jars the JVM is
// given (the server's own jar names the others in its manifest).
func ZooKeeperClassPath() []string { return []string{zooKeeperJar, slf4jSimple} }

// ErrNoZooKeeper means Debian's zookeeper package (or Java) is missing.
var ErrNoZooKeeper = errors.New("ZooKeeper not installed: " + zooKeeperJar + " or java missing " +
	"(apt-get install -y zookeeper; scripts/setup.sh installs it)")

// ZooKeeperUser is the digest user every client of a run authenticates
// as, with the run's password.
const ZooKeeperUser = "splitbrain"

// ZooKeeper is the ZooKeeper kind: one server of a 3.8 ensemble (Debian's
// zookeeper package), run as a JVM straight from its jar.
//
// Access: ZooKeeper has no server password. What protects a run's
// servers instead: they listen on loopback only; every client must
// authenticate before any request (enforce.auth, digest scheme), and the
// root znode's ACL grants everything to the run's digest identity
// (ZooKeeperUser and the run's password) and nothing to anyone else, so a
// client without the password can connect but read or change nothing.
// The four-letter words are limited to srvr and ruok (the readiness probe,
// read-only counters); the admin web server is off. The quorum and
// election ports take only peers that authenticate with the run's
// password (quorum SASL, DIGEST-MD5; a JAAS file beside each server's
// config).
//
// Clocks: the shim moves the JVM's libc wall clocks (checked: jcmd's
// timestamps, from time(), jump with the offset; a small program's
// System.currentTimeMillis too), but ZooKeeper's session expiry, its
// ticks and its election timeouts read Time.currentElapsedTime(),
// System.nanoTime(), the monotonic clock the shim leaves alone: a clock
// jump on a server does not expire sessions. Not understood yet: the
// servers' own log timestamps did not move after a jump in our runs. The
// fault is supported — it acts on the server's libc clock — and
// clock-jump (its ensemble shape) shows what it does (nothing to sessions).
//
// Peer links: the JVM connects through libc's connect(), which the shim
// routes through the nemesis's proxies (RouteEnv), so a partition can
// split the ensemble — on IPv4 sockets (java.net.preferIPv4Stack), the
// only ones the shim routes. Wipe: a wiped server comes back with only its myid
// and syncs from the leader — ZooKeeper's own amnesia, which loses
// acknowledged writes only when a majority forgets.
var ZooKeeper = &Kind{
	Name:       "zookeeper",
	Binary:     "java",
	NotFound:   ErrNoZooKeeper,
	Port:       2181,
	ConfigFile: "zoo.cfg",
	Config:     zooKeeperConfig,
	Args: func(conf string) []string {
		return []string{
			// The quorum's credentials (zooKeeperJAAS), beside the config.
			"-Djava.security.auth.login.config=" + filepath.Join(filepath.Dir(conf), zooKeeperJAASFile),
			// A small heap, the serial collector and the client compiler
			// only: an ensemble starts in about a second and three of
			// them fit a 2-core machine beside the tests.
			"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			// IPv4 sockets: the JVM's default dual-stack sockets
			// connect to 127.0.0.1 as an AF_INET6 v4-mapped address,
			// which the shim does not route, so the members dialled
			// each other past the proxies and no partition split the
			// ensemble (found by the liveness checks: the minority side
			// kept granting the lock).
			"-Djava.net.preferIPv4Stack=true",
			"-Dzookeeper.enforce.auth.enabled=true", "-Dzookeeper.enforce.auth.schemes=digest",
			"-Dorg.slf4j.simpleLogger.showDateTime=true",
			"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
			"-cp", zooKeeperJar + ":" + slf4jSimple,
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", conf,
		}
	},
	Dial:      func(addr, _ string) Conn { return &zkConn{addr: addr} },
	ReadyLine: "LEADING - LEADER ELECTION TOOK",
	Requires: func() error {
		if _, err := os.Stat(zooKeeperJar); err != nil {
			return ErrNoZooKeeper
		}
		return nil
	},
	Files: func(c ServerConfig) (map[string]string, error) {
		if c.Member == nil {
			return nil, nil
		}
		return map[string]string{"myid": strconv.Itoa(c.Member.ID) + "\n"}, nil
	},
	Secrets: func(c ServerConfig) map[string]string {
		return map[string]string{zooKeeperJAASFile: zooKeeperJAAS(c.Password)}
	},
	ReadyTimeout: 60 * time.Second,
	Secure:       secureZooKeeper,
	ClassArchive: true,
	Persistence:  []Persistence{PersistNone},
	PeerPorts:    2,
	Faults:       []fault.Capability{fault.Link, fault.PeerLink, fault.Pause, fault.Kill, fault.Stop, fault.Wipe, fault.Clock, fault.CPU},
}

// ZooKeeper's timing, kept short so that stories take seconds: a tick of
// 100 ms; sessions of 0.2 to 20 s (2 and 200 ticks); a follower that has
// not heard from the leader for 1 s (syncLimit) is dropped.
const (
	zooKeeperTick = 100 * time.Millisecond
	// ZooKeeperMaxSession is the longest session a client can ask for.
	ZooKeeperMaxSession = 200 * zooKeeperTick
)

func zooKeeperConfig(c ServerConfig) string {
	lines := []string{
		"tickTime=" + strconv.FormatInt(zooKeeperTick.Milliseconds(), 10),
		"initLimit=100",
		"syncLimit=10",
		"maxSessionTimeout=" + strconv.FormatInt(ZooKeeperMaxSession.Milliseconds(), 10),
		"dataDir=" + c.DataDir,
		"clientPort=" + strconv.Itoa(c.Port),
		"clientPortAddress=" + c.Bind,
		"admin.enableServer=false",
		"4lw.commands.whitelist=srvr,ruok",
		// One server is still an ensemble (of one), never a standalone
		// server with other code paths.
		"standaloneEnabled=false",
		"reconfigEnabled=false",
		"autopurge.purgeInterval=0",
		"maxClientCnxns=200",
		// The quorum and election ports take only peers that know the
		// run's password (SASL DIGEST-MD5, zooKeeperJAAS): without it a
		// stranger could join as an observer and be sent every znode,
		// the run's ACL digest included.
		"quorum.auth.enableSasl=true",
		"quorum.auth.learnerRequireSasl=true",
		"quorum.auth.serverRequireSasl=true",
		"quorum.auth.learner.saslLoginContext=QuorumLearner",
		"quorum.auth.server.saslLoginContext=QuorumServer",
	}
	for _, m := range c.Ensemble {
		host := c.Bind
		if m.Host != "" {
			host = m.Host // a container's address: 0.0.0.0 names no peer
		}
		lines = append(lines, fmt.Sprintf("server.%d=%s:%d:%d", m.ID, host, m.PeerPorts[0], m.PeerPorts[1]))
	}
	return strings.Join(lines, "\n") + "\n"
}

// zooKeeperJAASFile is the JAAS file's name beside the config file.
const zooKeeperJAASFile = "jaas.conf"

// zooKeeperJAAS is a server's JAAS file: the quorum's one user,
// ZooKeeperUser, with the run's password, as the server checks its
// learners (QuorumServer) and as it presents itself to its leader
// (QuorumLearner). The password is hex: nothing to quote.
func zooKeeperJAAS(password string) string {
	return fmt.Sprintf(`QuorumServer {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_%[1]s="%[2]s";
};
QuorumLearner {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="%[1]s"
  password="%[2]s";
};
`, ZooKeeperUser, password)
}

// zkConn is the harness's probe of a ZooKeeper server: the four-letter
// word srvr, which a server answers with its mode (leader, follower) only
// while it serves, that is while it is part of a quorum.
type zkConn struct{ addr string }

// Probe implements Conn. ZooKeeper does not tell its process id.
func (c *zkConn) Probe(ctx context.Context) (int, error) {
	mode, err := ZooKeeperMode(ctx, c.addr)
	if err != nil {
		return 0, err
	}
	if mode != "leader" && mode != "follower" {
		return 0, fmt.Errorf("zookeeper %s: mode %q, not serving", c.addr, mode)
	}
	return 0, nil
}

func (c *zkConn) Close() error { return nil }

// ZooKeeperMode asks the server at addr for its mode with srvr: leader,
// follower, or an error when it does not serve (no quorum, down, paused).
func ZooKeeperMode(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(time.Second))
	}
	if _, err := io.WriteString(conn, "srvr"); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(conn)
	var first string
	for sc.Scan() {
		line := sc.Text()
		if first == "" {
			first = line
		}
		if v, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("zookeeper %s: %s", addr, strings.TrimSpace(first))
}

// ZooKeeperACL is the ACL of every znode of a run: everything for the
// run's digest identity, nothing for anyone else.
func ZooKeeperACL(password string) []zk.ACL {
	return zk.DigestACL(zk.PermAll, ZooKeeperUser, password)
}

// DialZooKeeper connects to servers (each a host:port, a proxy's or a
// server's) with a session of sessionTimeout, authenticated as the run's
// digest identity, and waits until the session is established. onEvent,
// if not nil, is told every session event as it happens; dial, if not
// nil, makes the client's connections.
func DialZooKeeper(ctx context.Context, servers []string, sessionTimeout time.Duration, password string, onEvent zk.EventCallback, dial zk.Dialer) (*zk.Conn, <-chan zk.Event, error) {
	if dial == nil {
		dial = net.DialTimeout
	}
	conn, events, err := zk.Connect(servers, sessionTimeout, zk.WithLogger(quietZK{}), zk.WithDialer(dial), zk.WithEventCallback(func(e zk.Event) {
		if onEvent != nil {
			onEvent(e)
		}
	}))
	if err != nil {
		return nil, nil, fmt.Errorf("zookeeper: connect: %w", err)
	}
	for conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			conn.Close()
			return nil, nil, fmt.Errorf("zookeeper: no session with %v: %w", servers, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The credentials before any other request: enforce.auth closes a
	// session that asks for anything first. The client sends them again
	// first thing on every reconnect.
	if err := conn.AddAuth("digest", []byte(ZooKeeperUser+":"+password)); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("zookeeper: authenticate: %w", err)
	}
	return conn, events, nil
}

// quietZK drops go-zookeeper's log lines (a reconnect after every fault).
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// secureZooKeeper gives the root znode the run's ACL.
func secureZooKeeper(ctx context.Context, addrs []string, password string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, _, err := DialZooKeeper(ctx, addrs, 10*time.Second, password, nil, nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.SetACL("/", ZooKeeperACL(password), -1); err != nil {
		return fmt.Errorf("zookeeper: set the root's ACL: %w", err)
	}
	return nil
}
