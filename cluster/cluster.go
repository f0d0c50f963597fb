// Package cluster is where a run's servers live: the Backend and Node
// interfaces the runner and the faults use, the kinds of server they start
// (Redis, Sentinel, ZooKeeper, etcd; see Kind), and what both backends
// build their nodes from: the node's shared part (NodeBase), the clock
// shim and its offset file, the routes file, private folders, the
// registry of live runs that the next start reaps after a crash, and the
// loopback ports. The backends are its subpackages: cluster/local, whose
// nodes are child processes on loopback, and cluster/docker, whose nodes
// are containers.
package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Persistence is how a node keeps its data across a restart.
type Persistence string

const (
	// PersistNone keeps nothing: no RDB snapshot (not even on SIGTERM),
	// no AOF. A restarted node comes back empty.
	PersistNone Persistence = "none"
	// PersistAOFEverysec appends every write and fsyncs once a second.
	PersistAOFEverysec Persistence = "aof-everysec"
	// PersistAOFAlways appends and fsyncs every write before replying.
	PersistAOFAlways Persistence = "aof-always"
)

// Config describes the nodes a backend starts; both backends take it.
type Config struct {
	// Kind is the kind of server the nodes run; nil means Redis.
	Kind *Kind
	// Nodes is how many nodes to start; they are named n1..nN.
	Nodes int
	// Dir is the run's folder, which readers of the run may see: node logs
	// go to Dir/logs/<name>.log, and nothing else. Node state (configs,
	// data, the password, clock offsets) lives in a private folder under
	// CacheDir, removed at Close and reaped after a crash.
	Dir string
	// Persistence applies to every node; empty means the kind's default.
	Persistence Persistence
	// NodePersistence overrides Persistence for the nodes it names.
	NodePersistence map[string]Persistence
	// Binary is the server's program; empty means the kind's in PATH.
	Binary string
	// CacheDir holds the compiled clock shim, the registry of live runs
	// and their private state; empty means splitbrain's folder in the
	// user's cache dir.
	CacheDir string
	// RunID marks the run's processes and names its objects; empty means
	// a random one.
	RunID string
	// Debug enables the servers' debugging commands (ServerConfig.Debug).
	Debug bool
	// Logf, if set, is told what the backend did besides starting the
	// nodes: leftovers of crashed runs it removed, the image it runs.
	Logf func(format string, args ...any)
	// PeerRoutes, for a kind of ensemble (Kind.PeerPorts > 0), is called
	// once every member's ports are reserved and before any member
	// starts: it returns each member's routes by name (a peer's address →
	// the proxy that member dials instead; see local.Process.SetRoutes), so
	// that the links between members go through the nemesis's proxies
	// from their first connection on. Nil: members dial each other
	// directly.
	PeerRoutes func(members []Member) (map[string]map[string]string, error)
}

var runIDPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,47}$`)

// Resolve checks cfg and fills in its defaults: the kind, persistence,
// binary, cache dir and run id, with Dir and CacheDir made absolute (nodes
// run in folders of their own; containers bind-mount). Both backends start
// from what it returns.
func (cfg Config) Resolve() (Config, error) {
	if cfg.Kind == nil {
		cfg.Kind = Redis
	}
	k := cfg.Kind
	if cfg.Nodes < 1 {
		return cfg, fmt.Errorf("cluster: Nodes is %d, want at least 1", cfg.Nodes)
	}
	if cfg.Dir == "" {
		return cfg, errors.New("cluster: Dir is empty, want the run's folder")
	}
	if cfg.Persistence == "" {
		cfg.Persistence = k.Persistence[0]
	}
	if err := k.CheckPersistence(cfg.Persistence); err != nil {
		return cfg, fmt.Errorf("cluster: %w", err)
	}
	for name, p := range cfg.NodePersistence {
		if err := k.CheckPersistence(p); err != nil {
			return cfg, fmt.Errorf("cluster: node %s: %w", name, err)
		}
		if i, err := strconv.Atoi(strings.TrimPrefix(name, "n")); err != nil || !strings.HasPrefix(name, "n") || i < 1 || i > cfg.Nodes {
			return cfg, fmt.Errorf("cluster: persistence given for node %q; this cluster has n1..n%d", name, cfg.Nodes)
		}
	}
	if k.Requires != nil {
		if err := k.Requires(); err != nil {
			return cfg, err
		}
	}
	if cfg.Binary == "" {
		p, err := exec.LookPath(k.Binary)
		if err != nil {
			if k.NotFound != nil {
				return cfg, k.NotFound
			}
			return cfg, fmt.Errorf("%s not found in PATH: install it", k.Binary)
		}
		cfg.Binary = p
	}
	var err error
	if cfg.CacheDir == "" {
		if cfg.CacheDir, err = DefaultCacheDir(); err != nil {
			return cfg, err
		}
	}
	if cfg.CacheDir, err = filepath.Abs(cfg.CacheDir); err != nil {
		return cfg, fmt.Errorf("cluster: %w", err)
	}
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return cfg, fmt.Errorf("cluster: %w", err)
	}
	if cfg.RunID == "" {
		cfg.RunID = RandomHex(8)
	}
	if !runIDPattern.MatchString(cfg.RunID) {
		return cfg, fmt.Errorf("cluster: RunID %q, want 1 to 48 letters, digits, '_', '.' or '-', starting with a letter or digit", cfg.RunID)
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return cfg, nil
}

// PersistenceOf is node name's persistence under cfg (resolved).
func (cfg Config) PersistenceOf(name string) Persistence {
	if p := cfg.NodePersistence[name]; p != "" {
		return p
	}
	return cfg.Persistence
}

// NodeName is the name of the i-th lock node, from 1.
func NodeName(i int) string { return "n" + strconv.Itoa(i) }

var nodeNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// CheckNodeName says whether name can name an added node.
func CheckNodeName(name string) error {
	if !nodeNamePattern.MatchString(name) {
		return fmt.Errorf("node name %q: want lower-case letters, digits and dashes, starting with a letter", name)
	}
	return nil
}

// DefaultCacheDir is where the shim and the live-run registry go by default.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache dir: %w", err)
	}
	return filepath.Join(base, "splitbrain"), nil
}

// RandomHex is n random bytes in hex: passwords and run ids.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux (Go ≥1.24 panics instead)
	return hex.EncodeToString(b)
}
