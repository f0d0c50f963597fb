package cluster

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

//go:embed shim/clockshim.c
var shimSource []byte

// ClockEnv names the environment variable through which the shim finds its
// offset file.
const ClockEnv = "SPLITBRAIN_CLOCK_FILE"

// ErrNoCompiler means the clock shim cannot be built because no C compiler
// is installed.
var ErrNoCompiler = errors.New("no C compiler (cc) found: install gcc to build the clock shim")

// shimFlags are the compiler flags of the clock shim; they are part of the
// cache key, so a change of flags builds anew.
var shimFlags = []string{"-shared", "-fPIC", "-O2", "-Wall"}

// ShimPath is where BuildShim keeps the shim built from this source with
// these flags in cacheDir: named by their SHA-256, so that a change of
// either is a new file.
func ShimPath(cacheDir string) string {
	h := sha256.New()
	h.Write(shimSource)
	h.Write([]byte("\x00" + strings.Join(shimFlags, " ")))
	return filepath.Join(cacheDir, "clockshim-"+hex.EncodeToString(h.Sum(nil))[:32]+".so")
}

// BuildShim compiles the embedded clock shim into cacheDir, once per source
// version and flags, and returns the path of the shared library. Every
// process a run starts loads it, so a library found in the cache is used
// only when it is the one built here: a regular file owned by this user,
// writable by no one else, whose SHA-256 is the one recorded beside it
// when it was built. Anything else (planted, truncated, left by a crash
// between the two writes) is built again. Concurrent callers are safe:
// each compiles to its own temporary name and renames atomically.
func BuildShim(ctx context.Context, cacheDir string) (string, error) {
	lib := ShimPath(cacheDir)
	if verifyShim(lib) == nil {
		return lib, nil
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", ErrNoCompiler
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheDir, "build-")
	if err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "clockshim.c")
	if err := os.WriteFile(src, shimSource, 0o644); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	out := filepath.Join(tmp, "clockshim.so")
	cmd := exec.CommandContext(ctx, cc, append(append([]string(nil), shimFlags...), "-o", out, src)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("clock shim: %s failed: %w\n%s", cc, err, msg)
	}
	// Whatever the umask, nobody else may change what every node loads.
	if err := os.Chmod(out, 0o755); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	sum, err := fileSHA256(out)
	if err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	// The sum first: a library without its sum, or with another's, is
	// rebuilt by the next caller, never loaded.
	sumTmp := filepath.Join(tmp, "clockshim.so.sha256")
	if err := os.WriteFile(sumTmp, []byte(sum+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	if err := os.Rename(sumTmp, lib+".sha256"); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	if err := os.Rename(out, lib); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	if err := verifyShim(lib); err != nil {
		return "", fmt.Errorf("clock shim: just built, yet %w", err)
	}
	return lib, nil
}

// verifyShim says why the library at lib is not one BuildShim made, or nil.
func verifyShim(lib string) error {
	for _, p := range []string{lib, lib + ".sha256"} {
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("%s is not owned by this user", p)
		}
		if info.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%s is writable by other users", p)
		}
	}
	want, err := os.ReadFile(lib + ".sha256")
	if err != nil {
		return err
	}
	got, err := fileSHA256(lib)
	if err != nil {
		return err
	}
	if got != strings.TrimSpace(string(want)) {
		return fmt.Errorf("%s has SHA-256 %s, not the %s recorded when it was built", lib, got, strings.TrimSpace(string(want)))
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ClockFile is a node's clock offset, shared with the clock shim through a
// small mapped file (the shim's struct clock_state: a sequence number, the
// offset, a rate and the real time the rate counts from; and the delay of
// each fsync, a slow disk): the shim maps
// the same file (bind-mounted into a container for the Docker backend), so
// a store here moves the node's wall clock at once. Writes go under a
// sequence lock, so the node never reads a torn state.
type ClockFile struct {
	path string

	mu  sync.Mutex
	mem []byte // nil once closed
}

// clockWords are the int64 words of the shim's struct clock_state.
const (
	clockSeq = iota
	clockOff
	clockRate
	clockAnchor
	// clockFsyncDelay is not under the sequence lock: one word, read
	// alone, the delay each fsync waits before it starts (a slow disk).
	clockFsyncDelay
	clockWords
)

// ErrClockClosed is returned by Set after Close.
var ErrClockClosed = errors.New("clock offset file closed")

// NewClockFile creates (or truncates) the offset file at path, set to zero.
func NewClockFile(path string) (*ClockFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("clock offset file: %w", err)
	}
	defer f.Close()
	const size = clockWords * 8
	if err := f.Truncate(size); err != nil {
		return nil, fmt.Errorf("clock offset file: %w", err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("clock offset file %s: mmap: %w", path, err)
	}
	return &ClockFile{path: path, mem: mem}, nil
}

// Path is the file the shim reads (the value of ClockEnv).
func (c *ClockFile) Path() string { return c.path }

func (c *ClockFile) word(i int) *int64 { return (*int64)(unsafe.Pointer(&c.mem[i*8])) }

// clockState is what the file says, as Go reads it.
type clockState struct {
	off, ratePPB, anchor int64
}

// at is the offset the state gives at real time now (ns since the epoch),
// as the shim computes it.
func (s clockState) at(now int64) time.Duration {
	if s.ratePPB == 0 {
		return time.Duration(s.off)
	}
	// The shim's 128-bit product, rounded toward zero as C's division.
	drift := new(big.Int).Mul(big.NewInt(now-s.anchor), big.NewInt(s.ratePPB))
	drift.Quo(drift, big.NewInt(1e9))
	return time.Duration(s.off + drift.Int64())
}

// loadLocked reads the state; only this process writes it, under c.mu.
func (c *ClockFile) loadLocked() clockState {
	return clockState{
		off:     atomic.LoadInt64(c.word(clockOff)),
		ratePPB: atomic.LoadInt64(c.word(clockRate)),
		anchor:  atomic.LoadInt64(c.word(clockAnchor)),
	}
}

// storeLocked writes the state under the sequence lock the shim reads by.
func (c *ClockFile) storeLocked(s clockState) {
	atomic.AddInt64(c.word(clockSeq), 1) // odd: being written
	atomic.StoreInt64(c.word(clockOff), s.off)
	atomic.StoreInt64(c.word(clockRate), s.ratePPB)
	atomic.StoreInt64(c.word(clockAnchor), s.anchor)
	atomic.AddInt64(c.word(clockSeq), 1)
}

// Set moves the clock to real time + d now; a rate set before goes on
// from there.
func (c *ClockFile) Set(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return ErrClockClosed
	}
	s := c.loadLocked()
	s.off, s.anchor = int64(d), time.Now().UnixNano()
	c.storeLocked(s)
	return nil
}

// SetRate makes the clock run ppb parts per 10^9 faster than real time
// (slower when negative) from now on, from the offset it has now.
func (c *ClockFile) SetRate(ppb int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return ErrClockClosed
	}
	now := time.Now().UnixNano()
	s := c.loadLocked()
	c.storeLocked(clockState{off: int64(s.at(now)), ratePPB: ppb, anchor: now})
	return nil
}

// Get is the current offset; zero once closed.
func (c *ClockFile) Get() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return 0
	}
	return c.loadLocked().at(time.Now().UnixNano())
}

// Rate is the clock's rate error in parts per 10^9; zero once closed.
func (c *ClockFile) Rate() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return 0
	}
	return c.loadLocked().ratePPB
}

// SetFsyncDelay makes every fsync and fdatasync of the node wait d before
// it starts, as on a disk too busy to sync; zero: at once. An fsync
// already waiting checks again every few milliseconds, so lowering the
// delay (the heal) lets it go at once.
func (c *ClockFile) SetFsyncDelay(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return ErrClockClosed
	}
	atomic.StoreInt64(c.word(clockFsyncDelay), int64(d))
	return nil
}

// FsyncDelay is the delay SetFsyncDelay set; zero once closed.
func (c *ClockFile) FsyncDelay() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return 0
	}
	return time.Duration(atomic.LoadInt64(c.word(clockFsyncDelay)))
}

// Close unmaps the file; it is safe to call more than once.
func (c *ClockFile) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return nil
	}
	err := syscall.Munmap(c.mem)
	c.mem = nil
	return err
}
