package runner

import (
	"strings"
	"testing"

	"splitbrain/locks"
	"splitbrain/scenarios/spec"
)

// A story needs its backend to run every kind of server it plays on; both
// backends run every kind now (Sentinel, ZooKeeper and etcd included), so
// only an unknown backend is refused. What a kind cannot take (etcd's
// clock) is the story's fit with the lock, the same on either backend.
func TestFitBackend(t *testing.T) {
	for _, tc := range []struct {
		story, lock, backend string
		want                 string // "" fits; else a part of the reason
	}{
		{"clock-jump", locks.Redlock.Name, spec.BackendDocker, ""},
		{"clock-jump", locks.Redlock.Name, spec.BackendLocal, ""},
		{"clock-jump", locks.Redlock.Name, "", ""},
		{"sentinel-failover", locks.Single.Name, spec.BackendLocal, ""},
		{"sentinel-failover", locks.Single.Name, spec.BackendDocker, ""},
		{"pause-critical-section", locks.ZooKeeper.Name, spec.BackendLocal, ""},
		{"pause-critical-section", locks.ZooKeeper.Name, spec.BackendDocker, ""},
		{"pause-critical-section", locks.Etcd.Name, spec.BackendDocker, ""},
		{"restart-amnesia-aof-always", locks.Etcd.Name, spec.BackendDocker, ""},
		{"clock-jump", locks.Redlock.Name, "podman", `backend "podman": want one of`},
	} {
		sc, err := spec.Load(tc.story)
		if err != nil {
			t.Fatal(err)
		}
		ok, why := FitBackend(sc.PlayAgainst(tc.lock), tc.backend)
		if ok != (tc.want == "") || !strings.Contains(why, tc.want) {
			t.Errorf("%s/%s on %q: fits %v (%q), want %q", tc.story, tc.lock, tc.backend, ok, why, tc.want)
		}
	}
}
