package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"splitbrain/cluster"
)

// A JVM spends about a third of a ZooKeeper member's start loading,
// parsing and verifying classes: 1.4 CPU-seconds for a three-member
// ensemble, 1.0 with a class-data sharing archive (BENCHMARKS.md), and a
// suite starts some 25 members per round. The archive is the JVM's own
// dynamic CDS: one member of a run with no archive yet dumps what it
// loaded when it exits (-XX:ArchiveClassesAtExit, about 0.3 CPU-seconds
// more), and every later member maps it (-XX:SharedArchiveFile).
//
// Only a whole archive may be used: a truncated one crashes the JVM. So
// the dump goes to a file of its own, kept only when the member exited
// of itself after SIGTERM (not killed midway) and a JVM then maps it
// with -Xshare:on, and it becomes the archive by a rename. Its name holds
// a digest of the java binary, the class path's jars and the JVM flags,
// so an upgrade of either makes a new one rather than a mismatch (which
// the JVM would reject anyway, running without). Any failure only costs
// speed: the members start without the archive, as before.
type classArchive struct {
	path  string // the archive, in the cache dir
	java  string
	flags []string // the kind's JVM options and class path

	mu     sync.Mutex
	ready  bool     // path holds a checked archive: map it
	claim  string   // this run makes it: the claim file it holds
	taken  bool     // a start of this run was told to dump
	dumper *process // and this is it, once started
	logf   func(string, ...any)
}

// classArchiveClaimAge is when a claim to make the archive is stale: its
// run crashed (a dump takes a second).
const classArchiveClaimAge = 10 * time.Minute

// classArchiveFlag and classArchiveDump are the JVM flags that map an
// archive and dump one at exit.
const (
	classArchiveFlag = "-XX:SharedArchiveFile="
	classArchiveDump = "-XX:ArchiveClassesAtExit="
)

// newClassArchive returns the archive of kind's JVM in cacheDir: ready
// when it exists, claimed by this run when nobody makes it, or nil when
// it cannot be named (what it depends on cannot be read).
func newClassArchive(cacheDir, java string, kind *cluster.Kind, logf func(string, ...any)) *classArchive {
	flags := jvmOptions(kind.Args(""))
	key, err := classArchiveKey(java, flags)
	if err != nil {
		logf("local: no class archive for %s: %v", kind.Name, err)
		return nil
	}
	a := &classArchive{
		path:  filepath.Join(cacheDir, kind.Name+"-"+key+".jsa"),
		java:  java,
		flags: flags,
		logf:  logf,
	}
	if info, err := os.Lstat(a.path); err == nil && info.Mode().IsRegular() {
		a.ready = true
		return a
	}
	claim := a.path + ".claim"
	if info, err := os.Lstat(claim); err == nil && time.Since(info.ModTime()) > classArchiveClaimAge {
		_ = os.Remove(claim)
	}
	f, err := os.OpenFile(claim, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return a // another run makes it; this one starts without
	}
	f.Close()
	a.claim = claim
	return a
}

// jvmOptions is what of a JVM's arguments comes before its main class:
// the flags and the class path.
func jvmOptions(args []string) []string {
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-cp" || args[i] == "-classpath":
			i++
		case !strings.HasPrefix(args[i], "-"):
			return args[:i]
		}
	}
	return args
}

// classArchiveKey digests what an archive is valid for: the java binary
// and every jar on the class path (by path, size and time) and the flags.
func classArchiveKey(java string, flags []string) (string, error) {
	h := sha256.New()
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		return "", err
	}
	files := []string{real}
	for i, f := range flags {
		if (f == "-cp" || f == "-classpath") && i+1 < len(flags) {
			files = append(files, strings.Split(flags[i+1], ":")...)
		}
	}
	for _, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", f, info.Size(), info.ModTime().UnixNano())
	}
	fmt.Fprintln(h, strings.Join(flags, " "))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// args returns the flags a member's start puts before the kind's own:
// map the archive when it is ready; dump one at exit for the first start
// of a run that claimed it.
func (a *classArchive) args() (flags []string, dumps bool) {
	if a == nil {
		return nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.ready:
		return []string{classArchiveFlag + a.path}, false
	case a.claim != "" && !a.taken:
		// Taken here, not when the process has started: an ensemble's
		// members start side by side, and two dumps to one file would
		// make a garbled archive.
		a.taken = true
		return []string{classArchiveDump + a.dumpPath()}, true
	}
	return nil, false
}

func (a *classArchive) dumpPath() string { return a.claim + ".dump" }

// started tells the archive which process dumps it.
func (a *classArchive) started(p *process) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dumper = p
}

// dumpedBy reports whether p is the process that dumps the archive.
func (a *classArchive) dumpedBy(p *process) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dumper == p
}

// finish, once the run's members have exited, keeps the dump as the
// archive if it is whole, and gives up the claim either way.
func (a *classArchive) finish(ctx context.Context) {
	if a == nil || a.claim == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	defer func() {
		_ = os.Remove(a.dumpPath())
		_ = os.Remove(a.claim)
		a.claim = ""
	}()
	if a.dumper == nil {
		return
	}
	if err := a.keep(ctx); err != nil {
		a.logf("local: no class archive made: %v", err)
	}
}

func (a *classArchive) keep(ctx context.Context) error {
	select {
	case <-a.dumper.done:
	default:
		return errors.New("the member that dumps it is still running")
	}
	// The JVM exits with 128+SIGTERM after its shutdown, dump included;
	// a kill (a fault, or a stop past its grace) may have cut it short.
	var exit *exec.ExitError
	if !errors.As(a.dumper.err, &exit) || exit.ExitCode() != 143 {
		return fmt.Errorf("the member that dumps it did not exit of itself after SIGTERM: %v", a.dumper.err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	check := exec.CommandContext(ctx, a.java, append(append([]string{"-Xshare:on", classArchiveFlag + a.dumpPath()}, a.flags...), "-version")...)
	if out, err := check.CombinedOutput(); err != nil {
		return fmt.Errorf("the dump does not map: %w\n%s", err, lastBytes(string(out), 1000))
	}
	return os.Rename(a.dumpPath(), a.path)
}
