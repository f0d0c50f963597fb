package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"splitbrain/locks"
	"splitbrain/scenarios/spec"
)

// The rerun command is pasted into a shell: run through sh -c, it must
// give the harness exactly the arguments of the run, whatever the scenario
// path and store hold, and run nothing else.
func TestRerunCommandRoundTripsThroughSh(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "pwned")
	hostile := []string{
		filepath.Join(dir, "my scenarios", "clock jump.yaml"),
		filepath.Join(dir, "$(touch "+canary+")", "x.yaml"),
		filepath.Join(dir, "`touch "+canary+"`;touch "+canary+"; it's $HOME & *.yaml"),
		filepath.Join(dir, "new\nline", "tab\there.yaml"),
	}
	for _, path := range hostile {
		t.Run(path, func(t *testing.T) {
			sc := &spec.Scenario{Name: "clock-jump", File: path, Lock: spec.Lock{Kind: locks.Redsync.Name}}
			store := filepath.Join(dir, "runs $(touch "+canary+") 'q'")
			f := runFlags{store: store, backend: spec.BackendDocker}
			cmd := rerunCommand(sc, 42, f, true)
			want := []string{"run", path, "--seed", "42", "--lock", "redsync", "--store", store, "--backend", "docker"}
			got := shellArgs(t, cmd)
			if !slices.Equal(got, want) {
				t.Errorf("sh -c %q gave the arguments\n%q\nwant\n%q", cmd, got, want)
			}
			if _, err := os.Stat(canary); err == nil {
				t.Errorf("sh -c %q ran a command substitution", cmd)
			}
		})
	}
	// What needs no quoting is left as typed: the common command stays
	// readable.
	sc := &spec.Scenario{Name: "clock-jump", File: "builtin/clock-jump.yaml", Lock: spec.Lock{Kind: locks.Redlock.Name}}
	if got, want := rerunCommand(sc, 7, runFlags{store: "store"}, false), "splitbrain run clock-jump --seed 7"; got != want {
		t.Errorf("plain command %q, want %q", got, want)
	}
}

// shellArgs runs cmd with sh, where splitbrain is a function printing its
// arguments one per NUL, and returns them.
func shellArgs(t *testing.T, cmd string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `splitbrain() { for a in "$@"; do printf '%s\0' "$a"; done; }; `+cmd).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", cmd, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}
