package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"splitbrain/cluster"
)

// deadOwner is the identity of a process that has exited.
func deadOwner(t *testing.T) owner {
	t.Helper()
	self, err := currentOwner()
	mustDo(t, "owner", err)
	cmd := exec.Command("sleep", "60")
	mustDo(t, "start sleep", cmd.Start())
	start, err := cluster.ProcStartTime(cmd.Process.Pid)
	mustDo(t, "start time", err)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return owner{PID: cmd.Process.Pid, Start: start, Boot: self.Boot, Host: self.Host}
}

// zombieOwner is an owner that has exited but is not waited for yet: a
// zombie, until the test ends.
func zombieOwner(t *testing.T) owner {
	t.Helper()
	self, err := currentOwner()
	mustDo(t, "owner", err)
	cmd := exec.Command("true")
	mustDo(t, "start true", cmd.Start())
	t.Cleanup(func() { _ = cmd.Wait() })
	start, err := cluster.ProcStartTime(cmd.Process.Pid)
	mustDo(t, "start time", err)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err == nil && strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not become a zombie", cmd.Process.Pid)
		}
	}
	return owner{PID: cmd.Process.Pid, Start: start, Boot: self.Boot, Host: self.Host}
}

// fakeRun creates, for run id, what a harness would leave: a network, a
// data volume, a container that never started and one that is paused.
func fakeRun(t *testing.T, eng *Engine, id string, ownerLabels map[string]string, withContainers bool) {
	t.Helper()
	ctx := testCtx(t)
	labels := map[string]string{labelApp: "1", labelRun: id}
	for k, v := range ownerLabels {
		labels[k] = v
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = eng.removeRun(ctx, id)
	})
	name := "splitbrain-" + id
	_, err := eng.createNetwork(ctx, name, true, subnet{}, labels)
	mustDo(t, "network", err)
	if !withContainers {
		return
	}
	mustDo(t, "volume", eng.createVolume(ctx, name+"-data", labels))
	img, err := eng.BuildImage(ctx, ImageConfig{CacheDir: testCacheDir})
	mustDo(t, "image", err)
	for _, node := range []string{"n1", "n2"} {
		spec := containerSpec{
			Name: name + "-" + node, Image: img.Tag, Cmd: []string{imageBinary(cluster.Redis), "--save", ""},
			Labels: labels, Network: name, DataTmpfs: imageDataDir,
		}
		id, err := eng.createContainer(ctx, spec)
		mustDo(t, "container", err)
		if node == "n2" {
			mustDo(t, "start", eng.startContainer(ctx, id))
			mustDo(t, "pause", eng.pauseContainer(ctx, id))
		}
	}
}

func writeOwnerFile(t *testing.T, dir string, o owner) {
	t.Helper()
	mustDo(t, "mkdir", os.MkdirAll(dir, 0o700))
	b, err := json.Marshal(o)
	mustDo(t, "json", err)
	mustDo(t, "owner file", os.WriteFile(filepath.Join(dir, "owner.json"), b, 0o600))
}

func TestReapRemovesOnlyRunsOfDeadHarnesses(t *testing.T) {
	eng := engineAlone(t)
	ctx := testCtx(t)
	self, err := currentOwner()
	mustDo(t, "owner", err)
	dead := deadOwner(t)
	earlierBoot := self
	earlierBoot.Boot = "an-earlier-boot"
	elsewhere := dead
	elsewhere.Host = "another-host"

	suffix := "-" + cluster.RandomHex(3)
	runs := []struct {
		id     string
		labels map[string]string
		reaped bool
	}{
		{"dead" + suffix, dead.labels(), true},
		{"earlier-boot" + suffix, earlierBoot.labels(), true},
		{"alive" + suffix, self.labels(), false},
		{"elsewhere" + suffix, elsewhere.labels(), false},
		{"no-owner" + suffix, nil, false},
	}
	cacheDir := t.TempDir()
	for _, r := range runs {
		fakeRun(t, eng, r.id, r.labels, r.id == "dead"+suffix)
		if o, ok := ownerFromLabels(r.labels); ok {
			writeOwnerFile(t, filepath.Join(cacheDir, stateRoot, r.id), o)
		}
	}
	reaped, err := eng.Reap(ctx, cacheDir)
	mustDo(t, "reap", err)
	for _, r := range runs {
		left, err := eng.RunObjects(ctx, r.id)
		mustDo(t, "list", err)
		_, statErr := os.Stat(filepath.Join(cacheDir, stateRoot, r.id))
		mentioned := slices.ContainsFunc(reaped, func(s string) bool { return strings.Contains(s, r.id+" ") })
		if r.reaped {
			if len(left) > 0 || statErr == nil || !mentioned {
				t.Errorf("run %s of a dead harness: left %v, state dir err %v, reported %v", r.id, left, statErr, mentioned)
			}
		} else if len(left) == 0 || mentioned {
			t.Errorf("run %s must stay: left %v, reported %v", r.id, left, mentioned)
		}
	}
	if _, err := os.Stat(filepath.Join(cacheDir, stateRoot, "alive"+suffix)); err != nil {
		t.Errorf("state dir of the live run: %v, want it kept", err)
	}
}

// TestReapAfterHarnessKilled kills a harness (this test binary, run again as
// a helper) with SIGKILL while its cluster runs, then reaps.
func TestReapAfterHarnessKilled(t *testing.T) {
	eng := engineAlone(t)
	ctx := testCtx(t)
	runID := "killed-" + cluster.RandomHex(4)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHarness$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+testCacheDir, helperRunEnv+"="+runID, helperDirEnv+"="+t.TempDir())
	out, err := cmd.StdoutPipe()
	mustDo(t, "pipe", err)
	cmd.Stderr = os.Stderr
	mustDo(t, "start helper", cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "cluster ready" {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("helper harness exited before its cluster was ready")
		}
	case <-time.After(90 * time.Second):
		t.Fatal("helper harness: no cluster after 90s")
	}
	mustDo(t, "kill helper", cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	before, err := eng.RunObjects(ctx, runID)
	mustDo(t, "list", err)
	if len(before) != 3 {
		t.Fatalf("the killed harness left %v, want 2 containers and a network", before)
	}
	reaped, err := eng.Reap(ctx, testCacheDir)
	mustDo(t, "reap", err)
	if !slices.ContainsFunc(reaped, func(s string) bool { return strings.Contains(s, runID) }) {
		t.Errorf("reap reported %v, want run %s", reaped, runID)
	}
	if left, err := eng.RunObjects(ctx, runID); err != nil || len(left) > 0 {
		t.Errorf("after reap: %v, %v; want nothing", left, err)
	}
	if _, err := os.Stat(filepath.Join(testCacheDir, stateRoot, runID)); !os.IsNotExist(err) {
		t.Errorf("state dir of the killed run: %v, want it gone", err)
	}
}

const (
	helperEnv    = "SPLITBRAIN_DOCKER_TEST_HELPER_CACHE"
	helperRunEnv = "SPLITBRAIN_DOCKER_TEST_HELPER_RUN"
	helperDirEnv = "SPLITBRAIN_DOCKER_TEST_HELPER_DIR"
)

// TestHelperHarness is not a test: TestReapAfterHarnessKilled runs it in a
// child process that starts a cluster and waits to be killed.
func TestHelperHarness(t *testing.T) {
	cache := os.Getenv(helperEnv)
	if cache == "" {
		t.Skip("helper process of TestReapAfterHarnessKilled")
	}
	eng := engine(t)
	_, err := StartCluster(testCtx(t), eng, cluster.Config{
		Nodes: 2, Dir: os.Getenv(helperDirEnv), CacheDir: cache, RunID: os.Getenv(helperRunEnv),
	})
	mustDo(t, "start", err)
	os.Stdout.WriteString("\ncluster ready\n")
	time.Sleep(5 * time.Minute)
}

// A run whose only leftover the engine will not remove is reaped all the
// same; anything else that failed still fails the reaping.
func TestStaleOnly(t *testing.T) {
	stale := &StaleNetworkError{ID: "n", Name: "splitbrain-x", Err: errors.New("has active endpoints")}
	other := errors.New("removing container c: boom")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"stale alone", stale, true},
		{"joined with nils", errors.Join(nil, stale, nil), true},
		{"wrapped", fmt.Errorf("reaping: %w", stale), true},
		{"with another error", errors.Join(stale, other), false},
		{"another error", other, false},
	} {
		if got := staleOnly(tc.err) != nil; got != tc.want {
			t.Errorf("%s: staleOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
}
