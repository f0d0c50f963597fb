package cluster

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// BuildShim compiles the embedded clock shim into cacheDir, once per source
// version, and returns the path of the shared library. Concurrent callers
// are safe: each compiles to its own temporary name and renames atomically.
func BuildShim(ctx context.Context, cacheDir string) (string, error) {
	sum := sha256.Sum256(shimSource)
	lib := filepath.Join(cacheDir, "clockshim-"+hex.EncodeToString(sum[:8])+".so")
	if _, err := os.Stat(lib); err == nil {
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
	cmd := exec.CommandContext(ctx, cc, "-shared", "-fPIC", "-O2", "-Wall", "-o", out, src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("clock shim: %s failed: %w\n%s", cc, err, msg)
	}
	if err := os.Rename(out, lib); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	return lib, nil
}

// ClockFile is a node's clock offset, shared with the clock shim through a
// mapped 8-byte file: the shim maps the same file (bind-mounted into a
// container for the Docker backend), so a store here moves the node's wall
// clock at once. Stores are atomic, so the node never sees a torn offset.
type ClockFile struct {
	path string

	mu  sync.Mutex
	mem []byte // nil once closed
}

// ErrClockClosed is returned by Set after Close.
var ErrClockClosed = errors.New("clock offset file closed")

// NewClockFile creates (or truncates) the offset file at path, set to zero.
func NewClockFile(path string) (*ClockFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("clock offset file: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(8); err != nil {
		return nil, fmt.Errorf("clock offset file: %w", err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("clock offset file %s: mmap: %w", path, err)
	}
	return &ClockFile{path: path, mem: mem}, nil
}

// Path is the file the shim reads (the value of ClockEnv).
func (c *ClockFile) Path() string { return c.path }

func (c *ClockFile) word() *int64 { return (*int64)(unsafe.Pointer(&c.mem[0])) }

// Set moves the clock to real time + d.
func (c *ClockFile) Set(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return ErrClockClosed
	}
	atomic.StoreInt64(c.word(), int64(d))
	return nil
}

// Get is the current offset; zero once closed.
func (c *ClockFile) Get() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return 0
	}
	return time.Duration(atomic.LoadInt64(c.word()))
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
