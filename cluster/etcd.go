package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"splitbrain/fault"
)

// ErrNoEtcd means Debian's etcd-server is not installed.
var ErrNoEtcd = errors.New("etcd not found in PATH: install it (apt-get install -y etcd-server; scripts/setup.sh installs it)")

// EtcdUser is the etcd user every client of a run authenticates as, with
// the run's password: etcd's root, the only user a run makes.
const EtcdUser = "root"

// Etcd is the etcd kind: one member of an etcd 3.4 cluster (Debian's
// etcd-server 3.4.23).
//
// Access: both ports, the clients' and the peers', take TLS connections
// only, from clients with a certificate of the run's authority, which
// only the run's password makes (etcdtls.go); and etcd's authentication
// is turned on at the first start (Kind.Secure): the user root with the
// run's password; every client must log in.
//
// What it refuses, and why:
//   - clock offsets: etcd is a Go binary, which reads its clocks through
//     the vDSO, not through libc, so the shim does not move it;
//   - peer-link faults: a Go binary makes its connect system calls itself,
//     so the shim cannot route a member's connections to its peers
//     through proxies; and the members must agree on each other's peer
//     addresses (the cluster's membership), so they cannot be given a
//     proxy per dialer either. A partition can cut clients from members,
//     not members from each other;
//   - wipe: a member that lost its data cannot rejoin under its old
//     identity (it would bootstrap a cluster of its own); etcd wants it
//     removed and added again as a new member, which is not amnesia.
var Etcd = &Kind{
	Name:       "etcd",
	Binary:     "etcd",
	NotFound:   ErrNoEtcd,
	Port:       2379,
	ConfigFile: "etcd.yaml",
	Config:     etcdConfig,
	Args:       func(conf string) []string { return []string{"--config-file", conf} },
	Dial: func(addr, password string) Conn {
		tlsConf, err := EtcdTLS(password)
		return &etcdConn{addr: addr, err: err, http: &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf}}}
	},
	Files:        etcdFiles,
	ReadyLine:    "ready to serve client requests",
	ReadyTimeout: 30 * time.Second,
	Secure:       secureEtcd,
	Persistence:  []Persistence{PersistNone},
	PeerPorts:    1,
	Faults:       []fault.Capability{fault.Link, fault.Pause, fault.Kill, fault.Stop, fault.CPU},
}

// etcd's timing, kept short so that stories take seconds: a heartbeat
// every 100 ms, an election after 1 s without one. The shortest lease etcd
// grants is then 1.5 election timeouts, 2 s (TTLs are whole seconds).
const (
	etcdHeartbeat = 100 * time.Millisecond
	etcdElection  = time.Second
)

func etcdConfig(c ServerConfig) string {
	url := func(host string, port int) string { return "https://" + net.JoinHostPort(host, strconv.Itoa(port)) }
	var initial []string
	for _, m := range c.Ensemble {
		initial = append(initial, m.Name+"="+url(m.HostAddr(), m.PeerPorts[0]))
	}
	// Members listen on Bind and tell the others their own address, which
	// differs from Bind in a container (0.0.0.0).
	name, peer, self := "default", 0, c.Bind
	if c.Member != nil {
		name, peer = c.Member.Name, c.Member.PeerPorts[0]
		if c.Member.Host != "" {
			self = c.Member.Host
		}
	}
	// YAML, every value quoted by %q: a path with a colon stays one value.
	lines := []string{
		fmt.Sprintf("name: %q", name),
		fmt.Sprintf("data-dir: %q", c.DataDir),
		fmt.Sprintf("listen-client-urls: %q", url(c.Bind, c.Port)),
		fmt.Sprintf("advertise-client-urls: %q", url(self, c.Port)),
		fmt.Sprintf("listen-peer-urls: %q", url(c.Bind, peer)),
		fmt.Sprintf("initial-advertise-peer-urls: %q", url(self, peer)),
		fmt.Sprintf("initial-cluster: %q", strings.Join(initial, ",")),
		"initial-cluster-state: \"new\"",
		// Unique per run: members of another run never join this one.
		// etcd logs it, and its logs are served with the run: it is drawn
		// from the password by a one-way function, not cut from it.
		fmt.Sprintf("initial-cluster-token: %q", etcdClusterToken(c.Password)),
		fmt.Sprintf("heartbeat-interval: %d", etcdHeartbeat.Milliseconds()),
		fmt.Sprintf("election-timeout: %d", etcdElection.Milliseconds()),
		"logger: \"zap\"",
		"log-outputs: [\"stderr\"]",
		"enable-v2: false",
		// The gRPC gateway (JSON over HTTP, /v3/...), which a client
		// without gRPC talks to (tooz's etcd3gw driver). etcd 3.4 serves
		// it by default, but not when started from a config file (etcd
		// issue 12093, changed in 3.5). On the client port, behind the
		// same TLS and authentication as gRPC.
		"enable-grpc-gateway: true",
	}
	// TLS on both ports, for clients of the run's authority only
	// (etcdtls.go).
	for _, side := range []string{"client", "peer"} {
		lines = append(lines,
			side+"-transport-security:",
			fmt.Sprintf("  cert-file: %q", filepath.Join(c.DataDir, etcdCertFile)),
			fmt.Sprintf("  key-file: %q", filepath.Join(c.DataDir, etcdKeyFile)),
			fmt.Sprintf("  trusted-ca-file: %q", filepath.Join(c.DataDir, etcdCAFile)),
			"  client-cert-auth: true")
	}
	return strings.Join(lines, "\n") + "\n"
}

// etcdClusterToken is the ensemble's initial-cluster-token: the run's,
// yet telling nothing of its password.
func etcdClusterToken(password string) string {
	sum := sha256.Sum256([]byte("splitbrain etcd initial-cluster-token\x00" + password))
	return "splitbrain-" + hex.EncodeToString(sum[:6])
}

// etcdConn is the harness's probe of an etcd member: GET /health, which
// says true only while the member serves linearizable reads, that is
// while it has a leader.
type etcdConn struct {
	addr string
	err  error // making the TLS configuration
	http *http.Client
}

// Probe implements Conn. etcd does not tell its process id.
func (c *etcdConn) Probe(ctx context.Context) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.addr+"/health", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return 0, err
	}
	var h struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return 0, fmt.Errorf("etcd %s: /health answered %q: %w", c.addr, body, err)
	}
	if h.Health != "true" {
		return 0, fmt.Errorf("etcd %s: not healthy: %s", c.addr, strings.TrimSpace(string(body)))
	}
	return 0, nil
}

func (c *etcdConn) Close() error {
	c.http.CloseIdleConnections()
	return nil
}

// DialEtcd connects to endpoints (each a host:port, a proxy's or a
// member's) as the run's user. The client never learns the members' own
// addresses (no endpoint sync), so every request goes through the
// endpoints given.
func DialEtcd(endpoints []string, password string, dialTimeout time.Duration) (*clientv3.Client, error) {
	tlsConf, err := EtcdTLS(password)
	if err != nil {
		return nil, err
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         tlsConf,
		DialTimeout: dialTimeout,
		Username:    EtcdUser,
		Password:    password,
		Logger:      zap.NewNop(),
		// Without keep-alive pings a client cut off from its endpoint
		// waits on it for as long as its requests' contexts allow; with
		// them it moves to another endpoint.
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connect to %v: %w", endpoints, err)
	}
	return c, nil
}

// secureEtcd makes the root user with the run's password and turns
// authentication on.
func secureEtcd(ctx context.Context, addrs []string, password string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tlsConf, err := EtcdTLS(password)
	if err != nil {
		return err
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: addrs, TLS: tlsConf, DialTimeout: 10 * time.Second, Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer c.Close()
	if _, err := c.UserAdd(ctx, EtcdUser, password); err != nil {
		return fmt.Errorf("etcd: add user %s: %w", EtcdUser, err)
	}
	if _, err := c.UserGrantRole(ctx, EtcdUser, "root"); err != nil {
		return fmt.Errorf("etcd: grant role root: %w", err)
	}
	if _, err := c.AuthEnable(ctx); err != nil {
		return fmt.Errorf("etcd: enable auth: %w", err)
	}
	return nil
}
