package docker

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// clockFile is a node's clock offset, shared with the clock shim inside the
// container through an 8-byte file mapped on both sides: the file is
// bind-mounted into the container, so both mappings hit the same page and a
// store here moves the node's clock at once. Stores are atomic, so the node
// never sees a torn offset.
//
// This is the design of cluster's (unexported) clockFile; it belongs there,
// exported, and this copy should go once it is.
type clockFile struct {
	path string
	mem  []byte
}

func newClockFile(path string) (*clockFile, error) {
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
	return &clockFile{path: path, mem: mem}, nil
}

func (c *clockFile) word() *int64 { return (*int64)(unsafe.Pointer(&c.mem[0])) }

func (c *clockFile) set(d time.Duration) { atomic.StoreInt64(c.word(), int64(d)) }

func (c *clockFile) get() time.Duration { return time.Duration(atomic.LoadInt64(c.word())) }

func (c *clockFile) close() error {
	if c.mem == nil {
		return nil
	}
	err := syscall.Munmap(c.mem)
	c.mem = nil
	return err
}
