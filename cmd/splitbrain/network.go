package main

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"splitbrain/internal/netns"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

// The local backend's nodes, the clients' proxies and the drivers talk
// over loopback. On the machine's own loopback any user could connect to
// a node, and while one is down bind its port and stand in for it: the
// clients would send it the run's password and take its answers. So the
// supervisor starts the worker of a command that plays on the local
// backend in a network namespace of its own (package netns), whose
// loopback nothing else on the machine shares. The Docker backend's
// containers are on the host's networks, out of that namespace's reach:
// a command that plays there keeps the host's network (docs/cli.md,
// "Security", says what protects those plays).

// networkEnv tells the worker which network the supervisor gave it:
// netPrivate, or why not (netShared + ": " + the reason).
const networkEnv = "SPLITBRAIN_NETWORK"

const (
	netPrivate = "private"
	netShared  = "shared"
	// netOwn: the namespace the harness was started in is its own
	// already (ownNetworkEnv).
	netOwn = "own"
)

// ownNetworkEnv, set to 1, says that the harness's network namespace is
// its alone already: a container made for it, such as the runner image's
// tasks (network none, or a pod's), whose loopback no other user shares,
// and where no namespace can be made (no capability, seccomp). The local
// backend plays there as in a namespace of its own.
const ownNetworkEnv = "SPLITBRAIN_OWN_NETWORK"

// sharedLoopbackEnv, set to 1, plays the local backend on the machine's
// shared loopback when no private namespace can be had, with a warning.
const sharedLoopbackEnv = "SPLITBRAIN_SHARED_LOOPBACK"

// wantsPrivateNetwork reports whether the command line plays on the local
// backend only, as the worker will decide it: run, suite, sweep, shrink
// and driver check, unless a play of theirs is on the Docker backend. A
// command line that does not parse gets a private network too: the
// worker refuses it anyway.
func wantsPrivateNetwork(args []string) bool {
	if v := os.Getenv(sharedLoopbackEnv); v == "1" || len(args) == 0 {
		return false
	}
	docker := func(flag, file string) bool { return runner.Backend(flag, file) == spec.BackendDocker }
	switch args[0] {
	case "driver":
		return true
	case "run", "suite", "sweep":
		f, pos, _, err := parseRunFlags(args[0], args[1:])
		if err != nil {
			return true
		}
		if f.backend != "" {
			return !docker(f.backend, "")
		}
		if args[0] == "run" || args[0] == "sweep" {
			if len(pos) != 1 {
				return true
			}
			sc, err := loadScenario(pos[0])
			return err != nil || !docker("", sc.Backend)
		}
		// Only the files' backends matter here: the worker loads them
		// again, with their drivers, in its namespace.
		if len(pos) == 0 {
			pos = spec.Builtin()
		}
		for _, p := range pos {
			sc, err := loadScenario(p)
			if err != nil {
				return true
			}
			if docker("", sc.Backend) {
				return false
			}
		}
		return true
	case "shrink":
		f, pos, err := parseShrinkFlags(args[1:])
		if err != nil || len(pos) != 1 {
			return true
		}
		meta, err := runstore.ReadMeta(pos[0])
		if err != nil {
			return !docker(f.backend, "")
		}
		return !docker(f.backend, meta.Backend)
	}
	return false
}

// network is the worker's network as the supervisor made it, read once
// by becomeWorker: "" when this process is no worker.
var network string

// enterNetwork, in the worker, brings up the loopback of the private
// namespace the supervisor made for it.
func enterNetwork() {
	network = os.Getenv(networkEnv)
	os.Unsetenv(networkEnv)
	if network != netPrivate {
		return
	}
	if err := netns.LoopbackUp(); err != nil {
		// Nothing can connect in this namespace; the local backend
		// refuses to start below, saying why.
		network = netShared + ": the private network namespace's loopback could not be brought up: " + err.Error()
	}
}

var warnShared sync.Once

// exposed is what a play on the shared loopback exposes.
const exposed = "where any user of this machine can connect to them and, while one is down, bind its port and stand in for it " +
	"(the clients send it the run's password and believe its answers)"

// localNetworkReady says whether the local backend may start nodes here:
// in the worker's private namespace; elsewhere only when the user asked
// for the shared loopback, with a warning saying what that exposes.
func localNetworkReady() error {
	if network == netPrivate || network == netOwn {
		return nil
	}
	if os.Getenv(sharedLoopbackEnv) == "1" {
		warnShared.Do(func() {
			fmt.Fprintf(os.Stderr, "splitbrain: WARNING: %s=1: this run is NOT protected from the other users of this machine: its nodes listen on the shared loopback, %s\n",
				sharedLoopbackEnv, exposed)
		})
		return nil
	}
	why := strings.TrimPrefix(strings.TrimPrefix(network, netShared), ": ")
	if why == "" {
		why = "the harness runs without its supervisor, which makes one"
	}
	return fmt.Errorf("the local backend's nodes would listen on this machine's shared loopback, %s; "+
		"the private network namespace that protects them could not be made: %s. In a container made for the harness alone, "+
		"whose network no other user shares, set %s=1; to run unprotected anyway, set %s=1",
		exposed, why, ownNetworkEnv, sharedLoopbackEnv)
}

// dockerNetworkReady refuses the Docker backend in the private namespace,
// which cannot reach the containers' networks.
func dockerNetworkReady() error {
	if network != netPrivate {
		return nil
	}
	return fmt.Errorf("--backend docker: this harness runs in a private network namespace, for its local plays, " +
		"from which the containers' networks cannot be reached; play the Docker scenarios apart from the local ones " +
		"(give --backend docker, or only files whose cluster.backend is docker)")
}
