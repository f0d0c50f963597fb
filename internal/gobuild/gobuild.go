// Package gobuild builds the project's programs for its tests (the
// splitbrain binary, the reference lock driver) with the build flags of
// the test binary that asks: a test built with -race gets programs built
// with -race.
//
// Why: go build without -race compiles every package again without the
// race instrumentation — all 500 of splitbrain's, about 110 CPU-seconds on
// a cold cache, twice as long as linking the race build whose packages
// the test run already compiled. The programs then also run under the
// race detector, as the code in the test binary does.
package gobuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Build compiles the Go package pkg (an import path or a directory) into
// the executable out.
//
// A program built with -race sleeps a second before it exits (GORACE's
// atexit_sleep_ms, for late race reports), which made each run of the
// binary in the command tests a second longer (TestCommandHelp's 29 runs
// took 51 s): Build sets
// GORACE=atexit_sleep_ms=0 in this process's environment, which the
// programs the test starts inherit, unless GORACE is already set.
func Build(out, pkg string) error {
	if _, set := os.LookupEnv("GORACE"); Race && !set {
		if err := os.Setenv("GORACE", "atexit_sleep_ms=0"); err != nil {
			return err
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"build", "-o", out}
	if Race {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool, append(args, pkg)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(cmd.Args[1:], " "), err, bytes.TrimSpace(b))
	}
	return nil
}
