package main_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/locks"
)

// The walk-through driver of docs/driver-protocol.md: a lock of one Redis
// deployment in PHP.
func walkthroughDriver(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../examples/drivers/my_driver.php")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A user's lock driver is played, never silently skipped: suite FILE of
// kind driver plays the driver (and claims nothing of the built-in locks
// the file states nothing for); --lock-driver puts it against a built-in
// story, "any" expected; a story that needs a server the driver cannot use
// is refused before anything starts; a suite that plays nothing fails.
func TestUserLockDriver(t *testing.T) {
	t.Parallel()
	php := walkthroughDriver(t)
	file := filepath.Join(t.TempDir(), "mine.yaml")
	writeFile(t, file, `name: mine-refuses
description: c2 is refused while c1 holds the user's lock.
expect: {driver: safe}
cluster: {nodes: 1}
lock:
  kind: driver
  command: [php, -d, display_errors=stderr, `+php+`]
  ttl: 2s
workload: {clients: 2}
steps:
  - acquire: {client: c1, expect: acquired}
  - acquire: {client: c2, expect: refused}
  - release: {client: c1}
`)
	flag := "mine=php -d display_errors=stderr " + php
	// A story of the locks on ensembles alone.
	ensembleOnly := filepath.Join(t.TempDir(), "ensemble-only.yaml")
	writeFile(t, ensembleOnly, `name: ensemble-only
expect: {zookeeper: safe, etcd: safe}
cluster: {nodes: 3}
lock: {kind: zookeeper, ttl: 2s}
workload: {clients: 2}
steps:
  - acquire: {client: c1, expect: acquired}
`)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"suite of a driver file", []string{"suite", file, "--parallel", "1"}, 0,
			[]string{"mine-refuses against driver", "verdict: VALID (expected safe: as expected)",
				// The file's one story fits the driver alone: every built-in
				// column is n/a.
				fmt.Sprintf("1 of 1 plays met their expectation (1 cells played, %d n/a", len(locks.Matrix()))}},
		{"run a story against --lock-driver", []string{"run", "pause-critical-section", "--lock-driver", flag}, 1,
			[]string{"driver mine: phpredis ", "; mine (redis, one master with replicas)",
				"verdict: INVALID (expected any: as expected)"}},
		{"a story the driver cannot play", []string{"run", ensembleOnly, "--lock-driver", flag}, 254,
			[]string{"ensemble-only against mine: the story does not fit the lock: a story of the locks on consensus ensembles"}},
		{"a suite that plays nothing", []string{"suite", "sentinel-failover", "--lock", "kazoo"}, 254,
			[]string{"nothing to play: every one of the 1 cells is n/a", "sentinel-failover against kazoo: a Redis replication story"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			res := e.runFor(3*time.Minute, append(tc.args, "--seed", "1", "--store", filepath.Join(t.TempDir(), "store"))...)
			if res.code != tc.code {
				t.Errorf("exit %d, want %d", res.code, tc.code)
			}
			out := res.stdout + res.stderr
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			e.checkClean()
		})
	}
}
