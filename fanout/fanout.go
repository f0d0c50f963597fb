// Package fanout plays a suite on an engine people already operate
// instead of on this machine: N tasks of one runner image (the harness,
// the servers and the drivers the plays need, built here:
// docker.BuildRunnerImage), each given the same arguments and its index,
// each playing its share of the suite's plan (suite.Shard) on the local
// backend inside its container, into one store. A Job says what every
// engine runs; Swarm plays it on a Docker swarm and gathers the run
// folders, Kubernetes writes it as an Indexed Job, a GitHub Actions matrix
// (docs/fanout.md) gives each entry its --shard. Whatever the engine,
// Gather checks the run folders against the plan — every play once,
// nothing twice, nothing else — and assembles the matrix.
package fanout

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"splitbrain/cluster"
	"splitbrain/cluster/docker"
	"splitbrain/driver"
	"splitbrain/locks"
	"splitbrain/scenarios/fit"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

// Store is where a task's suite writes, in the store volume mounted at
// docker.RunnerStore: a folder the task makes, so that it is private
// (runstore.CheckStore) even where the volume's own root is group-writable
// (Kubernetes' fsGroup makes it so). Each share writes under it into a
// store of its own, Store/shard-I-of-N.
var Store = path.Join(docker.RunnerStore, "runs")

// Job is a suite fanned out: Tasks copies of one command line in one
// image, each told its index, each playing its share.
type Job struct {
	// Name names what an engine makes for the job.
	Name  string
	Image string
	Tasks int
	// Args are each task's command line after the image's entry point
	// (the harness): `suite ... --seed S --backend local --shard env
	// --store Store`; the engine gives each task its I/N in
	// suite.ShardEnv.
	Args []string
	// Gather is the command line that checks and assembles what the tasks
	// wrote, after the entry point, for an engine that gathers inside
	// (Kubernetes): `fanout gather Store ...` with the suite's arguments.
	Gather []string
	// Memory is each task's memory limit in bytes (0: none); Pids its
	// process limit.
	Memory, Pids int64
}

// Suite is what a Job is made from: the suite's arguments, the ones that
// decide its plan, and the plan they make.
type Suite struct {
	// Args are the suite's arguments besides --seed, --shard, --store and
	// --backend (stories or --all, --runs, --lock, --clients, --time,
	// --parallel), with scenario files named as the tasks see them
	// (RunnerPath).
	Args []string
	Seed int64
	Plan suite.Plan
	Runs int
}

// NewJob makes the job that plays s in tasks tasks of image.
func NewJob(s Suite, image string, tasks int) (Job, error) {
	plays := len(s.Plan.Plays(s.Seed, s.Runs, suite.Shard{}))
	switch {
	case tasks < 1:
		return Job{}, fmt.Errorf("--tasks %d: want 1 or more", tasks)
	case tasks > plays:
		return Job{}, fmt.Errorf("--tasks %d: the suite has %d plays; a task plays one at least: want at most %d", tasks, plays, plays)
	}
	seed := strconv.FormatInt(s.Seed, 10)
	common := append(append([]string(nil), s.Args...), "--seed", seed)
	return Job{
		Image:  image,
		Tasks:  tasks,
		Args:   append(append([]string{"suite"}, common...), "--backend", spec.BackendLocal, "--shard", "env", "--store", Store),
		Gather: append([]string{"fanout", "gather", Store}, common...),
		// A share plays up to --parallel plays at once, each some servers:
		// JVMs of 256 MiB heap for ZooKeeper.
		Memory: 8 << 30,
		Pids:   8192,
	}, nil
}

// RunnerPath is where the runner image holds a scenario file given by
// its path here; a built-in story's name (spec.Load's: no / and no .)
// stays as it is.
func RunnerPath(given string) (inImage string, file bool) {
	if !strings.ContainsAny(given, "/.") {
		return given, false
	}
	return path.Join(docker.RunnerScenarios, filepath.Base(given)), true
}

// Runner says what the runner image must hold for the plan: the server
// kinds its plays start (a lock's servers, Sentinel where a story has it)
// and Python where a play runs the redis-py driver. A lock driver of the
// user's own (lock.command) is a program of this machine, which the image
// cannot carry: an error.
func Runner(p suite.Plan, harness string, files []string) (docker.RunnerConfig, error) {
	cfg := docker.RunnerConfig{Harness: harness, Scenarios: files}
	add := func(k *cluster.Kind) {
		if !slices.Contains(cfg.Kinds, k) {
			cfg.Kinds = append(cfg.Kinds, k)
		}
	}
	var errs []error
	for _, c := range p.Cells {
		if c.NA != "" {
			continue
		}
		add(fit.ServerKind(c.Lock))
		if c.Scenario.Sentinel != nil {
			add(cluster.Sentinel)
		}
		if !locks.DriverKind(c.Lock) && len(c.Scenario.Lock.Command) == 0 {
			continue
		}
		rt, ok := driver.RuntimeOf(c.Lock)
		if !ok || len(c.Scenario.Lock.Command) > 0 {
			errs = append(errs, fmt.Errorf("%s against %s: the lock's driver is a program of this machine, which the runner image does not carry (it carries the built-in drivers: %s); leave the lock out (--lock)",
				c.Scenario.Name, c.Lock, strings.Join(driver.Builtins, ", ")))
			continue
		}
		if len(rt.PythonModules) > 0 {
			cfg.Python = driver.Python
			cfg.PythonModules = union(cfg.PythonModules, rt.PythonModules)
		}
		if rt.PHP {
			cfg.PHP = driver.PHP
		}
		if len(rt.Jars) > 0 {
			add(cluster.ZooKeeper) // its JVM
			cfg.Jars = union(cfg.Jars, rt.Jars)
		}
	}
	return cfg, errors.Join(errs...)
}

func union(a, b []string) []string {
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	return a
}

// Scripted reports whether a story is scripted: steps only, no random
// schedule, so that every play of it has the same verdict wherever it
// runs.
func Scripted(sc *spec.Scenario) bool {
	return !sc.Workload.Generated() && !slices.ContainsFunc(sc.Steps, func(st spec.Step) bool { return st.Kind == spec.StepRandom })
}
