package headless

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "chromium")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, chromium, path string
		want                 string
		err                  error
	}{
		{"on PATH", "", dir, fake, nil},
		{"CHROMIUM wins", fake, t.TempDir(), fake, nil},
		{"CHROMIUM missing", filepath.Join(dir, "nope"), dir, "", os.ErrNotExist},
		{"none at all", "", t.TempDir(), "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CHROMIUM", tt.chromium)
			t.Setenv("PATH", tt.path)
			got, err := Find()
			if got != tt.want || (tt.err == nil) != (err == nil) || tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("Find() = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}
