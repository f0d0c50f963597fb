package main_test

import (
	"os"
	"strings"
	"testing"

	"splitbrain/locks"
)

// Every command prints its usage, flags and examples for --help, -h and
// "help COMMAND", on stdout, and exits 0 without running anything.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command string
		want    []string
	}{
		{"run", []string{"Usage: splitbrain run SCENARIO", "--seed N", "--store DIR", "--backend NAME", "--json", "--lock KIND",
			"--clients N", "--time D", "--shrink", "--budget D", "Examples:", "kind: [redlock, redsync]", "255 if a play hit an internal error, else 1"}},
		{"suite", []string{"Usage: splitbrain suite", "--all", "--seed N", "--lock KIND", "--time D", "Examples:", "matrix.json",
			"expect any", "--runs N", "--parallel P", "n/a", "partial", "--plan", "--shard I/N", "--gate FILE", "--no-replay"}},
		{"matrix", []string{"Usage: splitbrain matrix DIR", "--out DIR", "run folders alone", "Example:"}},
		{"fanout", []string{"Usage: splitbrain fanout swarm|kubernetes|gather|compare|image", "--tasks N", "--store DIR", "--image REF",
			"--storage SIZE", "--storage-class NAME", "--gather", "Examples:", "docs/fanout.md"}},
		{"list", []string{"Usage: splitbrain list", "Example:"}},
		{"check", []string{"Usage: splitbrain check RUN_DIR", "--timeout D", "--json", "Examples:"}},
		{"shrink", []string{"Usage: splitbrain shrink RUN_DIR", "--budget D", "--replays K", "--confirm N", "--min-rate F", "--parallel P", "--backend NAME",
			"--json", "Examples:", "Exit codes:", "Ctrl-C"}},
		{"doctor", []string{"Usage: splitbrain doctor", "Example:"}},
		{"serve", []string{"Usage: splitbrain serve", "--store DIR", "--addr HOST:PORT", "Examples:"}},
	}
	// --lock names every lock kind a play can be given.
	for i := range tests[:2] {
		tests[i].want = append(tests[i].want, locks.Matrix()...)
	}
	e := newEnv(t)
	for _, tt := range tests {
		for _, args := range [][]string{{tt.command, "--help"}, {tt.command, "-h"}, {"help", tt.command}, {tt.command, "x.yaml", "--seed", "3", "-help"}} {
			if tt.command == "list" || tt.command == "doctor" || tt.command == "matrix" {
				if len(args) > 2 {
					continue // they take no arguments
				}
			}
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				e := &env{t: t, cache: e.cache, work: t.TempDir()}
				res := e.run(args...)
				if res.code != 0 {
					t.Errorf("exit code %d, want 0", res.code)
				}
				for _, w := range tt.want {
					if !strings.Contains(res.stdout, w) {
						t.Errorf("stdout lacks %q", w)
					}
				}
				if res.stderr != "" {
					t.Errorf("stderr %q, want nothing", res.stderr)
				}
				if entries, _ := os.ReadDir(e.work); len(entries) > 0 {
					t.Errorf("help left files in the working dir: %v", entries)
				}
			})
		}
	}
	if res := e.run("help"); res.code != 0 || !strings.Contains(res.stdout, "splitbrain help COMMAND") {
		t.Errorf("help: exit %d, stdout %q", res.code, res.stdout)
	}
}
