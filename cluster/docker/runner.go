package docker

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"splitbrain/cluster"
)

// A runner image plays a suite's plays inside a container, on the local
// backend, as on a laptop: each play its own server processes on the
// container's loopback. It is built here, as the server images are, from
// what this machine has installed — the harness binary, the servers and
// the drivers the plays need, each with the libraries ldd lists — and
// imported as one layer, so that no registry is needed and an engine that
// starts with no image can run it. Faults on the local backend need no
// privilege: pauses and kills are signals to the harness's own children,
// clock jumps the shim's offset files, partitions and delays the
// harness's own proxies on loopback. So its containers run as an
// unprivileged user with every capability dropped.

// Where things are in a runner image.
const (
	// RunnerUID is the user (and group) the runner's containers run as:
	// no user of the host's, no root.
	RunnerUID = 65532
	// RunnerHome is that user's home: its cache (the clock shim, the
	// live-run registry, ZooKeeper's class archive) is RunnerHome/.cache.
	RunnerHome = "/home/splitbrain"
	// RunnerStore is the runner's store, where a volume is mounted.
	RunnerStore = "/store"
	// RunnerScenarios holds the scenario files of the suite, by base name.
	RunnerScenarios = "/scenarios"
	// RunnerHarness is the harness binary, the image's entry point.
	RunnerHarness = "/usr/bin/splitbrain"

	runnerRepo      = "splitbrain-runner"
	runnerFormatTag = "splitbrain-runner-image v1" // bump when the layout changes
)

// RunnerConfig says what a runner image holds.
type RunnerConfig struct {
	// Harness is the splitbrain binary the image runs: the one building
	// it (os.Executable), so that its clock shim is the one put in the
	// image's cache.
	Harness string
	// Kinds are the kinds of server the plays start. Redis is always
	// there: every story's storage node is one.
	Kinds []*cluster.Kind
	// Python is the interpreter of the Python drivers (driver.Python),
	// put into the image with its standard library and the packages that
	// importing PythonModules loads; empty when no play runs one.
	Python        string
	PythonModules []string
	// PHP is php-cli (driver.PHP), put into the image with its config,
	// its extensions and its include path; empty when no play runs it.
	PHP string
	// Jars is the class path of a Java driver, which is compiled at its
	// first start: the image then holds javac beside the JVM (a kind of
	// server that runs on one, ZooKeeper, must be in Kinds) and the jars
	// with those their manifests name.
	Jars []string
	// Scenarios are scenario files of the user's, each put at
	// RunnerScenarios/<base name>.
	Scenarios []string
	// CacheDir is where the clock shim is compiled; empty means
	// cluster.DefaultCacheDir.
	CacheDir string
}

// runnerEntry is one entry of a runner image: a folder, a file from the
// host (src) or one made here (data).
type runnerEntry struct {
	name string
	dir  bool
	mode fs.FileMode
	uid  int
	src  string
	data []byte
}

// runnerContent is a runner image's entries, config changes and hash.
type runnerContent struct {
	entries []runnerEntry
	changes []string
	hash    string
}

// BuildRunnerImage makes sure the engine has the runner image for cfg,
// tagged splitbrain-runner:<16 hex digits of its hash> and labelled like
// the server images (splitbrain=1, splitbrain.image-hash), so that the
// same command removes both. It is rebuilt only when an input changes.
func (e *Engine) BuildRunnerImage(ctx context.Context, cfg RunnerConfig) (Image, error) {
	rc, err := assembleRunner(ctx, cfg)
	if err != nil {
		return Image{}, err
	}
	im, err := e.ensureImage(ctx, runnerTag(rc.hash), rc.hash, rc.changes, func(w io.Writer) error { return writeRunner(w, rc.entries) })
	if err != nil {
		return Image{}, err
	}
	im.Binary = RunnerHarness
	return im, nil
}

// RunnerImageTag is the tag BuildRunnerImage would give the image for
// cfg, without an engine: what a manifest for another engine names.
func RunnerImageTag(ctx context.Context, cfg RunnerConfig) (string, error) {
	rc, err := assembleRunner(ctx, cfg)
	if err != nil {
		return "", err
	}
	return runnerTag(rc.hash), nil
}

func runnerTag(hash string) string { return runnerRepo + ":" + hash[:16] }

func assembleRunner(ctx context.Context, cfg RunnerConfig) (*runnerContent, error) {
	if cfg.Harness == "" {
		return nil, errors.New("docker: runner image: no harness binary given")
	}
	cacheDir := cfg.CacheDir
	if cacheDir == "" {
		var err error
		if cacheDir, err = cluster.DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	shim, err := imageShimBuilt(ctx, cacheDir)
	if err != nil {
		return nil, err
	}
	var all [][]rootfsFile
	add := func(files []rootfsFile, err error) error {
		all = append(all, files)
		return err
	}
	if err := add(rootfsFiles(ctx, cfg.Harness, RunnerHarness, shim)); err != nil {
		return nil, fmt.Errorf("docker: runner image: the harness: %w", err)
	}
	// tar, for `kubectl cp` out of a pod (the engine copies out of a
	// container without it).
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		return nil, fmt.Errorf("docker: runner image: tar not found in PATH: install it (apt-get install -y tar)")
	}
	if err := add(rootfsFiles(ctx, tarBin, "/usr/bin/tar", shim)); err != nil {
		return nil, fmt.Errorf("docker: runner image: tar: %w", err)
	}
	search := []string{"/usr/bin"}
	kinds := []*cluster.Kind{cluster.Redis}
	for _, k := range cfg.Kinds {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	for _, k := range kinds {
		files, dest, err := programFiles(ctx, k, "", shim)
		if err != nil {
			return nil, fmt.Errorf("docker: runner image: %w", err)
		}
		all = append(all, files)
		if dir := path.Dir(dest); !slices.Contains(search, dir) {
			// The local backend finds each program in PATH; a JVM stays
			// where its runtime is.
			search = append(search, dir)
		}
	}
	if len(cfg.Jars) > 0 {
		if err := add(localeFiles("/usr/lib/locale/C.utf8")); err != nil {
			return nil, fmt.Errorf("docker: runner image: %w", err)
		}
	}
	if cfg.Python != "" {
		if err := add(pythonFiles(ctx, cfg.Python, cfg.PythonModules, shim)); err != nil {
			return nil, fmt.Errorf("docker: runner image: %w", err)
		}
	}
	if cfg.PHP != "" {
		if err := add(phpFiles(ctx, cfg.PHP, shim)); err != nil {
			return nil, fmt.Errorf("docker: runner image: %w", err)
		}
	}
	if len(cfg.Jars) > 0 {
		if err := add(javaDriverFiles(ctx, cfg.Jars, shim)); err != nil {
			return nil, fmt.Errorf("docker: runner image: %w", err)
		}
	}
	files, err := mergeRootfs(all)
	if err != nil {
		return nil, fmt.Errorf("docker: runner image: %w", err)
	}
	entries := make([]runnerEntry, 0, len(files)+16)
	for _, f := range files {
		entries = append(entries, runnerEntry{name: f.dest, mode: f.mode, src: f.src})
	}
	// The harness's cache holds the shim it would build: there is no
	// compiler in the image. It is the user's, as BuildShim checks.
	cache := path.Join(RunnerHome, ".cache", "splitbrain")
	for _, d := range []string{RunnerHome, path.Join(RunnerHome, ".cache"), cache, RunnerStore} {
		entries = append(entries, runnerEntry{name: d, dir: true, mode: 0o755, uid: RunnerUID})
	}
	entries = append(entries,
		runnerEntry{name: "/tmp", dir: true, mode: 0o1777},
		runnerEntry{name: "/etc", dir: true, mode: 0o755},
		runnerEntry{name: RunnerScenarios, dir: true, mode: 0o755},
		runnerEntry{name: "/etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nsplitbrain:x:%d:%d:splitbrain:%s:/sbin/nologin\n", RunnerUID, RunnerUID, RunnerHome))},
		runnerEntry{name: "/etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nsplitbrain:x:%d:\n", RunnerUID))},
	)
	for _, p := range []string{shim, shim + ".sha256"} {
		entries = append(entries, runnerEntry{name: path.Join(cache, filepath.Base(p)), mode: 0o755, uid: RunnerUID, src: p})
	}
	seen := map[string]string{}
	for _, sc := range cfg.Scenarios {
		base := filepath.Base(sc)
		if prev, ok := seen[base]; ok {
			return nil, fmt.Errorf("docker: runner image: scenario files %s and %s share the name %s in %s; rename one", prev, sc, base, RunnerScenarios)
		}
		seen[base] = sc
		entries = append(entries, runnerEntry{name: path.Join(RunnerScenarios, base), mode: 0o644, src: sc})
	}
	changes := []string{
		`ENTRYPOINT ["` + RunnerHarness + `"]`,
		"USER " + strconv.Itoa(RunnerUID) + ":" + strconv.Itoa(RunnerUID),
		"WORKDIR " + RunnerHome,
		"ENV HOME=" + RunnerHome,
		// UTF-8, as on the host: javac reads the Curator driver's source
		// in the locale's encoding (US-ASCII without one); Debian's glibc
		// reads C.UTF-8 from its files, which the image holds.
		"ENV LANG=C.UTF-8",
		"ENV PATH=" + strings.Join(search, ":"),
		"ENV LD_LIBRARY_PATH=" + strings.Join(libDirs(files, RunnerHarness), ":"),
		// A task's network is its own (network none, or its pod's): the
		// harness plays the local backend there, with no namespace of
		// its own, which a task without capabilities cannot make.
		"ENV SPLITBRAIN_OWN_NETWORK=1",
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", runnerFormatTag, strings.Join(changes, "\n"))
	if err := writeRunner(h, entries); err != nil {
		return nil, fmt.Errorf("docker: runner image: %w", err)
	}
	return &runnerContent{entries: entries, changes: changes, hash: hex.EncodeToString(h.Sum(nil))}, nil
}

// mergeRootfs joins the files of several programs: a path wanted by two
// of them must come from the same file.
func mergeRootfs(lists [][]rootfsFile) ([]rootfsFile, error) {
	byDest := map[string]rootfsFile{}
	for _, l := range lists {
		for _, f := range l {
			if prev, ok := byDest[f.dest]; ok && prev.src != f.src {
				return nil, fmt.Errorf("%s would come from both %s and %s", f.dest, prev.src, f.src)
			}
			byDest[f.dest] = f
		}
	}
	out := make([]rootfsFile, 0, len(byDest))
	for _, f := range byDest {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dest < out[j].dest })
	return out, nil
}

// pythonExclude are the parts of Python's standard library no driver
// imports, left out of the image: its tests, IDLE, Tk, the static
// library (a third of the whole).
var pythonExclude = []string{"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages", "dist-packages"}

// pythonFiles lists what the Python drivers need: the interpreter at its
// path (python), its standard library, and each package outside it that
// importing modules loads (redis-py, kazoo, and what they import), whole;
// the .pyc files with them, whose sources keep their times in the image
// so that Python trusts them; and the libraries ldd lists for the
// interpreter and the extension modules.
func pythonFiles(ctx context.Context, python string, modules []string, shim string) ([]rootfsFile, error) {
	probe := `import importlib, json, sys, sysconfig
for m in sys.argv[1:]:
    importlib.import_module(m)
mods = sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)})
print(json.dumps({"stdlib": sysconfig.get_paths()["stdlib"], "path": sys.path, "modules": mods}))`
	out, err := exec.CommandContext(ctx, python, append([]string{"-c", probe}, modules...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		msg := ""
		if errors.As(err, &ee) {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("python: %s cannot import %s (scripts/setup.sh installs the drivers' packages): %w %s", python, strings.Join(modules, ", "), err, msg)
	}
	var got struct {
		Stdlib  string   `json:"stdlib"`
		Path    []string `json:"path"`
		Modules []string `json:"modules"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return nil, fmt.Errorf("python: reading what it loaded: %w", err)
	}
	var extra []string
	walk := func(root string, skip func(rel string) bool) error {
		return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() && rel != "." && skip(rel) {
				return filepath.SkipDir
			}
			// Links to files are copied as those files (Debian's
			// sitecustomize.py is one into /etc); dangling ones left out.
			if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
				extra = append(extra, p)
			}
			return nil
		})
	}
	err = walk(got.Stdlib, func(rel string) bool {
		return slices.Contains(pythonExclude, rel) || strings.HasPrefix(rel, "config-")
	})
	if err != nil {
		return nil, fmt.Errorf("python: %w", err)
	}
	// A loaded module outside the standard library: its top-level
	// package (or the module file) under the sys.path entry holding it.
	done := map[string]bool{}
	for _, m := range got.Modules {
		if strings.HasPrefix(m, got.Stdlib+"/") {
			continue
		}
		for _, entry := range got.Path {
			rel, ok := strings.CutPrefix(m, entry+"/")
			if entry == "" || !ok || entry == got.Stdlib {
				continue
			}
			name := strings.Split(rel, "/")[0]
			top := filepath.Join(entry, name)
			if done[top] {
				break
			}
			done[top] = true
			// With its metadata, which the package may read its own
			// version from (redis-py does: 99.99.99 without it).
			dist := strings.ReplaceAll(strings.TrimSuffix(name, ".py"), "_", "?")
			meta, _ := filepath.Glob(filepath.Join(entry, dist+"-*.*-info"))
			for _, root := range append(meta, top) {
				if err := walk(root, func(string) bool { return false }); err != nil {
					return nil, fmt.Errorf("python: %w", err)
				}
			}
			break
		}
	}
	// OpenSSL's provider modules, which cryptography loads with dlopen
	// when it starts (its legacy provider; ldd does not see them): tooz's
	// etcd driver imports futurist, which imports eventlet, which
	// imports pyOpenSSL, and without them cryptography fails its import
	// ("DSO support routines: could not load the shared library").
	if slices.ContainsFunc(got.Modules, func(m string) bool { return strings.Contains(m, "/cryptography/") }) {
		mods, _ := filepath.Glob("/usr/lib/*/ossl-modules/*.so")
		extra = append(extra, mods...)
	}
	// Debian's pytz reads the system's time zones (tooz's oslo.utils
	// imports it), not a copy of its own: the zone files, without the
	// right/ and posix/ trees of the same zones.
	if slices.ContainsFunc(got.Modules, func(m string) bool { return strings.Contains(m, "/pytz/") }) {
		err := walk("/usr/share/zoneinfo", func(rel string) bool { return rel == "right" || rel == "posix" })
		if err != nil {
			return nil, fmt.Errorf("python: %w", err)
		}
	}
	files, err := rootfsFiles(ctx, python, python, shim)
	if err != nil {
		return nil, err
	}
	// The extension modules' libraries, from one ldd over all of them,
	// leniently: a module whose library is missing here is one no driver
	// imports.
	var mods []string
	for _, p := range extra {
		if strings.HasSuffix(p, ".so") {
			mods = append(mods, p)
		}
	}
	libs, err := lddMany(ctx, mods)
	if err != nil {
		return nil, fmt.Errorf("python: %w", err)
	}
	more, err := hostFiles(append(extra, libs...))
	if err != nil {
		return nil, fmt.Errorf("python: %w", err)
	}
	return append(files, more...), nil
}

// dpkgStatus is dpkg's database of installed packages.
const dpkgStatus = "/var/lib/dpkg/status"

// phpFiles lists what the PHP drivers need: php-cli at its path (php)
// with the libraries ldd lists, its config (php.ini and the folder of
// .ini files it scans, which load the extensions), its extensions with
// their libraries, and its include path (Debian's /usr/share/php: Symfony,
// Illuminate and what they use), each where php looks for it, and dpkg's
// status file.
func phpFiles(ctx context.Context, php, shim string) ([]rootfsFile, error) {
	out, err := exec.CommandContext(ctx, php, "-r",
		`echo PHP_CONFIG_FILE_PATH, "\n", PHP_CONFIG_FILE_SCAN_DIR, "\n", ini_get("extension_dir"), "\n", get_include_path(), "\n";`).Output()
	if err != nil {
		return nil, fmt.Errorf("php: %s: %w", php, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 {
		return nil, fmt.Errorf("php: %s said %q, want its config, scan and extension folders and include path", php, out)
	}
	dirs := []string{lines[0], lines[1], lines[2]}
	for _, p := range strings.Split(lines[3], ":") {
		if path.IsAbs(p) {
			dirs = append(dirs, p)
		}
	}
	var extra, exts []string
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
				extra = append(extra, p)
				if d == lines[2] && strings.HasSuffix(p, ".so") {
					exts = append(exts, p)
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("php: %w", err)
		}
	}
	// The drivers name their library's Debian version (a finding is
	// about a version), which they read from dpkg's status file.
	if info, err := os.Stat(dpkgStatus); err == nil && info.Mode().IsRegular() {
		extra = append(extra, dpkgStatus)
	}
	files, err := rootfsFiles(ctx, php, php, shim)
	if err != nil {
		return nil, err
	}
	libs, err := lddMany(ctx, exts)
	if err != nil {
		return nil, fmt.Errorf("php: %w", err)
	}
	more, err := hostFiles(append(extra, libs...))
	if err != nil {
		return nil, fmt.Errorf("php: %w", err)
	}
	return append(files, more...), nil
}

// javaDriverFiles lists what a Java driver needs besides the JVM: javac
// (in the JVM's folder, which is in PATH), and the jars of its class path
// with those their manifests name.
func javaDriverFiles(ctx context.Context, jars []string, shim string) ([]rootfsFile, error) {
	javac, err := exec.LookPath("javac")
	if err != nil {
		return nil, errors.New("java driver: javac not found in PATH (apt-get install -y default-jdk-headless)")
	}
	real, err := filepath.EvalSymlinks(javac)
	if err != nil {
		return nil, fmt.Errorf("java driver: %w", err)
	}
	files, err := rootfsFiles(ctx, javac, real, shim)
	if err != nil {
		return nil, fmt.Errorf("java driver: %w", err)
	}
	all, err := jarClosure(jars)
	if err != nil {
		return nil, fmt.Errorf("java driver: %w", err)
	}
	more, err := hostFiles(all)
	if err != nil {
		return nil, fmt.Errorf("java driver: %w", err)
	}
	return append(files, more...), nil
}

// localeFiles are the files of a locale (C.UTF-8 for javac), if this
// machine has them: glibc built without them has the locale built in.
func localeFiles(dir string) ([]rootfsFile, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return hostFiles(paths)
}

// lddMany lists the libraries ldd finds for any of files, leaving out
// those it does not find.
func lddMany(ctx context.Context, files []string) ([]string, error) {
	if len(files) == 0 {
		return nil, nil
	}
	ldd, err := exec.LookPath("ldd")
	if err != nil {
		return nil, ErrNoLdd
	}
	// ldd exits 1 when one file is not dynamic; what it printed for the
	// others holds.
	out, err := exec.CommandContext(ctx, ldd, files...).Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, fmt.Errorf("ldd: %w", err)
	}
	var kept []string
	for _, l := range strings.Split(string(out), "\n") {
		// "file:" heads each file's lines when ldd is given several.
		if strings.HasSuffix(l, ":") || strings.Contains(l, "=> not found") || strings.Contains(l, "not a dynamic executable") {
			continue
		}
		kept = append(kept, l)
	}
	libs, err := parseLdd([]byte(strings.Join(kept, "\n")))
	if err != nil {
		return nil, fmt.Errorf("ldd: %w", err)
	}
	slices.Sort(libs)
	return slices.Compact(libs), nil
}

// hostFiles are files of this machine at their own paths in an image,
// links resolved.
func hostFiles(paths []string) ([]rootfsFile, error) {
	out := make([]rootfsFile, 0, len(paths))
	for _, p := range paths {
		src, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, err
		}
		info, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		out = append(out, rootfsFile{dest: path.Clean(p), src: src, mode: info.Mode().Perm()})
	}
	return out, nil
}

// writeRunner writes the entries as a tar whose bytes depend only on the
// entries and the files' content, modes and times — a host file keeps its
// time (a Python source must be as old as its .pyc says), the rest are at
// the epoch, every owner root unless the entry says — so its hash says
// whether the image must be rebuilt. Parent folders not listed are made
// 0755, root's.
func writeRunner(w io.Writer, entries []runnerEntry) error {
	byName := map[string]runnerEntry{}
	for _, e := range entries {
		byName[e.name] = e
	}
	for _, e := range entries {
		for d := path.Dir(e.name); d != "/"; d = path.Dir(d) {
			if _, ok := byName[d]; !ok {
				byName[d] = runnerEntry{name: d, dir: true, mode: 0o755}
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	// A parent's name is a prefix of its children's, so it sorts first.
	sort.Strings(names)
	epoch := time.Unix(0, 0)
	tw := tar.NewWriter(w)
	for _, n := range names {
		e := byName[n]
		hdr := &tar.Header{Name: strings.TrimPrefix(n, "/"), Mode: int64(e.mode), Uid: e.uid, Gid: e.uid, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case e.dir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case e.src != "":
			if err := writeRunnerFile(tw, hdr, e.src); err != nil {
				return err
			}
			continue
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeRunnerFile writes the host file src under hdr, with its size and
// its time.
func writeRunnerFile(tw *tar.Writer, hdr *tar.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	hdr.Typeflag, hdr.Size, hdr.ModTime = tar.TypeReg, info.Size(), info.ModTime().Truncate(time.Second)
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}
