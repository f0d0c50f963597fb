package gobuild

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"testing"
)

// A built program carries the -race setting of the test that built it.
func TestBuildMatchesRace(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "histgen")
	if err := Build(out, "splitbrain/cmd/histgen"); err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	race := false
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			race = true
		}
	}
	if race != Race {
		t.Errorf("built with -race %v, the test with -race %v", race, Race)
	}
	if Race && os.Getenv("GORACE") == "" {
		t.Error("GORACE unset after a race build: each program the test starts would sleep a second at its exit")
	}
}

// A package that does not exist is an error that names it.
func TestBuildFails(t *testing.T) {
	t.Parallel()
	err := Build(filepath.Join(t.TempDir(), "x"), "splitbrain/cmd/no-such-program")
	if err == nil {
		t.Fatal("built a program that does not exist")
	}
	t.Log(err)
}
