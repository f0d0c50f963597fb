package fanout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	"splitbrain/cluster/docker"
	"splitbrain/suite"
)

// SwarmGate is the file through which the tasks of a job on a swarm
// decide when to start a play as one load gate (suite --gate): the job
// pins them to one node, where the store volume is one folder. Each
// task's own gate would read the same CPUs, see the same moment of room
// and start a play in it: 4 tasks on 2 cores ran at load 40 where the
// suite played here runs at 20, and missed 54 expectations to its 18.
var SwarmGate = path.Join(docker.RunnerStore, "loadgate")

// SwarmArgs are each task's arguments on a swarm: the job's, and the
// node's shared gate.
func SwarmArgs(j Job) []string {
	return append(slices.Clip(j.Args), "--gate", SwarmGate)
}

// SwarmEnv is what each task of a job on a swarm is given besides the
// job's arguments: its I/N in suite.ShardEnv, I its task slot.
func SwarmEnv(j Job) []string {
	return []string{suite.ShardEnv + "=" + docker.SwarmSlot + "/" + strconv.Itoa(j.Tasks)}
}

// SwarmPlayed is a job played on a swarm and gathered.
type SwarmPlayed struct {
	Gathered
	Swarm docker.SwarmResult
	// Failed are the tasks that did not end as a suite that played its
	// share does: exit 0, whatever its plays showed (a task, --shard env,
	// leaves that to the gather step), or 1 from an image made before.
	Failed []string
}

// Swarm plays job on the engine's swarm (or a one-node swarm made for it,
// left again afterwards: docker.RunSwarmJob), brings the store volume back
// into store, a folder here, with each task's output beside its share as
// shard-I-of-N.log, and gathers the run folders against the plan (Gather).
// Everything made on the engine is removed before it returns, on error
// and when ctx ends too.
func Swarm(ctx context.Context, eng *docker.Engine, job Job, s Suite, store, command string, progress io.Writer) (SwarmPlayed, error) {
	res, runErr := eng.RunSwarmJob(ctx, docker.SwarmJob{
		Image: job.Image, Args: SwarmArgs(job), Env: SwarmEnv(job), Tasks: job.Tasks, Out: store,
		Memory: job.Memory, Pids: job.Pids, Progress: progress,
	})
	out := SwarmPlayed{Swarm: res}
	var errs []error
	for _, t := range res.Tasks {
		share := suite.Shard{I: t.Slot, N: job.Tasks}
		if b, ok := res.Logs[t.Slot]; ok {
			errs = append(errs, os.WriteFile(filepath.Join(store, filepath.Base(share.Dir(""))+".log"), b, 0o644))
		}
		if t.State != "complete" && !(t.State == "failed" && t.ExitCode == 1) {
			why := t.Err
			if why == "" {
				why = fmt.Sprintf("exit %d", t.ExitCode)
			}
			out.Failed = append(out.Failed, fmt.Sprintf("share %s (task %d): %s, %s", share, t.Slot, t.State, why))
		}
	}
	if _, err := os.Stat(store); err != nil {
		// Nothing came back to gather.
		return out, errors.Join(append(errs, runErr)...)
	}
	g, err := Gather(store, s, command, res.Wall)
	out.Gathered = g
	return out, errors.Join(append(errs, runErr, err)...)
}
