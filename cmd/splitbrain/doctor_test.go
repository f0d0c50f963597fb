package main_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/cluster/docker"
)

// doctor runs `splitbrain doctor` with extra environment variables.
func (e *env) doctor(extra ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.command(ctx, "doctor")
	cmd.Env = append(cmd.Env, extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		e.t.Fatalf("splitbrain doctor: %v", err)
	}
	e.t.Logf("splitbrain doctor %v: exit %d\n%s%s", extra, cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l) {
			t.Errorf("output lacks %q", l)
		}
	}
}

func TestDoctorReportsBothBackends(t *testing.T) {
	// What the doctor must say about the engine, asked independently.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	eng, engErr := docker.Connect(ctx)
	cancel()

	res := newEnv(t).doctor()
	if res.code != 0 {
		t.Errorf("exit %d, want 0: redis-server and cc are installed here", res.code)
	}
	wantLines(t, res.stdout, "  ok        redis-server  ", "  ok        cc            clock shim built: ", "local backend: ready")
	if engErr != nil {
		wantLines(t, res.stdout, "  no        engine        no Docker engine reachable", "docker backend: not available")
		return
	}
	defer eng.Close()
	info, err := eng.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, res.stdout,
		"  ok        engine        Docker "+info.ServerVersion,
		"API "+info.APIVersion+" negotiated",
		"  ok        image         splitbrain-redis:",
		"docker backend: ready")
}

func TestDoctorNamesWhatIsMissing(t *testing.T) {
	// Bare: with the shared shim in its cache, cc would not be missed.
	res := newBareEnv(t).doctor("PATH=" + t.TempDir())
	if res.code != 1 {
		t.Errorf("exit %d, want 1: nothing the local backend needs is in PATH", res.code)
	}
	wantLines(t, res.stdout,
		"  MISSING   redis-server  not in PATH: apt-get install -y redis-server",
		"  MISSING   cc            no C compiler",
		"  optional  chromium      not found",
		"python3-redis ",
		"  no        image         cannot be built without redis-server and cc",
		"local backend: NOT ready",
		"docker backend: not available")
}

func TestDoctorWithoutEngine(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "no-engine.sock")
	res := newEnv(t).doctor("DOCKER_HOST=unix://" + sock)
	if res.code != 0 {
		t.Errorf("exit %d, want 0: the local backend does not need Docker", res.code)
	}
	wantLines(t, res.stdout,
		"  no        engine        no Docker engine reachable at unix://"+sock,
		"local backend: ready",
		"docker backend: not available")
}
