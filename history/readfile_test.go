package history_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"splitbrain/history"
)

// ReadFile refuses, at once, what it cannot read to an end or hold: a
// FIFO (which would wait for a writer), a device, a file past MaxFileSize
// (sparse here, so its size costs no disk).
func TestReadFileRefusesWhatItCannotHold(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.jsonl")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, history.MaxFileSize+1); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want error
	}{
		{fifo, history.ErrNotFile},
		{"/dev/zero", history.ErrNotFile},
		{dir, history.ErrNotFile},
		{huge, history.ErrTooLarge},
	} {
		events, err := history.ReadFile(tt.path)
		if !errors.Is(err, tt.want) || len(events) > 0 {
			t.Errorf("ReadFile(%s) = %d events, %v; want %v", tt.path, len(events), err, tt.want)
		}
	}
}
