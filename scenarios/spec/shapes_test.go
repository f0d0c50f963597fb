package spec

import (
	"strings"
	"testing"
	"time"

	"splitbrain/locks"
)

const familyFile = `name: fam
expect:
  default: violation
  redsync: safe
lock:
  ttl: 3s
  node_timeout: 250ms
workload:
  clients: 2
shapes:
  masters:
    cluster: {nodes: 5}
    steps:
      - acquire: {client: c1}
      - clock: {node: n3, jump: 6s}
  one:
    cluster: {nodes: 1}
    lock: {ttl: 1s}
    steps:
      - acquire: {client: c1}
  ensemble:
    cluster: {nodes: 3}
    expect: {default: safe}
    steps:
      - acquire: {client: c2}
`

// A familyFile's shapes: each lock plays its deployment's variant, the
// shape's fields over the file's, field by field and lock by lock.
func TestFamilyVariants(t *testing.T) {
	t.Parallel()
	sc, err := Parse([]byte(familyFile), "fam.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Shapes) != 3 || sc.Nodes != 5 {
		t.Fatalf("%d shapes, top %d nodes; want 3 and the masters' 5", len(sc.Shapes), sc.Nodes)
	}
	if want := []string{"redlock", "single", "zookeeper"}; strings.Join(sc.Locks, ",") != strings.Join(want, ",") {
		t.Errorf("locks %v, want each shape's default %v", sc.Locks, want)
	}
	for _, tc := range []struct {
		lock   string
		nodes  int
		ttl    time.Duration
		expect Expect
		client string
	}{
		{"redlock", 5, 3 * time.Second, ExpectViolation, "c1"},
		{"redsync", 5, 3 * time.Second, ExpectSafe, "c1"}, // the file's entry for it
		{"redislock", 1, time.Second, ExpectViolation, "c1"},
		{"etcd", 3, 3 * time.Second, ExpectSafe, "c2"}, // the shape's default over the file's
	} {
		p := sc.PlayAgainst(tc.lock)
		if p.Nodes != tc.nodes || p.Lock.TTL != tc.ttl || p.Expect != tc.expect || p.Steps[0].Client != tc.client ||
			p.Lock.NodeTimeout != 250*time.Millisecond || p.Lock.Kind != tc.lock || p.Name != "fam" {
			t.Errorf("%s plays %d nodes, ttl %v, expect %q, first step %s's, node timeout %v, kind %s, name %s; want %d, %v, %q, %s's",
				tc.lock, p.Nodes, p.Lock.TTL, p.Expect, p.Steps[0].Client, p.Lock.NodeTimeout, p.Lock.Kind, p.Name, tc.nodes, tc.ttl, tc.expect, tc.client)
		}
	}
	one := strings.Replace(familyFile, "  ensemble:\n    cluster: {nodes: 3}\n    expect: {default: safe}\n    steps:\n      - acquire: {client: c2}\n", "", 1)
	sc, err = Parse([]byte(one), "fam.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.ForLock("zookeeper") != nil {
		t.Error("a familyFile without an ensemble shape gave zookeeper a variant")
	}
	if err := sc.Override(Overrides{Lock: "zookeeper"}); err == nil || !strings.Contains(err.Error(), "written for independent masters, one master with replicas") {
		t.Errorf("--lock zookeeper on a familyFile without its shape: %v", err)
	}
}

func TestFamilyFencingAuto(t *testing.T) {
	t.Parallel()
	sc, err := Load("pause-critical-section")
	if err != nil {
		t.Fatal(err)
	}
	for lock, want := range map[string]bool{"redlock": false, "fenced-simple": true, "single": false, "zookeeper": true, "kazoo": true} {
		if got := sc.PlayAgainst(lock).Workload.Fencing; got != want {
			t.Errorf("%s: fencing %v, want %v (fencing: auto)", lock, got, want)
		}
	}
}

// A familyFile's errors name the file, the line and the field.
func TestFamilyErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"unknown shape", "  one:\n", "  single:\n", `fam.yaml:16: shapes.single: not a deployment; want masters, one, ensemble`},
		{"unknown field in a shape", "    cluster: {nodes: 1}\n", "    colour: red\n    cluster: {nodes: 1}\n", `fam.yaml:17: colour: unknown field in a shape; valid fields: cluster, lock, workload, steps, expect`},
		{"a lock of another deployment", "    lock: {ttl: 1s}\n", "    lock: {ttl: 1s, kind: redlock}\n", `fam.yaml:18: shapes.one.lock.kind: redlock runs on independent masters; shapes.one plays the locks of one master with replicas`},
		{"a step's node the shape lacks", "      - acquire: {client: c1}\n  ensemble:", "      - clock: {node: n3, jump: 1s}\n  ensemble:", `fam.yaml:20: steps[0].clock.node`},
		{"fencing auto without a resource", "workload:\n  clients: 2\n", "workload:\n  clients: 2\n  fencing: auto\n", "workload.fencing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(familyFile, tc.from, tc.to, 1)
			if src == familyFile {
				t.Fatalf("the test's edit %q found nothing to replace", tc.from)
			}
			_, err := Parse([]byte(src), "fam.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// shapes: {} is no family and no story: an error, not a story of no steps.
func TestFamilyEmptyShapes(t *testing.T) {
	t.Parallel()
	src := strings.SplitN(familyFile, "shapes:\n", 2)[0] + "shapes: {}\n"
	_, err := Parse([]byte(src), "fam.yaml")
	if err == nil || !strings.Contains(err.Error(), "fam.yaml:10: shapes: empty; want one or more of masters, one, ensemble") {
		t.Errorf("error %v, want shapes empty at line 10", err)
	}
}

func TestShapeNames(t *testing.T) {
	t.Parallel()
	for _, name := range ShapeNames {
		if ShapeName(shapeOf[name]) != name {
			t.Errorf("ShapeName(%v) = %q, want %q", shapeOf[name], ShapeName(shapeOf[name]), name)
		}
	}
	if defaultKind(locks.Ensemble) != locks.ZooKeeper.Name || defaultKind(locks.OneDeployment) != locks.Single.Name {
		t.Errorf("default kinds %s, %s", defaultKind(locks.Ensemble), defaultKind(locks.OneDeployment))
	}
}
