package locks_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"splitbrain/locks"
)

// Every kind says what the rest of the harness reads off it.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range locks.All {
		switch {
		case k.Name == "" || seen[k.Name]:
			t.Errorf("kind %q: empty or listed twice", k.Name)
		case k.About == "" || k.Belief == "" || k.Adapter == "":
			t.Errorf("kind %s: wants About, Belief and Adapter", k.Name)
		case !slices.Contains([]string{"redis", "zookeeper", "etcd"}, k.Server):
			t.Errorf("kind %s: server %q is none of the cluster's kinds", k.Name, k.Server)
		case k.Shape == locks.Ensemble && (!k.Fenced || k.Server == "redis"):
			t.Errorf("kind %s: a lock on an ensemble is a consensus system's, with tokens", k.Name)
		case k.Sentinel && k.Shape == locks.Ensemble:
			t.Errorf("kind %s: a lock on an ensemble cannot follow Sentinel", k.Name)
		case k.Command && !k.Driver:
			t.Errorf("kind %s: a command is a driver's", k.Name)
		}
		seen[k.Name] = true
		if locks.ByName(k.Name) != k {
			t.Errorf("ByName(%q) is not the kind", k.Name)
		}
	}
	if locks.ByName("chubby") != nil {
		t.Error("ByName of an unknown kind")
	}
}

// The lists are those the harness had before the registry: the matrix's
// columns in their order, the file's kinds, the fenced ones.
func TestLists(t *testing.T) {
	matrix := "redlock single naive fenced-simple fenced-two-round redsync redislock wait-replicas redis-py rueidislock " +
		"symfony-redis symfony-redlock laravel malkusch-redlock zookeeper etcd etcd-v3lock kazoo kazoo-listener curator curator-listener tooz-etcd"
	for _, tc := range []struct {
		name string
		got  []string
		want string
	}{
		{"Matrix", locks.Matrix(), matrix},
		{"Names", locks.Names(), matrix + " driver"},
		{"FencedNames", locks.FencedNames(), "fenced-simple fenced-two-round zookeeper etcd etcd-v3lock kazoo kazoo-listener curator curator-listener tooz-etcd"},
	} {
		if got := strings.Join(tc.got, " "); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := locks.Or([]string{"a", "b", "c"}); got != "a, b or c" {
		t.Errorf("Or: %q", got)
	}
}

// The predicates answer as the ones they replaced (spec.Consensus,
// OneDeployment, DriverKind, Fenced) did, kind by kind.
func TestPredicates(t *testing.T) {
	for _, tc := range []struct {
		kind                                string
		consensus, oneDeploy, driver, fence bool
	}{
		{"redlock", false, false, false, false},
		{"single", false, true, false, false},
		{"naive", false, false, false, false},
		{"fenced-simple", false, false, false, true},
		{"fenced-two-round", false, false, false, true},
		{"redsync", false, false, false, false},
		{"redislock", false, true, false, false},
		{"wait-replicas", false, true, false, false},
		{"redis-py", false, true, true, false},
		{"rueidislock", false, true, false, false},
		{"zookeeper", true, false, false, true},
		{"etcd", true, false, false, true},
		{"etcd-v3lock", true, false, false, true},
		{"driver", false, false, true, false},
		{"chubby", false, false, false, false},
	} {
		got := [4]bool{locks.Consensus(tc.kind), locks.OneDeploymentKind(tc.kind), locks.DriverKind(tc.kind), locks.FencedKind(tc.kind)}
		if want := [4]bool{tc.consensus, tc.oneDeploy, tc.driver, tc.fence}; got != want {
			t.Errorf("%s: consensus, one deployment, driver, fenced = %v, want %v", tc.kind, got, want)
		}
	}
}

// The parser, fuzzed with every package of its binary instrumented, reads
// this registry: neither may come to import a server's client.
func TestParserStaysLight(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, pkg := range []string{"splitbrain/locks", "splitbrain/scenarios/spec"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, heavy := range []string{"go-redis", "etcd", "zk", "rueidis", "grpc"} {
				if strings.Contains(dep, heavy) {
					t.Errorf("%s imports %s", pkg, dep)
				}
			}
		}
	}
}
