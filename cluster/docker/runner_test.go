package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"splitbrain/cluster"
	"splitbrain/driver"
)

// A runner image holds the harness as its entry point, every server the
// plays need with its libraries, the Python drivers' interpreter with its
// standard library and redis-py (with its metadata, which it reads its
// version from), the clock shim where the harness's cache will look for
// it, owned by the runner's user as BuildShim checks, and a store that
// user owns; it runs as that user, and no file in it is set-id. The same
// inputs make the same image (hash).
func TestRunnerImageContent(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(driver.Python); err != nil {
		t.Skipf("no %s: %v", driver.Python, err)
	}
	harness, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(scenario, []byte("name: mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	cfg := RunnerConfig{Harness: harness, Kinds: []*cluster.Kind{cluster.Sentinel}, Python: driver.Python, PythonModules: []string{"redis", "redis.lock"},
		Scenarios: []string{scenario}, CacheDir: cache}
	ctx := context.Background()
	rc, err := assembleRunner(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]runnerEntry{}
	for _, e := range rc.entries {
		byName[e.name] = e
	}
	shim := path.Join(RunnerHome, ".cache", "splitbrain", filepath.Base(cluster.ShimPath(cache)))
	for _, want := range []string{RunnerHarness, "/usr/bin/redis-server", "/usr/bin/redis-sentinel", "/usr/bin/tar", driver.Python,
		shim, shim + ".sha256", "/etc/passwd", path.Join(RunnerScenarios, "mine.yaml")} {
		if _, ok := byName[want]; !ok {
			t.Errorf("no %s in the image", want)
		}
	}
	var stdlib, redisPy, redisMeta bool
	for n := range byName {
		stdlib = stdlib || strings.HasSuffix(n, "/os.py")
		redisPy = redisPy || strings.HasSuffix(n, "/redis/lock.py")
		redisMeta = redisMeta || strings.Contains(n, "/redis-") && strings.Contains(n, "-info")
		if strings.Contains(n, "/test/") && strings.Contains(n, "python3") {
			t.Errorf("%s: Python's tests are not for the image", n)
		}
	}
	if !stdlib || !redisPy || !redisMeta {
		t.Errorf("python: standard library %v, redis-py %v, its metadata %v", stdlib, redisPy, redisMeta)
	}
	for _, owned := range []string{shim, RunnerStore, RunnerHome} {
		if e := byName[owned]; e.uid != RunnerUID {
			t.Errorf("%s is uid %d's, want the runner's %d", owned, e.uid, RunnerUID)
		}
	}
	if !slices.Contains(rc.changes, "USER 65532:65532") || !slices.Contains(rc.changes, `ENTRYPOINT ["`+RunnerHarness+`"]`) ||
		!slices.Contains(rc.changes, "ENV SPLITBRAIN_OWN_NETWORK=1") {
		t.Errorf("changes %v: want the runner's user, the harness as the entry point and its network its own", rc.changes)
	}
	var tarball bytes.Buffer
	if err := writeRunner(&tarball, rc.entries); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&tarball)
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		if hdr.Mode&0o6000 != 0 {
			t.Errorf("%s is set-id (%o)", hdr.Name, hdr.Mode)
		}
	}
	// Without Python (seconds of ldd over its extension modules).
	light := RunnerConfig{Harness: harness, CacheDir: cache}
	one, err := assembleRunner(ctx, light)
	if err != nil {
		t.Fatal(err)
	}
	two, err := assembleRunner(ctx, light)
	if err != nil {
		t.Fatal(err)
	}
	if one.hash != two.hash || one.hash == rc.hash {
		t.Errorf("hashes %s and %s of the same inputs, %s of more", one.hash, two.hash, rc.hash)
	}
	cfg.Python = ""
	cfg.Scenarios = append(cfg.Scenarios, filepath.Join(t.TempDir(), "mine.yaml"))
	if _, err := assembleRunner(ctx, cfg); err == nil || !strings.Contains(err.Error(), "share the name") {
		t.Errorf("two scenario files of one name: %v", err)
	}
}

// untar writes a store copied out of a container: folders, files, a
// latest link inside; a link out of it is left out; a name that leaves
// the folder, or one outside the store copied, is an error.
func TestUntar(t *testing.T) {
	t.Parallel()
	type entry struct {
		name, link string
		dir        bool
	}
	mk := func(entries ...entry) *bytes.Buffer {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, e := range entries {
			hdr := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.name))}
			switch {
			case e.dir:
				hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeDir, 0, 0o755
			case e.link != "":
				hdr.Typeflag, hdr.Size, hdr.Linkname = tar.TypeSymlink, 0, e.link
			}
			if err := tw.WriteHeader(hdr); err != nil {
				t.Fatal(err)
			}
			if hdr.Typeflag == tar.TypeReg {
				tw.Write([]byte(e.name))
			}
		}
		tw.Close()
		return &b
	}
	dest := t.TempDir()
	good := mk(entry{name: "store/", dir: true}, entry{name: "store/runs/s/r1/result.json"},
		entry{name: "store/runs/s/latest", link: "r1"}, entry{name: "store/runs/escape", link: "../../etc"},
		entry{name: "store/runs/abs", link: "/etc/passwd"})
	if err := untar(good, dest); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "runs/s/r1/result.json")); err != nil || string(b) != "store/runs/s/r1/result.json" {
		t.Errorf("file: %q, %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(dest, "runs/s/latest")); err != nil || l != "r1" {
		t.Errorf("latest: %q, %v", l, err)
	}
	for _, out := range []string{"runs/escape", "runs/abs"} {
		if _, err := os.Lstat(filepath.Join(dest, out)); err == nil {
			t.Errorf("%s, a link out of the store, was made", out)
		}
	}
	for _, bad := range []*bytes.Buffer{mk(entry{name: "store/../../x"}), mk(entry{name: "other/x"})} {
		if err := untar(bad, t.TempDir()); err == nil {
			t.Error("a name out of the store was written")
		}
	}
}

// What tooz's etcd driver loads reaches beyond its packages: cryptography
// (through futurist, eventlet and pyOpenSSL) dlopens OpenSSL's legacy
// provider when it starts, and Debian's pytz reads the system's time
// zones; without them the driver died at its import in a runner image
// ("could not load the shared library", then tzdata.zi missing). Both
// are in the files the Python drivers take.
func TestPythonFilesOfTooz(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/lib/python3/dist-packages/tooz"); err != nil {
		t.Skipf("no tooz (scripts/setup.sh installs python3-tooz): %v", err)
	}
	rt, ok := driver.RuntimeOf("tooz-etcd")
	if !ok {
		t.Fatal("no runtime for tooz-etcd")
	}
	ctx := context.Background()
	shim, err := imageShimBuilt(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files, err := pythonFiles(ctx, driver.Python, rt.PythonModules, shim)
	if err != nil {
		t.Fatal(err)
	}
	var provider, zones, toozMeta bool
	for _, f := range files {
		provider = provider || strings.HasSuffix(f.dest, "/ossl-modules/legacy.so")
		zones = zones || f.dest == "/usr/share/zoneinfo/tzdata.zi"
		toozMeta = toozMeta || strings.Contains(f.dest, "/tooz-") && strings.HasSuffix(f.dest, "/entry_points.txt")
	}
	if !provider || !zones || !toozMeta {
		t.Errorf("OpenSSL's legacy provider %v, the time zones %v, tooz's entry points %v: want all", provider, zones, toozMeta)
	}
}
