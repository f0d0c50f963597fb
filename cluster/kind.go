package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"splitbrain/fault"
)

// Kind describes a kind of server — Redis now; Sentinel, ZooKeeper and etcd
// with their issues — as both backends start it: its program, its config
// file, how the harness connects to it and asks whether it is ready, the
// persistence modes it takes and the faults it supports. Adding a kind is
// one file declaring one Kind (see redis.go); the backends start any kind
// from its description alone.
type Kind struct {
	// Name names the kind in messages and results: redis, sentinel,
	// zookeeper, etcd.
	Name string
	// Binary is the program, looked up in PATH: the local backend runs
	// it, the Docker backend builds its image from it.
	Binary string
	// NotFound is the error when Binary is not in PATH; it should say how
	// to install it.
	NotFound error
	// Port is where the server listens inside a container; the local
	// backend gives each node a free loopback port instead.
	Port int
	// ConfigFile is the config file's name in the node's private state
	// folder.
	ConfigFile string
	// Config renders a node's config file.
	Config func(ServerConfig) string
	// Args are the program's arguments, given its config file's path.
	Args func(configFile string) []string
	// Dial makes the harness's own connection to a node, which probes its
	// readiness and carries the kind's administrative commands.
	Dial func(addr, password string) Conn
	// ReadyLine is what the server logs once it accepts connections: the
	// Docker backend waits for it while a node is isolated, when no probe
	// can reach it.
	ReadyLine string
	// Persistence lists the modes the kind takes, the default first.
	Persistence []Persistence
	// Faults are the faults the kind supports; every other one is refused
	// with an *UnsupportedError.
	Faults []fault.Capability
	// PeerPorts is how many ports each member of an ensemble listens on
	// for its peers (ZooKeeper: quorum and election; etcd: one); zero for
	// a kind whose servers are independent (Redis). The members of an
	// ensemble must know each other's ports before any starts, so the
	// backend reserves them all first (see Member).
	PeerPorts int
	// Requires, if set, says what else the kind needs besides Binary
	// (ZooKeeper: its jar), as an error that says how to install it.
	Requires func() error
	// Files renders files the server needs in its data folder at every
	// start (ZooKeeper's myid, etcd's TLS material), by name: written
	// again after a wipe.
	Files func(ServerConfig) (map[string]string, error)
	// Secrets renders files the server reads beside its config file, in
	// the node's private state folder, by name, written with the config
	// at every start: ZooKeeper's JAAS file, which holds the run's
	// password for its quorum's authentication.
	Secrets func(ServerConfig) map[string]string
	// ReadyTimeout bounds a start's wait for the server to be ready;
	// zero means 10 s. A JVM on a loaded machine needs longer.
	ReadyTimeout time.Duration
	// Secure, if set, runs once after the first start of every node with
	// the nodes' addresses: it turns on the kind's access control with
	// the run's password where the server has none in its config (etcd's
	// users, ZooKeeper's ACLs).
	Secure func(ctx context.Context, addrs []string, password string) error
	// ClassArchive: Binary is a JVM whose local starts share one
	// class-data archive in the cache dir (classArchive); Args give the
	// JVM's options (-cp among them) before its main class.
	ClassArchive bool
}

// Member is one member of an ensemble as its peers know it.
type Member struct {
	Name string
	// Host is the member's address, where its client and peer ports
	// are; empty means loopback (the local backend). A Docker member has
	// its container's address on the run's network.
	Host string
	// ID is the member's number in the ensemble, from 1 (ZooKeeper's myid).
	ID   int
	Port int // the client port
	// PeerPorts are the ports the member's peers dial (Kind.PeerPorts).
	PeerPorts []int
}

// Addr is the member's client address.
func (m Member) Addr() string { return net.JoinHostPort(m.HostAddr(), strconv.Itoa(m.Port)) }

// PeerAddr is the address of the member's i-th peer port.
func (m Member) PeerAddr(i int) string {
	return net.JoinHostPort(m.HostAddr(), strconv.Itoa(m.PeerPorts[i]))
}

// HostAddr is Host, loopback when empty.
func (m Member) HostAddr() string {
	if m.Host == "" {
		return "127.0.0.1"
	}
	return m.Host
}

// ServerConfig is what a backend knows of a node when it writes its config.
type ServerConfig struct {
	Port int
	Bind string
	// Password is the run's; every client must give it.
	Password string
	// DataDir is where the server keeps its data (a folder the backend
	// made for it, empty at the first start).
	DataDir string
	// LogFile is where the server writes its log; empty means stdout.
	LogFile     string
	Persistence Persistence
	// ReplicaOf is the master's host:port, as the server reaches it, for
	// a replica; empty for a master.
	ReplicaOf string
	// Debug enables the server's debugging commands (Redis's DEBUG) for
	// connections from the server's own host; the harness needs none,
	// some tests do.
	Debug bool
	// AnnounceIP, if set, is the address the server gives its peers for
	// itself (Redis's replica-announce-ip, Sentinel's announce-ip) when
	// the one its connections come from is not it: a container's links
	// go through relays on the network's gateway.
	AnnounceIP string
	// Sentinel is what a sentinel watches; nil for other kinds.
	Sentinel *SentinelConfig
	// Member is this node in its ensemble and Ensemble every member, the
	// node included, in order; nil for a kind without peers.
	Member   *Member
	Ensemble []Member
}

// Conn is the harness's own connection to a node.
type Conn interface {
	// Probe asks the server whether it is ready. It returns the server's
	// process id when the kind can tell it (0 otherwise), so that the
	// local backend knows the answer comes from the process it started,
	// not from another one that took its port.
	Probe(ctx context.Context) (pid int, err error)
	Close() error
}

// ReplicationConn is the connection of a kind with replicas (fault.Replica).
type ReplicationConn interface {
	// Promote makes the server a master, keeping its data.
	Promote(ctx context.Context) error
	// Follow makes the server a replica of the master at addr, which it
	// authenticates to with password.
	Follow(ctx context.Context, addr, password string) error
	// WaitSynced waits until the replica's sync with its master is done.
	WaitSynced(ctx context.Context) error
}

// Supports says whether the kind supports fault f.
func (k *Kind) Supports(f fault.Capability) bool { return slices.Contains(k.Faults, f) }

// Refuse returns the *UnsupportedError of fault f on node, or nil when the
// kind supports f.
func (k *Kind) Refuse(node string, f fault.Capability) error {
	if k.Supports(f) {
		return nil
	}
	return &UnsupportedError{Kind: k.Name, Fault: f, Node: node}
}

// CheckPersistence says whether the kind takes persistence mode p.
func (k *Kind) CheckPersistence(p Persistence) error {
	if slices.Contains(k.Persistence, p) {
		return nil
	}
	modes := make([]string, len(k.Persistence))
	for i, m := range k.Persistence {
		modes[i] = string(m)
	}
	return fmt.Errorf("persistence %q, want one of %s for %s nodes", p, strings.Join(modes, ", "), k.Name)
}
