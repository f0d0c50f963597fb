package driver

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"splitbrain/cluster"
)

// The Curator driver is Java: its one source file is compiled once per
// source and JDK into the cache dir (javac takes seconds of CPU), and a
// class-data sharing archive of what it loads is dumped beside the
// classes by a training run, which every driver JVM then maps: a play
// starts one JVM per client, and each spends much of its start loading
// and verifying classes. Both are made in a folder of their own and
// renamed into place, so plays started side by side never see half of
// either; any failure of the archive only costs speed.

// Debian's jars the Curator driver runs on: curator-recipes names the
// rest of Curator, Guava, slf4j's API and ZooKeeper's client in its
// manifest; slf4j-simple gives the ZooKeeper client's log lines a place
// (stderr, warnings only).
var curatorJars = []string{"/usr/share/java/curator-recipes.jar", "/usr/share/java/curator-framework.jar",
	"/usr/share/java/curator-client.jar", "/usr/share/java/zookeeper.jar", "/usr/share/java/zookeeper-jute.jar",
	"/usr/share/java/guava.jar", "/usr/share/java/slf4j-api.jar", "/usr/share/java/slf4j-simple.jar"}

// curatorJVM are the driver JVM's options: a small heap, the serial
// collector and the client compiler only, as the ZooKeeper servers run.
// The JVM's own warnings go to stderr (its default is stdout, the
// protocol's: a class archive made under another path, as the tests' shared
// caches are, printed "Unable to use shared archive" where ready belonged);
// -Xlog adds an output, so the default one on stdout is disabled first.
var curatorJVM = []string{"-Xlog:disable", "-Xlog:all=warning:stderr", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
	"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.logFile=System.err"}

var curatorOnce sync.Mutex

// prepareCurator compiles CuratorDriver.java (written into dir) into the
// cache dir unless it is there, trains its class archive, and returns the
// command that runs it.
func prepareCurator(dir string) ([]string, error) {
	cache, err := cluster.DefaultCacheDir()
	if err != nil {
		return nil, fmt.Errorf("driver curator: %w", err)
	}
	// On a fresh machine the first play to compile may come before
	// anything else made the cache.
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil, fmt.Errorf("driver curator: %w", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("driver curator needs java (apt-get install default-jre-headless; scripts/setup.sh installs it with zookeeper)")
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return nil, errors.New("driver curator needs javac (apt-get install default-jdk-headless)")
	}
	src, err := os.ReadFile(filepath.Join(dir, "CuratorDriver.java"))
	if err != nil {
		return nil, fmt.Errorf("driver curator: %w", err)
	}
	key, err := curatorKey(src, java, javac)
	if err != nil {
		return nil, fmt.Errorf("driver curator: %w", err)
	}
	classes := filepath.Join(cache, "curator-driver-"+key)
	// A jar, not the folder: a class-data archive takes no non-empty
	// folder on its class path.
	cp := filepath.Join(classes, curatorJar) + ":" + strings.Join(curatorJars, ":")
	curatorOnce.Lock()
	defer curatorOnce.Unlock()
	if _, err := os.Stat(filepath.Join(classes, curatorJar)); err != nil {
		if err := compileCurator(cache, classes, javac, filepath.Join(dir, "CuratorDriver.java")); err != nil {
			return nil, err
		}
	}
	archive := filepath.Join(classes, "classes.jsa")
	if _, err := os.Stat(archive); err != nil {
		trainCurator(java, cp, archive)
	}
	cmd := append([]string{java}, curatorJVM...)
	if _, err := os.Stat(archive); err == nil {
		cmd = append(cmd, "-XX:SharedArchiveFile="+archive)
	}
	return append(cmd, "-cp", cp, "CuratorDriver"), nil
}

// prepareCuratorListener is prepareCurator's command run with
// "listener": the lock kind curator-listener, a ConnectionStateListener
// whose user stops believing on SUSPENDED or LOST.
func prepareCuratorListener(dir string) ([]string, error) {
	cmd, err := prepareCurator(dir)
	if err != nil {
		return nil, err
	}
	return append(cmd, "listener"), nil
}

// curatorKey names a compilation: the source, the JDK and the jars.
func curatorKey(src []byte, java, javac string) (string, error) {
	h := sha256.New()
	h.Write(src)
	for _, p := range append([]string{java, javac}, curatorJars...) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", err
		}
		fi, err := os.Stat(real)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", real, fi.Size(), fi.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// curatorJar holds the driver's compiled classes.
const curatorJar = "curator-driver.jar"

// compileCurator compiles the driver and puts its classes in a jar, in a
// folder of its own renamed into place as classes.
func compileCurator(cache, classes, javac, src string) error {
	tmp, err := os.MkdirTemp(cache, "curator-driver-tmp-")
	if err != nil {
		return fmt.Errorf("driver curator: %w", err)
	}
	defer os.RemoveAll(tmp)
	out, err := exec.Command(javac, "-encoding", "UTF-8", "-nowarn", "-proc:none", "-d", filepath.Join(tmp, "classes"), "-cp", strings.Join(curatorJars, ":"), src).CombinedOutput()
	if err != nil {
		return fmt.Errorf("driver curator: javac: %w: %s", err, out)
	}
	if err := jarFolder(filepath.Join(tmp, "classes"), filepath.Join(tmp, curatorJar)); err != nil {
		return fmt.Errorf("driver curator: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(tmp, "classes")); err != nil {
		return fmt.Errorf("driver curator: %w", err)
	}
	if err := os.Rename(tmp, classes); err != nil {
		if _, serr := os.Stat(filepath.Join(classes, curatorJar)); serr == nil {
			return nil // another harness made it meanwhile
		}
		return fmt.Errorf("driver curator: %w", err)
	}
	return nil
}

// jarFolder writes the files under dir into a jar (a zip) at path.
func jarFolder(dir, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		w, err := zw.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	return errors.Join(err, zw.Close(), f.Close())
}

// trainCurator dumps the class archive of a driver JVM that loads what a
// play loads (--train connects to nothing), on the class path the drivers
// run with (an archive is only taken on the path it was made on). Any
// failure costs speed only: the drivers run without it.
func trainCurator(java, cp, archive string) {
	tmp := fmt.Sprintf("%s.%d.tmp", archive, os.Getpid())
	args := append(append([]string{}, curatorJVM...), "-XX:ArchiveClassesAtExit="+tmp, "-cp", cp, "CuratorDriver", "--train")
	if out, err := exec.Command(java, args...).CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		fmt.Fprintf(os.Stderr, "driver curator: no class archive (%v): %s\n", err, out)
		return
	}
	if err := os.Rename(tmp, archive); err != nil {
		_ = os.Remove(tmp)
	}
}
