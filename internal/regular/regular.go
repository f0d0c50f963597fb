// Package regular opens the files the harness reads from places a user
// names — run folders, scenario files, histories — refusing anything but a
// regular file: a FIFO named result.json would otherwise block its reader
// forever (check, matrix and shrink waited on one, deaf to SIGTERM), and a
// device such as /dev/zero would never end.
package regular

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotFile marks a path that is not a regular file.
var ErrNotFile = errors.New("not a regular file")

// NotFileError is a path that is not a regular file, and what it is.
type NotFileError struct {
	Path string
	// Kind is what it is: "named pipe", "device", "folder"…
	Kind string
}

func (e *NotFileError) Error() string {
	return fmt.Sprintf("%s: a %s, not a regular file", e.Path, e.Kind)
}

// Is makes errors.Is(err, ErrNotFile) hold.
func (e *NotFileError) Is(target error) bool { return target == ErrNotFile }

// Open opens path for reading without blocking (so that opening a FIFO
// returns at once) and returns it only if it is a regular file; the error
// then names what it is instead.
func Open(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotFileError{Path: path, Kind: Kind(fi.Mode())}
	}
	return f, fi, nil
}

// ReadFile reads the regular file at path whole, refusing one larger than
// limit bytes (limit ≤ 0: no limit).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if limit > 0 && fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d it may have", path, fi.Size(), limit)
	}
	r := io.Reader(f)
	if limit > 0 {
		// A file still growing is read one byte past the limit, to tell.
		r = io.LimitReader(f, limit+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if limit > 0 && int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than the %d bytes it may have", path, limit)
	}
	return b, nil
}

// Kind names what a file that is not a regular file is, for messages.
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "folder"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}
