package docker

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
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
	"strings"
	"time"

	"splitbrain/cluster"
)

// Where things live inside the image and its containers.
const (
	imageBinDir    = "/usr/bin"
	imageShim      = "/usr/lib/splitbrain/clockshim.so"
	imageStateDir  = "/splitbrain" // the node's config and clock offset file, bind-mounted read-only
	imageDataDir   = "/data"
	imageFormatTag = "splitbrain-redis-image v1" // bump when the image layout changes
)

// ErrNoLdd means the shared libraries of the server program cannot be listed.
var ErrNoLdd = errors.New("ldd not found in PATH: install it (apt-get install -y libc-bin)")

// ImageConfig says what a kind's image is built from.
type ImageConfig struct {
	// Kind is the kind of server the image runs; nil means cluster.Redis.
	Kind *cluster.Kind
	// Binary is the host's server program; empty means the kind's in
	// PATH. A symlink is resolved, and the file it points to is copied
	// under the kind's program name (Debian's redis-server is a link to
	// redis-check-rdb, and the binary picks its mode from the name it runs
	// under).
	Binary string
	// CacheDir is where the clock shim is compiled; empty means
	// cluster.DefaultCacheDir.
	CacheDir string
}

// kind is cfg's kind, Redis by default.
func (cfg ImageConfig) kind() *cluster.Kind {
	if cfg.Kind == nil {
		return cluster.Redis
	}
	return cfg.Kind
}

// imageBinary is where a kind's program is in its image.
func imageBinary(k *cluster.Kind) string { return path.Join(imageBinDir, k.Binary) }

// imageRepo is the repository of a kind's images.
func imageRepo(k *cluster.Kind) string { return "splitbrain-" + k.Name }

// Image is a kind's image, of this machine's server program.
type Image struct {
	Tag  string // splitbrain-<kind>:<first 16 hex digits of Hash>
	ID   string
	Hash string // sha256 of the rootfs and the image config
	// Binary is where the server's program is in the image.
	Binary string
	// Built is false when an image with the same inputs was there already.
	Built bool
}

// BuildImage makes sure the engine has the image of cfg's kind for this
// machine's server program (redis-server): a rootfs holding only that
// program, the libraries ldd lists for it, the dynamic loader and the
// clock shim, imported as one layer. The image is tagged and labelled with
// a hash of its content, so it is rebuilt only when an input changes, and
// labelled splitbrain=1 so that RemoveImages finds it.
func (e *Engine) BuildImage(ctx context.Context, cfg ImageConfig) (Image, error) {
	rfs, err := assembleImage(ctx, cfg)
	if err != nil {
		return Image{}, err
	}
	tag := imageRepo(cfg.kind()) + ":" + rfs.hash[:16]
	// Streamed, not held: a JRE makes the rootfs of ZooKeeper's image
	// some 200 MB.
	im, err := e.ensureImage(ctx, tag, rfs.hash, rfs.changes, func(w io.Writer) error { return writeRootfs(w, rfs.files) })
	if err != nil {
		return Image{}, err
	}
	im.Binary = rfs.binary
	return im, nil
}

// ensureImage makes sure the engine has image tag of content hash: kept
// when there, else imported from the rootfs tar write writes, with the
// changes and the labels splitbrain=1 and the hash.
func (e *Engine) ensureImage(ctx context.Context, tag, hash string, changes []string, write func(io.Writer) error) (Image, error) {
	if have, ok, err := e.imageByRef(ctx, tag); err != nil {
		return Image{}, err
	} else if ok && have.Labels[labelImageHash] == hash {
		return Image{Tag: tag, ID: have.ID, Hash: hash}, nil
	}
	changes = append(changes[:len(changes):len(changes)], "LABEL "+labelApp+"=1 "+labelImageHash+"="+hash)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(write(pw)) }()
	err := e.importImage(ctx, pr, tag, changes)
	_ = pr.CloseWithError(errors.New("import ended"))
	if err != nil {
		return Image{}, err
	}
	have, ok, err := e.imageByRef(ctx, tag)
	switch {
	case err != nil:
		return Image{}, err
	case !ok:
		return Image{}, fmt.Errorf("docker: image %s not found right after importing it", tag)
	case have.Labels[labelImageHash] != hash:
		return Image{}, fmt.Errorf("docker: image %s carries hash label %q after import, want %q",
			tag, have.Labels[labelImageHash], hash)
	}
	return Image{Tag: tag, ID: have.ID, Hash: hash, Built: true}, nil
}

// Images lists splitbrain's server images in the engine, of every kind.
func (e *Engine) Images(ctx context.Context) ([]Image, error) {
	list, err := e.listImages(ctx, map[string]string{labelImageHash: ""})
	if err != nil {
		return nil, err
	}
	out := make([]Image, 0, len(list))
	for _, im := range list {
		out = append(out, imageOf(im))
	}
	return out, nil
}

func imageOf(im imageInfo) Image {
	tag := ""
	if len(im.Tags) > 0 {
		tag = im.Tags[0]
	}
	return Image{Tag: tag, ID: im.ID, Hash: im.Labels[labelImageHash]}
}

// RemoveImages removes splitbrain's Redis images whose content hash is
// one of hashes (Image.Hash, the label splitbrain.image-hash) and returns
// their tags (or ids, for untagged ones); with no hash given it removes
// every splitbrain Redis image. Other images are never touched. An image
// still used by a container stays and its error is returned.
func (e *Engine) RemoveImages(ctx context.Context, hashes ...string) ([]string, error) {
	var list []Image
	if len(hashes) == 0 {
		all, err := e.Images(ctx)
		if err != nil {
			return nil, err
		}
		list = all
	}
	for _, h := range hashes {
		if h == "" {
			return nil, errors.New("docker: RemoveImages: an empty hash; give Image.Hash, or no hash to remove every image")
		}
		// By label, on the engine's side: the one selector an image of
		// another program cannot match by accident.
		found, err := e.listImages(ctx, map[string]string{labelImageHash: h})
		if err != nil {
			return nil, err
		}
		for _, im := range found {
			list = append(list, imageOf(im))
		}
	}
	var removed []string
	var errs []error
	for _, im := range list {
		if err := e.removeImage(ctx, im.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		name := im.Tag
		if name == "" {
			name = im.ID
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// ImageTag is the tag BuildImage would give the image for cfg, without
// talking to the engine. Doctor uses it to say whether the image is built.
func ImageTag(ctx context.Context, cfg ImageConfig) (string, error) {
	rfs, err := assembleImage(ctx, cfg)
	if err != nil {
		return "", err
	}
	return imageRepo(cfg.kind()) + ":" + rfs.hash[:16], nil
}

// imageContent is a rootfs's files with the config changes to apply on
// import and the hash of both (of the rootfs as a tar).
type imageContent struct {
	files   []rootfsFile
	changes []string
	hash    string
	binary  string // the program's path in the image
}

func assembleImage(ctx context.Context, cfg ImageConfig) (*imageContent, error) {
	shim, err := imageShimBuilt(ctx, cfg.CacheDir)
	if err != nil {
		return nil, err
	}
	files, dest, err := programFiles(ctx, cfg.kind(), cfg.Binary, shim)
	if err != nil {
		return nil, err
	}
	changes := []string{
		`ENTRYPOINT ["` + dest + `"]`,
		"ENV LD_LIBRARY_PATH=" + strings.Join(libDirs(files, dest), ":"),
		"WORKDIR " + imageDataDir,
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", imageFormatTag, strings.Join(changes, "\n"))
	if err := writeRootfs(h, files); err != nil {
		return nil, fmt.Errorf("docker: image: %w", err)
	}
	return &imageContent{files: files, changes: changes, hash: hex.EncodeToString(h.Sum(nil)), binary: dest}, nil
}

// imageShimBuilt is the clock shim, built into cacheDir (empty: the
// default) if it is not there yet.
func imageShimBuilt(ctx context.Context, cacheDir string) (string, error) {
	if cacheDir == "" {
		var err error
		if cacheDir, err = cluster.DefaultCacheDir(); err != nil {
			return "", err
		}
	}
	shim, err := cluster.BuildShim(ctx, cacheDir)
	if err != nil {
		return "", fmt.Errorf("docker: image: %w", err)
	}
	return shim, nil
}

// programFiles lists what kind k's program needs in an image: the program
// bin (empty: the kind's in PATH) at dest, its path there; the libraries
// ldd lists for it and the loader; the clock shim; for ZooKeeper the JVM's
// runtime and the server's jars.
func programFiles(ctx context.Context, k *cluster.Kind, bin, shim string) (files []rootfsFile, dest string, err error) {
	if bin == "" {
		p, err := exec.LookPath(k.Binary)
		if err != nil {
			if k.NotFound != nil {
				return nil, "", k.NotFound
			}
			return nil, "", fmt.Errorf("docker: %s not found in PATH: install it", k.Binary)
		}
		bin = p
	}
	dest = imageBinary(k)
	var extra []string
	if k == cluster.ZooKeeper {
		// A JVM finds its runtime from its own path: it keeps the host's.
		if dest, err = filepath.EvalSymlinks(bin); err != nil {
			return nil, "", fmt.Errorf("docker: image: %w", err)
		}
		if extra, err = zooKeeperFiles(dest); err != nil {
			return nil, "", fmt.Errorf("docker: image: %w", err)
		}
	}
	files, err = rootfsFiles(ctx, bin, dest, shim, extra...)
	if err != nil {
		return nil, "", fmt.Errorf("docker: image: %w", err)
	}
	return files, dest, nil
}

// zooKeeperFiles are what ZooKeeper's image holds besides java and the
// libraries ldd lists: the runtime's own files (its libraries, modules
// and config; not the JDK's sources, headers or man pages) and the jars
// of the server's class path, with those their manifests name.
func zooKeeperFiles(java string) ([]string, error) {
	home := filepath.Dir(filepath.Dir(java))
	var out []string
	for _, dir := range []string{"lib", "conf"} {
		err := filepath.WalkDir(filepath.Join(home, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || d.Name() == "ct.sym" || d.Name() == "src.zip" {
				return nil
			}
			// Links out of the runtime (to /etc/java-17-openjdk) are
			// copied as the files they point to; dangling ones (GUI
			// libraries not installed) are left out.
			if info, err := os.Stat(p); err != nil || !info.Mode().IsRegular() {
				return nil
			}
			out = append(out, p)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("java runtime %s: %w", home, err)
		}
	}
	jars, err := jarClosure(cluster.ZooKeeperClassPath())
	return append(out, jars...), err
}

// jarClosure is a class path with the jars its jars' manifests name, and
// theirs, each once.
func jarClosure(jars []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	queue := slices.Clone(jars)
	for len(queue) > 0 {
		jar := queue[0]
		queue = queue[1:]
		if seen[jar] {
			continue
		}
		seen[jar] = true
		out = append(out, jar)
		more, err := manifestClassPath(jar)
		if err != nil {
			return nil, err
		}
		queue = append(queue, more...)
	}
	return out, nil
}

// manifestClassPath is the Class-Path of a jar's manifest, as absolute
// paths (Debian's are; relative ones are taken from the jar's folder).
func manifestClassPath(jar string) ([]string, error) {
	z, err := zip.OpenReader(jar)
	if err != nil {
		return nil, fmt.Errorf("jar %s: %w", jar, err)
	}
	defer z.Close()
	f, err := z.Open("META-INF/MANIFEST.MF")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("jar %s: %w", jar, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("jar %s: %w", jar, err)
	}
	// Continuation lines start with one space.
	text := strings.ReplaceAll(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n ", "")
	var out []string
	for _, line := range strings.Split(text, "\n") {
		v, ok := strings.CutPrefix(line, "Class-Path:")
		if !ok {
			continue
		}
		for _, p := range strings.Fields(v) {
			if !path.IsAbs(p) {
				p = filepath.Join(filepath.Dir(jar), p)
			}
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// rootfsFile is one file of the image: dest inside it, src on the host
// (symlinks resolved).
type rootfsFile struct {
	dest string
	src  string
	mode fs.FileMode
}

// rootfsFiles lists what the image needs: the server program bin (at
// dest), the clock shim, extra files (each at its own path), every library
// ldd lists for the program, the shim and the extra shared libraries, and
// the dynamic loader, each at the path the loader will look for it.
func rootfsFiles(ctx context.Context, bin, dest, shim string, extra ...string) ([]rootfsFile, error) {
	byDest := map[string]string{}
	add := func(dest, src string) error {
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			return err
		}
		if prev, ok := byDest[dest]; ok && prev != real {
			return fmt.Errorf("%s would come from both %s and %s", dest, prev, real)
		}
		byDest[dest] = real
		return nil
	}
	if err := add(dest, bin); err != nil {
		return nil, fmt.Errorf("%s: %w", path.Base(dest), err)
	}
	if err := add(imageShim, shim); err != nil {
		return nil, fmt.Errorf("clock shim: %w", err)
	}
	// $ORIGIN in the program's run path (java's libjli.so) is the
	// resolved file's folder, not the link's.
	lddOf := []string{byDest[dest], shim}
	for _, x := range extra {
		if err := add(path.Clean(x), x); err != nil {
			return nil, err
		}
		if strings.HasSuffix(x, ".so") {
			lddOf = append(lddOf, x)
		}
	}
	for i, bin := range lddOf {
		libs, err := lddLibs(ctx, bin, i >= 2)
		if err != nil {
			return nil, err
		}
		if interp, err := elfInterp(bin); err != nil {
			return nil, err
		} else if interp != "" {
			libs = append(libs, interp)
		}
		for _, l := range libs {
			if err := add(path.Clean(l), l); err != nil {
				return nil, fmt.Errorf("library of %s: %w", bin, err)
			}
		}
	}
	files := make([]rootfsFile, 0, len(byDest))
	for dest, src := range byDest {
		info, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s (for %s) is not a regular file", src, dest)
		}
		files = append(files, rootfsFile{dest: dest, src: src, mode: info.Mode().Perm()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].dest < files[j].dest })
	return files, nil
}

// lddLibs runs ldd on bin and returns the absolute paths it resolved.
// lenient skips the libraries ldd does not find (a runtime's optional
// parts: a JRE's GUI libraries want X11), instead of failing.
func lddLibs(ctx context.Context, bin string, lenient bool) ([]string, error) {
	ldd, err := exec.LookPath("ldd")
	if err != nil {
		return nil, ErrNoLdd
	}
	out, err := exec.CommandContext(ctx, ldd, bin).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && bytes.Contains(append(out, ee.Stderr...), []byte("not a dynamic executable")) {
			return nil, nil // static: nothing to copy
		}
		msg := ""
		if errors.As(err, &ee) {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("ldd %s: %w %s", bin, err, msg)
	}
	if lenient {
		var kept []byte
		for _, l := range bytes.SplitAfter(out, []byte("\n")) {
			if !bytes.Contains(l, []byte("=> not found")) {
				kept = append(kept, l...)
			}
		}
		out = kept
	}
	libs, err := parseLdd(out)
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	return libs, nil
}

// parseLdd extracts the library paths from ldd's output. Lines look like
//
//	linux-vdso.so.1 (0x00007ffd...)                         kernel-provided, no file
//	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)   resolved
//	/lib64/ld-linux-x86-64.so.2 (0x...)                     the loader
//	libfoo.so.1 => not found                                an error
func parseLdd(out []byte) ([]string, error) {
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s == "statically linked" {
			continue
		}
		name, target, arrow := strings.Cut(s, "=>")
		if arrow {
			target = strings.TrimSpace(target)
			if strings.HasPrefix(target, "not found") {
				return nil, fmt.Errorf("line %d: library %s not found", line, strings.TrimSpace(name))
			}
		} else {
			target = s
		}
		// Drop the load address, "(0x...)".
		if i := strings.LastIndex(target, "("); i >= 0 && strings.HasSuffix(target, ")") {
			target = target[:i]
		}
		target = strings.TrimSpace(target)
		if target == "" {
			continue // e.g. "linux-vdso.so.1 =>  (0x...)" in old glibc
		}
		if !strings.HasPrefix(target, "/") {
			if arrow {
				return nil, fmt.Errorf("line %d: %q resolves to a relative path %q", line, strings.TrimSpace(name), target)
			}
			continue // the vDSO: provided by the kernel, no file
		}
		libs = append(libs, target)
	}
	return libs, sc.Err()
}

// elfInterp is the dynamic loader bin asks for, or "" for none (a static
// binary, or a shared library).
func elfInterp(bin string) (string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return "", fmt.Errorf("reading the loader path of %s: %w", bin, err)
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}

// libDirs are the folders holding the libraries, for LD_LIBRARY_PATH: the
// loader's built-in search path differs between distributions, and the
// image has no ld.so.cache.
func libDirs(files []rootfsFile, bin string) []string {
	seen := map[string]bool{}
	var dirs []string
	for _, f := range files {
		if f.dest == bin || f.dest == imageShim || !strings.Contains(path.Base(f.dest), ".so") {
			continue
		}
		d := path.Dir(f.dest)
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs
}

// writeRootfs writes files, their folders and the image's empty folders as a
// tar whose bytes depend only on the files' content, names and modes (fixed
// times and owners), so its hash says whether the image must be rebuilt.
func writeRootfs(w io.Writer, files []rootfsFile) error {
	dirs := map[string]fs.FileMode{
		imageDataDir:  0o700,
		imageStateDir: 0o755,
		"/tmp":        0o1777,
		"/etc":        0o755, // mount points of /etc/hosts and friends
	}
	for _, f := range files {
		for d := path.Dir(f.dest); d != "/"; d = path.Dir(d) {
			if _, ok := dirs[d]; !ok {
				dirs[d] = 0o755
			}
		}
	}
	type entry struct {
		name string
		dir  bool
		mode fs.FileMode
		src  string
	}
	var entries []entry
	for d, m := range dirs {
		entries = append(entries, entry{name: d, dir: true, mode: m})
	}
	for _, f := range files {
		entries = append(entries, entry{name: f.dest, mode: f.mode, src: f.src})
	}
	// A parent's name is a prefix of its children's, so it sorts first.
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	epoch := time.Unix(0, 0)
	tw := tar.NewWriter(w)
	for _, e := range entries {
		name := strings.TrimPrefix(e.name, "/")
		if e.dir {
			hdr := &tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: int64(e.mode), ModTime: epoch}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		if err := writeTarFile(tw, name, e.src, e.mode, epoch); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writeTarFile(tw *tar.Writer, name, src string, mode fs.FileMode, mtime time.Time) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(mode), Size: info.Size(), ModTime: mtime}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}
