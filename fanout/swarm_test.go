package fanout

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"splitbrain/cluster/docker"
	"splitbrain/internal/gobuild"
	"splitbrain/locks"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

// splitbrain runs the binary bin with args in dir, its cache in cache,
// killed (with what it started) after timeout.
func splitbrain(t *testing.T, bin, dir, cache string, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("splitbrain %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("splitbrain %s: exit %d\n%s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), out.String())
	return cmd.ProcessState.ExitCode(), out.String()
}

// A suite fanned out on a one-node swarm — the engine made a swarm on
// loopback for it, three tasks of a runner image built here, each
// playing its share into one volume — comes back as the same matrix as
// the suite played here: the same cells, each played on the same seeds,
// the same verdicts for this scripted story. Each share's run folders
// are its share of the plan, each task's output is kept beside them, and
// the engine is left as it was: no service, container, network or volume
// of the job, and no swarm where there was none (docker_gwbridge and
// ingress gone with it) — also when the test fails.
func TestSwarmMatchesLocal(t *testing.T) {
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if errors.Is(err, docker.ErrNoEngine) {
		t.Skipf("no Docker engine: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	before, err := eng.Census(ctx)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	bin := filepath.Join(work, "splitbrain")
	if err := gobuild.Build(bin, "splitbrain/cmd/splitbrain"); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(work, "cache")
	var job, image string
	t.Cleanup(func() {
		// The command removes what it made; after a failure or a kill, its
		// harness is dead and this removes what is left.
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if gone, err := eng.ReapJobs(cctx); err != nil || len(gone) > 0 {
			t.Errorf("cleanup: removed %v, %v", gone, err)
		}
		if job != "" {
			if left, err := eng.JobLeftovers(cctx, job); err != nil || len(left) > 0 {
				t.Errorf("left by job %s: %v, %v", job, left, err)
			}
		}
		if after, err := eng.Census(cctx); err != nil || after != before {
			t.Errorf("the engine was %+v and is now %+v (%v)", before, after, err)
		}
		// The runner image this test built, of a binary no one else has.
		if image != "" {
			ims, err := eng.Images(cctx)
			for _, im := range ims {
				if im.Tag == image {
					_, err = eng.RemoveImages(cctx, im.Hash)
				}
			}
			if err != nil {
				t.Errorf("removing the runner image %s: %v", image, err)
			}
		}
	})

	// One story, every lock: clock-jump breaks some locks and not others,
	// so the verdicts compared differ from cell to cell. A second story
	// (its control) doubled the plays, 62 CPU-seconds in all, and
	// compared nothing the first does not.
	stories := []string{"clock-jump"}
	const seed, tasks = "11", 3
	local, fanned := filepath.Join(work, "local"), filepath.Join(work, "fanned")
	if code, _ := splitbrain(t, bin, work, cache, 5*time.Minute, append(append([]string{"suite"}, stories...), "--seed", seed, "--store", local)...); code != 0 {
		t.Fatalf("the suite played here: exit %d", code)
	}
	// One play at a time per task: each task's load gate reads the whole
	// machine, yet lets up to one play per CPU through, so three tasks on
	// two cores beside the other test packages played six at once, and a
	// node of clock-jump-control answered past its 250 ms node timeout in
	// every try (c1 refused, a verdict the local suite did not see).
	code, out := splitbrain(t, bin, work, cache, 10*time.Minute,
		append(append([]string{"fanout", "swarm"}, stories...), "--seed", seed, "--tasks", "3", "--parallel", "1", "--store", fanned)...)
	if m := regexp.MustCompile(`service (splitbrain-fanout-[0-9a-f]+)`).FindStringSubmatch(out); m != nil {
		job = m[1]
	}
	if m := regexp.MustCompile(`runner image (\S+) \(built`).FindStringSubmatch(out); m != nil {
		image = m[1]
	}
	if code != 0 || job == "" {
		t.Fatalf("fanout swarm: exit %d, job %q", code, job)
	}
	for i := range tasks {
		if !strings.Contains(out, "task "+string(rune('0'+i))+": complete, exit 0") {
			t.Errorf("task %d did not complete", i)
		}
	}

	a, err := runstore.ReadMatrix(local)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runstore.ReadMatrix(fanned)
	if err != nil {
		t.Fatal(err)
	}
	var scs []*spec.Scenario
	for _, n := range stories {
		sc, err := spec.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	if diffs := Compare(a, b, ScriptedOf(scs)); len(diffs) > 0 {
		t.Errorf("the fanned-out matrix differs from the local one:\n%s", strings.Join(diffs, "\n"))
	}
	plays := 0
	for _, c := range b.Cells {
		plays += c.Runs
	}
	plan := suite.NewPlan(scs, locks.Matrix(), spec.BackendLocal)
	jobs := suite.Jobs(plan.Cells, 1)
	if plays != len(jobs) || plays < tasks {
		t.Errorf("%d plays gathered, want the plan's %d", plays, len(jobs))
	}
	// Each share's store holds its share's plays, and its task's output
	// is beside it.
	for i := range tasks {
		sh := suite.Shard{I: i, N: tasks}
		dir := sh.Dir(filepath.Join(fanned, "runs"))
		// A replay (a miss beside a stall, played again) is its play's
		// second folder: counted apart.
		dirs, err := suite.FindRuns(dir)
		runs, unread := suite.ReadRuns(dirs)
		firsts := 0
		for _, r := range runs {
			if r.Rec.Meta.ReplayOf == "" {
				firsts++
			}
		}
		if err != nil || unread != nil || firsts != len(sh.Share(jobs)) {
			t.Errorf("share %s: %d run folders of first plays (%v, %v), want %d", sh, firsts, err, unread, len(sh.Share(jobs)))
		}
		log, err := os.ReadFile(filepath.Join(fanned, filepath.Base(sh.Dir(""))+".log"))
		if err != nil || !strings.Contains(string(log), "share "+sh.String()) {
			t.Errorf("share %s: its task's output %q, %v", sh, log, err)
		}
	}
	// The tasks decided their starts through one gate on the node: its
	// file came back with the store, holding the last admission.
	if b, err := os.ReadFile(filepath.Join(fanned, filepath.Base(SwarmGate))); err != nil || len(strings.Fields(string(b))) != 5 || strings.HasPrefix(string(b), "0 ") {
		t.Errorf("the node's shared gate: %q, %v; want its state, an admission in it", b, err)
	}
}
