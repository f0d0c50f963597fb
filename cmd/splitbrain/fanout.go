package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"splitbrain/cluster/docker"
	"splitbrain/fanout"
	"splitbrain/locks"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

const fanoutUsage = `Usage: splitbrain fanout swarm|kubernetes|gather|compare|image [SCENARIOS...|--all] [flags]

Plays a suite on an engine instead of on this machine: N tasks of one
runner image, built here from what is installed (the harness, the servers
and the drivers the plays need; no registry), each playing its share of
the plan (suite --shard) on the local backend in its container, as an
unprivileged user with every capability dropped; then every play's run
folder is checked against the plan — each play once, nothing twice — and
the matrix assembled as the suite played here would make it. The suite's
flags are suite's (see splitbrain help suite); the seed is drawn here if
not given and passed to every task.

  fanout swarm       on this engine's swarm, or a one-node swarm made on
                     127.0.0.1 for it and left again: a replicated job of
                     --tasks tasks, the task slot as the shard, one volume
                     for the store; the run folders come back into --store
                     with each task's output (shard-I-of-N.log), and every
                     service, container, network and volume made is removed
  fanout kubernetes  prints an Indexed Job of --tasks pods (the completion
                     index as the shard), its volume claim and a
                     NetworkPolicy that lets its pods talk to nothing; with
                     --gather, the pod that gathers afterwards
  fanout gather DIR  checks the run folders under DIR against the plan of
                     the same arguments and writes DIR/matrix.html (for a
                     GitHub Actions matrix's shards, or copied by hand)
  fanout compare DIR DIR
                     says how two matrices of the same suite differ (each
                     a folder of matrix.json: one gathered, one the suite
                     played here): their cells, each cell's seeds, and each
                     play's verdict in the scripted stories (a random
                     schedule's verdict may differ on the same seed); exit
                     0 when they agree, 1 when not
  fanout image       builds the runner image and prints its name

Flags:
  --tasks N             tasks (swarm, kubernetes; default 4), at most the plays
  --store DIR           swarm: where the run folders come back, a new or
                        empty folder (default: fanout)
  --image REF           kubernetes: the runner image as the cluster names it
                        (default: the name fanout image gives it here)
  --storage SIZE        kubernetes: the volume claim's size (default 10Gi)
  --storage-class NAME  kubernetes: a class whose volumes pods on many nodes
                        can write (ReadWriteMany); default: the cluster's
  --gather              kubernetes: the gather pod instead of the Job
  --json                swarm, gather: the matrix path and cells as JSON

Examples:
  splitbrain fanout swarm --seed 5 --runs 3 --tasks 4 --store landscape
  splitbrain fanout kubernetes --seed 5 --runs 100 --tasks 50 --image registry.example/splitbrain-runner:v1 > job.yaml
  splitbrain fanout kubernetes --seed 5 --runs 100 --tasks 50 --image registry.example/splitbrain-runner:v1 --gather > gather.yaml
  splitbrain fanout gather all --seed 5 --runs 3
  splitbrain fanout compare landscape store --seed 5 --runs 3

docs/fanout.md says how to run on a real cluster and in GitHub Actions.
Exit codes as suite's; 255 also when a play has no run folder or one has
two.
`

// fanoutFlags are fanout's own flags; the rest are suite's.
type fanoutFlags struct {
	tasks        int
	image        string
	storage      string
	storageClass string
	gather       bool
	storeGiven   bool
}

// cutFanoutFlags takes fanout's own flags out of args, leaving suite's.
func cutFanoutFlags(args []string) (fanoutFlags, []string, error) {
	f := fanoutFlags{tasks: 4, storage: "10Gi"}
	var rest []string
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") {
			rest = append(rest, args[i])
			continue
		}
		value := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", &usageError{fmt.Sprintf("--%s wants a value", name)}
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "tasks":
			var v string
			if v, err = value(); err == nil {
				if f.tasks, err = strconv.Atoi(v); err != nil || f.tasks < 1 || f.tasks > suite.MaxShards {
					err = &usageError{fmt.Sprintf("--tasks %q: want a whole number from 1 to %d", v, suite.MaxShards)}
				}
			}
		case "image":
			f.image, err = value()
		case "storage":
			f.storage, err = value()
		case "storage-class":
			f.storageClass, err = value()
		case "gather":
			f.gather = !hasVal || val == "true"
		case "plan", "shard":
			err = &usageError{fmt.Sprintf("fanout: --%s is fanout's to give each task; leave it out", name)}
		default:
			if name == "store" {
				f.storeGiven = true
			}
			rest = append(rest, args[i])
		}
		if err != nil {
			return f, nil, err
		}
	}
	return f, rest, nil
}

func cmdFanout(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return exitUsage, &usageError{"fanout wants swarm, kubernetes, gather, compare or image; see splitbrain help fanout"}
	}
	sub, args := args[0], args[1:]
	var gatherDir string
	var compareDirs [2]string
	switch sub {
	case "gather":
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			return exitUsage, &usageError{"fanout gather wants the folder holding the shares' run folders first, then the suite's arguments"}
		}
		gatherDir, args = args[0], args[1:]
	case "compare":
		if len(args) < 2 || strings.HasPrefix(args[0], "-") || strings.HasPrefix(args[1], "-") {
			return exitUsage, &usageError{"fanout compare wants two folders of matrix.json first (such as a gathered store and a suite's), then the suite's arguments"}
		}
		compareDirs, args = [2]string{args[0], args[1]}, args[2:]
	}
	ff, rest, err := cutFanoutFlags(args)
	if err != nil {
		return exitUsage, err
	}
	f, pos, seed, err := parseRunFlags("suite", rest)
	if err != nil {
		return exitUsage, err
	}
	switch {
	case f.all && len(pos) > 0:
		return exitUsage, &usageError{fmt.Sprintf("fanout takes scenario files or --all, not both; got --all and %q", strings.Join(pos, " "))}
	case f.runs < 1 || f.runs > 1000:
		return exitUsage, &usageError{fmt.Sprintf("--runs %d: want a whole number from 1 to 1000", f.runs)}
	case f.backend != "" && f.backend != "local":
		return exitUsage, &usageError{fmt.Sprintf("--backend %s: each task plays on the local backend inside its container; leave --backend out", f.backend)}
	case len(f.lockDrivers) > 0:
		// A task runs in the runner image, which holds the built-in
		// drivers only: the user's program is not there.
		return exitUsage, &usageError{"--lock-driver: a task plays inside the runner image, which holds the built-in drivers only; play a driver of yours with suite"}
	case ff.storeGiven && sub != "swarm":
		return exitUsage, &usageError{"--store is fanout swarm's: where the run folders come back"}
	}
	s, files, err := fanoutSuite(pos, f, seed, rest)
	if err != nil {
		return exitUsage, err
	}
	harness, err := os.Executable()
	if err != nil {
		return exitInternal, err
	}
	cfg, err := fanout.Runner(s.Plan, harness, files)
	if err != nil {
		return exitUsage, &usageError{err.Error()}
	}
	command := shellCommand(append([]string{"splitbrain", "fanout", sub}, args...)...)
	switch sub {
	case "gather":
		return fanoutGather(stdout, s, gatherDir, command, f)
	case "compare":
		return fanoutCompare(stdout, s, compareDirs, f)
	case "image":
		ctx, _, _, stop := stopContext(stdout, stderr)
		defer stop()
		eng, err := docker.Connect(ctx)
		if err != nil {
			return exitInternal, err
		}
		defer eng.Close()
		im, err := eng.BuildRunnerImage(ctx, cfg)
		if err != nil {
			return exitInternal, err
		}
		fmt.Fprintln(stdout, im.Tag)
		return exitValid, nil
	case "kubernetes":
		image := ff.image
		if image == "" {
			if image, err = docker.RunnerImageTag(context.Background(), cfg); err != nil {
				return exitInternal, err
			}
		}
		job, err := fanout.NewJob(s, image, ff.tasks)
		if err != nil {
			return exitUsage, &usageError{err.Error()}
		}
		o := fanout.KubeOptions{Storage: ff.storage, StorageClass: ff.storageClass, CPU: "1"}
		manifest := fanout.KubernetesJob
		if ff.gather {
			manifest = fanout.KubernetesGather
		}
		b, err := manifest(job, o)
		if err != nil {
			return exitInternal, err
		}
		fmt.Fprintf(stdout, "# %s\n# %s\n", command, "docs/fanout.md: load the image into the cluster first; apply this, wait for the Job, then the gather pod")
		_, err = stdout.Write(b)
		return exitValid, err
	case "swarm":
		if !parallelGiven(rest) {
			s.Args = append(s.Args, "--parallel", strconv.Itoa(swarmShare(suite.DefaultParallel(), ff.tasks)))
		}
		return fanoutSwarm(stdout, stderr, s, cfg, ff, f, command)
	}
	return exitUsage, &usageError{fmt.Sprintf("fanout %s: want swarm, kubernetes, gather, compare or image", sub)}
}

// fanoutSuite makes the suite's plan as each task will (the local
// backend) and the suite's arguments as the tasks see them: scenario
// files at their place in the runner image. It returns the files to put
// there.
func fanoutSuite(pos []string, f runFlags, seed int64, raw []string) (fanout.Suite, []string, error) {
	scs, err := suiteScenarios(context.Background(), pos, f, io.Discard)
	if err != nil {
		return fanout.Suite{}, nil, err
	}
	lks := locks.Matrix()
	if f.overrides.Lock != "" {
		lks = []string{f.overrides.Lock}
	}
	var args, files []string
	if f.all {
		args = append(args, "--all")
	}
	for _, p := range pos {
		in, file := fanout.RunnerPath(p)
		if file {
			files = append(files, p)
		}
		args = append(args, in)
	}
	args = append(args, "--runs", strconv.Itoa(f.runs))
	args = append(args, f.set...)
	if parallelGiven(raw) {
		args = append(args, "--parallel", strconv.Itoa(f.parallel))
	}
	return fanout.Suite{Args: args, Seed: seed, Runs: f.runs, Plan: suite.NewPlan(scs, lks, "local")}, files, nil
}

// parallelGiven reports whether the command line raw gives --parallel.
func parallelGiven(raw []string) bool {
	return slices.ContainsFunc(raw, func(a string) bool {
		return a == "--parallel" || a == "-parallel" || strings.HasPrefix(a, "--parallel=") || strings.HasPrefix(a, "-parallel=")
	})
}

// swarmShare is each task's --parallel on a swarm when none is given:
// its share of what the suite would play at once on this machine
// (perMachine, suite.DefaultParallel), at least one. The tasks are pinned
// to this node, and each task's load gate reads the whole machine and
// lets up to one play per CPU through whatever the load, so N tasks at
// the suite's default played up to N times as much at once: 4 tasks on 2
// cores ran at load 50, and 33 of 650 plays missed their expectation,
// 27 of them beside harness stalls of up to 2.8 s (a suite here: load
// 20, 6 of 1 806 missed by timing).
func swarmShare(perMachine, tasks int) int {
	return max(1, perMachine/max(tasks, 1))
}

func fanoutSwarm(stdout, stderr io.Writer, s fanout.Suite, cfg docker.RunnerConfig, ff fanoutFlags, f runFlags, command string) (int, error) {
	store := f.store
	if !ff.storeGiven {
		store = "fanout"
	}
	if entries, err := os.ReadDir(store); err == nil && len(entries) > 0 {
		return exitUsage, &usageError{fmt.Sprintf("--store %q holds files already; give a new or empty folder (each fanned-out suite gathers into its own)", store)}
	}
	if err := checkStore(store); err != nil {
		return exitUsage, err
	}
	ctx, stdout, stderr, stop := stopContext(stdout, stderr)
	defer stop()
	progress := stderr
	if !f.json {
		progress = stdout
	}
	eng, err := docker.Connect(ctx)
	if err != nil {
		return exitInternal, fmt.Errorf("fanout swarm: %w; start the Docker engine (or point DOCKER_HOST at one)", err)
	}
	defer eng.Close()
	started := time.Now()
	im, err := eng.BuildRunnerImage(ctx, cfg)
	if err != nil {
		return exitInternal, err
	}
	built := "cached"
	if im.Built {
		built = "built"
	}
	fmt.Fprintf(progress, "runner image %s (%s in %v)\n", im.Tag, built, time.Since(started).Round(100*time.Millisecond))
	job, err := fanout.NewJob(s, im.Tag, ff.tasks)
	if err != nil {
		return exitUsage, &usageError{err.Error()}
	}
	played, na := s.Plan.Played()
	fmt.Fprintf(progress, "splitbrain fanout swarm: %d stories × %d locks = %d cells (%d played, %d n/a), %d run(s) each: %d plays in %d tasks, seed %d\n",
		len(s.Plan.Scenarios), len(s.Plan.Locks), len(s.Plan.Cells), played, na, s.Runs, played*s.Runs, job.Tasks, s.Seed)
	res, err := fanout.Swarm(ctx, eng, job, s, store, command, progress)
	for _, fl := range res.Failed {
		fmt.Fprintf(stderr, "splitbrain: task: %s (its output: %s)\n", fl, store)
	}
	if res.Matrix.Cells == nil {
		return exitInternal, errors.Join(err, errors.New("fanout swarm: nothing came back to gather"))
	}
	code := fanoutPrint(stdout, res.Gathered, store, f)
	fmt.Fprintf(progress, "%d tasks on the swarm in %v, %v in all (image, swarm, gathering)\n", job.Tasks, res.Swarm.Wall.Round(time.Second), time.Since(started).Round(time.Second))
	switch {
	case ctx.Err() != nil:
		// Stopped: the tasks stopped their plays, which reported.
		code = exitUnknown
	case err != nil || len(res.Failed) > 0:
		code = exitInternal
	}
	return code, err
}

func fanoutGather(stdout io.Writer, s fanout.Suite, dir, command string, f runFlags) (int, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return exitUsage, &usageError{fmt.Sprintf("fanout gather: %q is not a folder; give the folder holding the shares' run folders", dir)}
	}
	if err := checkStore(dir); err != nil {
		return exitUsage, err
	}
	g, err := fanout.Gather(dir, s, command, 0)
	if err != nil {
		return exitInternal, err
	}
	return fanoutPrint(stdout, g, dir, f), nil
}

// compareJSON is fanout compare's --json output.
type compareJSON struct {
	Same bool `json:"same"`
	// Cells and ScriptedPlays count what the first matrix holds: its
	// cells, and the plays of its scripted stories' played cells.
	Cells         int      `json:"cells"`
	ScriptedPlays int      `json:"scripted_plays"`
	Differences   []string `json:"differences"`
}

// fanoutCompare compares the matrices in dirs as fanout.Compare does, the
// stories' being scripted read from the suite s; it exits 0 when they
// agree and 1 when they do not.
func fanoutCompare(stdout io.Writer, s fanout.Suite, dirs [2]string, f runFlags) (int, error) {
	var ms [2]runstore.Matrix
	for i, d := range dirs {
		m, err := runstore.ReadMatrix(d)
		if err != nil {
			return exitUsage, &usageError{fmt.Sprintf("fanout compare: %v (give a folder holding a suite's or a gather's matrix.json)", err)}
		}
		ms[i] = m
	}
	// By name: a story's cells say the same, once for each lock.
	scs := make([]*spec.Scenario, len(s.Plan.Cells))
	for i, c := range s.Plan.Cells {
		scs[i] = c.Scenario
	}
	scripted := fanout.ScriptedOf(scs)
	out := compareJSON{Cells: len(ms[0].Cells), Differences: fanout.Compare(ms[0], ms[1], scripted)}
	out.Same = len(out.Differences) == 0
	for _, c := range ms[0].Cells {
		if c.NA == "" && scripted[c.Scenario] {
			out.ScriptedPlays += c.Runs
		}
	}
	if f.json {
		writeJSON(stdout, out)
	} else {
		for _, d := range out.Differences {
			fmt.Fprintln(stdout, d)
		}
		differences := "differences"
		if len(out.Differences) == 1 {
			differences = "difference"
		}
		fmt.Fprintf(stdout, "%s and %s: %d against %d cells, %d %s (cells, seeds, and the verdicts of %d plays of the scripted stories, or the answers their stories state, compared)\n",
			dirs[0], dirs[1], len(ms[0].Cells), len(ms[1].Cells), len(out.Differences), differences, out.ScriptedPlays)
	}
	if !out.Same {
		return exitInvalid, nil
	}
	return exitValid, nil
}

// fanoutPrint prints a gathered matrix as suite prints its own, and how
// the run folders missed the plan; it returns the exit code suite's would
// be, 255 when the plan was not played whole.
func fanoutPrint(stdout io.Writer, g fanout.Gathered, store string, f runFlags) int {
	plays, met, flaky := suite.Result{Matrix: g.Matrix}.Totals()
	path := filepath.Join(store, runstore.MatrixFile)
	if f.json {
		writeJSON(stdout, suiteJSON{Matrix: path, Partial: g.Matrix.Partial, Cells: g.Matrix.Cells})
	} else {
		fmt.Fprintln(stdout)
		printMatrix(stdout, g.Matrix)
		for _, p := range g.Problems() {
			fmt.Fprintf(stdout, "MISSED THE PLAN: %s\n", p)
		}
		// The matrix says a cell missed; these say which play, why, and
		// how to play it again alone (a task's own output is in the store).
		for _, c := range g.Matrix.Cells {
			for _, p := range c.Plays {
				if !p.AsExpected {
					fmt.Fprintf(stdout, "NOT AS EXPECTED: %s against %s, seed %d: %s (%s) %s\n", c.Scenario, c.Lock, p.Seed, p.Verdict, p.Reason, filepath.Join(store, p.Dir))
				}
			}
		}
		printStalledMisses(stdout, g.Matrix)
		fmt.Fprintf(stdout, "%d of %d plays met their expectation (%d flaky cells; %d run folders, seed %d, %d run(s) per cell)\n",
			met, plays, flaky, g.Folders, g.Matrix.Seed, g.Matrix.Runs)
		fmt.Fprintf(stdout, "safety matrix: %s\n", path)
	}
	switch {
	case !g.Complete():
		return exitInternal
	case met < plays || flaky > 0:
		return exitInvalid
	}
	return exitValid
}
