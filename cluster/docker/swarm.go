package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"time"

	"splitbrain/cluster"
)

// A job on a Docker swarm: N tasks of one image and one command line, a
// replicated job (`docker service create --mode replicated-job`), each
// task told its slot through the environment, all writing into one
// volume, which is copied out at the end. The swarm is the engine's own
// when it is a manager of one; else this engine becomes a one-node swarm
// on loopback for the job and leaves it again afterwards, with the
// networks Docker made for it. Everything the job makes carries the
// fanout label and its harness's identity, so that a later job removes
// what a dead one left (as Reap does for runs).

// SwarmSlot is a Swarm template that says a replicated job's task slot,
// from 0. {{.Task.Slot}} alone says the node's id for slot 0: swarmkit's
// template context falls back to the node id when a task's slot is 0,
// which it is for a global service's tasks and for a replicated job's
// first (checked on Docker 20.10: slots 0, 1, 2 for three tasks).
const SwarmSlot = `{{if eq .Task.Slot .Node.ID}}0{{else}}{{.Task.Slot}}{{end}}`

// labelFanout names a job on everything made for it: its service,
// volume, network and task containers, and the swarm made for it.
const labelFanout = "splitbrain.fanout"

// gwBridge is the network Docker makes on a node when it joins a swarm,
// which leaving does not remove.
const gwBridge = "docker_gwbridge"

// SwarmJob is a job of Tasks tasks on a swarm.
type SwarmJob struct {
	// Image is the tasks' image, this engine's own (BuildRunnerImage):
	// the tasks run on this node, where it is.
	Image string
	Args  []string
	// Env may use the swarm's templates (SwarmSlot).
	Env   []string
	Tasks int
	// Out is the host folder the store volume's content is copied into.
	Out string
	// Memory and Pids limit each task's container; 0 for none.
	Memory, Pids int64
	// Progress gets a line as each task starts and ends.
	Progress io.Writer
}

// SwarmResult is what a job left: each task's end and output, by slot.
type SwarmResult struct {
	// Name names the job's service, volume and network.
	Name  string
	Tasks []JobTask
	Logs  map[int][]byte
	// MadeSwarm: the engine was in no swarm; one was made and left.
	MadeSwarm bool
	Wall      time.Duration
}

// RunSwarmJob runs job on this engine's swarm, or on a one-node swarm made
// for it, waits until every task has ended (or ctx ends: the tasks are
// stopped, as Ctrl-C stops a suite, and what they wrote is copied all the
// same), copies the store volume into job.Out, and removes everything it
// made: the service, its containers, its network and volume, and the
// swarm with the networks Docker made for it if it made the swarm. The
// error says what went wrong, with what could not be removed.
func (e *Engine) RunSwarmJob(ctx context.Context, job SwarmJob) (res SwarmResult, err error) {
	if job.Tasks < 1 {
		return res, fmt.Errorf("docker: a job of %d tasks", job.Tasks)
	}
	progress := job.Progress
	if progress == nil {
		progress = io.Discard
	}
	self, err := currentOwner()
	if err != nil {
		return res, err
	}
	res.Name = "splitbrain-fanout-" + cluster.RandomHex(4)
	labels := map[string]string{labelApp: "1", labelFanout: res.Name}
	maps.Copy(labels, self.labels())
	if gone, err := e.reapJobs(ctx, self); err != nil {
		return res, fmt.Errorf("docker: removing what dead jobs left: %w", err)
	} else if len(gone) > 0 {
		fmt.Fprintf(progress, "removed what jobs of dead harnesses left: %v\n", gone)
	}
	st, err := e.swarmState(ctx)
	if err != nil {
		return res, err
	}
	hadGWBridge, err := e.networkNamed(ctx, gwBridge)
	if err != nil {
		return res, err
	}
	switch {
	case st.Active && !st.Manager:
		return res, errors.New("docker: this engine is a worker of a swarm; a job is created on a manager: run it there")
	case st.Active:
		if o, ok := ownerFromLabels(st.Labels); ok && st.Labels[labelFanout] != "" && o.liveness(self) == ownerDead {
			// A swarm an earlier job made, whose harness died before
			// leaving it: this one leaves it.
			res.MadeSwarm, hadGWBridge = true, st.Labels[labelFanout+".gwbridge"] == "1"
		}
		fmt.Fprintf(progress, "swarm: this engine's (node %s)\n", st.NodeID)
	default:
		sl := map[string]string{labelFanout: res.Name, labelFanout + ".gwbridge": fmt.Sprint(map[bool]int{false: 0, true: 1}[hadGWBridge])}
		maps.Copy(sl, self.labels())
		if err := e.initSwarm(ctx, sl); err != nil {
			return res, err
		}
		res.MadeSwarm = true
		if st, err = e.swarmState(ctx); err != nil {
			return res, errors.Join(err, e.leaveSwarmMade(context.WithoutCancel(ctx), hadGWBridge))
		}
		fmt.Fprintf(progress, "swarm: made one of this engine alone, on 127.0.0.1 (node %s); left again at the end\n", st.NodeID)
	}
	defer func() {
		// Whatever happened, and after Ctrl-C too: a context of its own.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		err = errors.Join(err, e.removeJob(cctx, res.Name))
		if res.MadeSwarm {
			err = errors.Join(err, e.leaveSwarmMade(cctx, hadGWBridge))
		}
	}()
	netID, err := e.createSwarmNetwork(ctx, res.Name, labels)
	if err != nil {
		return res, err
	}
	if err := e.createVolume(ctx, res.Name, labels); err != nil {
		return res, err
	}
	started := time.Now()
	svc, err := e.createJob(ctx, jobService{
		Name: res.Name, Image: job.Image, Network: netID, Volume: res.Name, Node: st.NodeID,
		Args: job.Args, Env: job.Env, Labels: labels, Tasks: job.Tasks, Memory: job.Memory, Pids: job.Pids,
	})
	if err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "service %s: %d tasks of %s\n", res.Name, job.Tasks, job.Image)
	res.Tasks, err = e.waitJob(ctx, svc, job.Tasks, progress)
	res.Wall = time.Since(started)
	// Stopped by ctx: the tasks are stopped first (their suites stop
	// their plays, which heal, clean up and report), so that what they
	// wrote is in the volume when it is copied.
	cctx := context.WithoutCancel(ctx)
	if ctx.Err() != nil {
		if tasks, terr := e.jobTasks(cctx, svc); terr == nil {
			res.Tasks = tasks
		}
		err = errors.Join(err, e.endService(cctx, svc))
	}
	res.Logs = map[int][]byte{}
	for _, t := range res.Tasks {
		if t.Container != "" {
			if b, lerr := e.containerLogs(cctx, t.Container, "all", time.Time{}); lerr == nil {
				res.Logs[t.Slot] = b
			}
		}
	}
	return res, errors.Join(err, e.copyVolume(cctx, job.Image, res.Name, job.Out, labels))
}

// waitJob waits until n tasks of the service have ended, printing each
// task's states as they change; it returns the tasks by slot.
func (e *Engine) waitJob(ctx context.Context, svc string, n int, progress io.Writer) ([]JobTask, error) {
	last := map[string]string{}
	for {
		tasks, err := e.jobTasks(ctx, svc)
		if err != nil {
			return nil, err
		}
		sort.Slice(tasks, func(i, j int) bool { return tasks[i].Slot < tasks[j].Slot })
		done := 0
		for _, t := range tasks {
			key := fmt.Sprint(t.Slot, t.Container)
			if last[key] != t.State {
				last[key] = t.State
				msg := ""
				if t.Done() {
					msg = fmt.Sprintf(", exit %d", t.ExitCode)
				}
				if t.Err != "" {
					msg += ": " + t.Err
				}
				fmt.Fprintf(progress, "task %d: %s%s\n", t.Slot, t.State, msg)
			}
			if t.Done() {
				done++
			}
		}
		if done >= n {
			return tasks, nil
		}
		select {
		case <-ctx.Done():
			return tasks, fmt.Errorf("docker: %d of %d tasks ended before the job was stopped: %w", done, n, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// removeJob removes a job's service (and its task containers), network
// and volume, and says what is still there.
func (e *Engine) removeJob(ctx context.Context, name string) error {
	var errs []error
	svcs, err := e.swarmServices(ctx, map[string]string{labelFanout: name})
	errs = append(errs, err)
	for _, s := range svcs {
		errs = append(errs, e.removeService(ctx, s.ID))
	}
	ctrs, err := e.listContainers(ctx, map[string]string{labelFanout: name})
	errs = append(errs, err)
	for _, c := range ctrs {
		errs = append(errs, e.removeContainer(ctx, c.ID))
	}
	nets, err := e.listNetworks(ctx, map[string]string{labelFanout: name})
	errs = append(errs, err)
	for _, n := range nets {
		errs = append(errs, e.removeNetwork(ctx, n.ID))
	}
	errs = append(errs, e.removeVolume(ctx, name))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// A swarm network lingers in the node's list for a moment after its
	// removal.
	deadline := time.Now().Add(20 * time.Second)
	for {
		left, err := e.jobLeftovers(ctx, name)
		if err != nil || len(left) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("docker: job %s: still there after its removal: %v", name, left)
		}
		for _, l := range left {
			switch l.Kind {
			case "service":
				_ = e.removeService(ctx, l.ID)
			case "container":
				_ = e.removeContainer(ctx, l.ID)
			case "network":
				_ = e.removeNetwork(ctx, l.ID)
			case "volume":
				_ = e.removeVolume(ctx, l.ID)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// leftover is an object of a job still in the engine.
type leftover struct{ Kind, ID, Name string }

func (l leftover) String() string { return l.Kind + " " + l.Name }

// jobLeftovers lists what the job named name still has in the engine:
// services, containers (its tasks' and its copier's), networks, volumes.
func (e *Engine) jobLeftovers(ctx context.Context, name string) ([]leftover, error) {
	sel := map[string]string{labelFanout: name}
	var out []leftover
	st, err := e.swarmState(ctx)
	if err != nil {
		return nil, err
	}
	if st.Active && st.Manager {
		svcs, err := e.swarmServices(ctx, sel)
		if err != nil {
			return nil, err
		}
		for _, s := range svcs {
			out = append(out, leftover{"service", s.ID, s.Name})
		}
	}
	for _, l := range []struct {
		kind string
		list func(context.Context, map[string]string) ([]objectInfo, error)
	}{{"container", e.listContainers}, {"network", e.listNetworks}, {"volume", e.listVolumes}} {
		objs, err := l.list(ctx, sel)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, leftover{l.kind, o.ID, o.Name})
		}
	}
	return out, nil
}

// JobLeftovers lists what the job named name (SwarmResult.Name) still has
// in the engine, as "kind name": nothing, once RunSwarmJob has returned.
func (e *Engine) JobLeftovers(ctx context.Context, name string) ([]string, error) {
	left, err := e.jobLeftovers(ctx, name)
	out := make([]string, 0, len(left))
	for _, l := range left {
		out = append(out, l.String())
	}
	return out, err
}

// leaveSwarmMade leaves a swarm made for a job, and removes the bridge
// Docker made for it if there was none before (leaving removes the
// ingress network, not that one).
func (e *Engine) leaveSwarmMade(ctx context.Context, hadGWBridge bool) error {
	if err := e.leaveSwarm(ctx); err != nil {
		return err
	}
	if hadGWBridge {
		return nil
	}
	nets, err := e.listNetworks(ctx, nil)
	if err != nil {
		return err
	}
	for _, n := range nets {
		if n.Name == gwBridge {
			return e.removeNetwork(ctx, n.ID)
		}
	}
	return nil
}

// networkNamed reports whether the engine has a network of that name.
func (e *Engine) networkNamed(ctx context.Context, name string) (bool, error) {
	nets, err := e.listNetworks(ctx, nil)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(nets, func(n objectInfo) bool { return n.Name == name }), nil
}

// reapJobs removes the jobs whose harness is gone: services, containers,
// networks and volumes labelled with a job whose owner is dead. It
// returns the jobs removed.
func (e *Engine) reapJobs(ctx context.Context, self owner) ([]string, error) {
	sel := map[string]string{labelFanout: ""}
	var all []objectInfo
	st, err := e.swarmState(ctx)
	if err != nil {
		return nil, err
	}
	lists := []func(context.Context, map[string]string) ([]objectInfo, error){e.listContainers, e.listVolumes, e.listNetworks}
	if st.Active && st.Manager {
		lists = append(lists, e.swarmServices)
	}
	for _, list := range lists {
		objs, err := list(ctx, sel)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	dead := map[string]bool{}
	for _, o := range all {
		ow, ok := ownerFromLabels(o.Labels)
		if ok && o.Labels[labelFanout] != "" && ow.liveness(self) == ownerDead {
			dead[o.Labels[labelFanout]] = true
		}
	}
	var gone []string
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(dead)) {
		if err := e.removeJob(ctx, name); err != nil {
			errs = append(errs, err)
			continue
		}
		gone = append(gone, name)
	}
	return gone, errors.Join(errs...)
}

// ReapJobs removes what jobs of dead harnesses left (their services,
// containers, networks and volumes), and leaves a swarm that such a job
// made when no job is left on it, with the bridge Docker made for it. It
// returns what it removed.
func (e *Engine) ReapJobs(ctx context.Context) ([]string, error) {
	self, err := currentOwner()
	if err != nil {
		return nil, err
	}
	gone, err := e.reapJobs(ctx, self)
	if err != nil {
		return gone, err
	}
	st, err := e.swarmState(ctx)
	if err != nil || !st.Active || !st.Manager || st.Labels[labelFanout] == "" {
		return gone, err
	}
	if o, ok := ownerFromLabels(st.Labels); !ok || o.liveness(self) != ownerDead {
		return gone, nil
	}
	if left, err := e.swarmServices(ctx, map[string]string{labelFanout: ""}); err != nil || len(left) > 0 {
		return gone, err
	}
	if err := e.leaveSwarmMade(ctx, st.Labels[labelFanout+".gwbridge"] == "1"); err != nil {
		return gone, err
	}
	return append(gone, "the swarm made for "+st.Labels[labelFanout]), nil
}

// SwarmCensus is what a job on a swarm may leave: whether the engine is in
// a swarm, and the networks Docker makes for one.
type SwarmCensus struct {
	Swarm             bool
	GWBridge, Ingress bool
}

// Census says whether the engine is in a swarm and has the networks
// Docker makes for one: what a job that made a swarm must leave as it
// found it.
func (e *Engine) Census(ctx context.Context) (SwarmCensus, error) {
	st, err := e.swarmState(ctx)
	if err != nil {
		return SwarmCensus{}, err
	}
	gw, err := e.networkNamed(ctx, gwBridge)
	if err != nil {
		return SwarmCensus{}, err
	}
	in, err := e.networkNamed(ctx, "ingress")
	return SwarmCensus{Swarm: st.Active, GWBridge: gw, Ingress: in}, err
}
