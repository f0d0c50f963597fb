package docker

// The engine calls of swarm.go (services, tasks, the swarm itself), in the
// package's vocabulary, as engine.go has those of the cluster backend:
// these two files are the only ones that import the Docker client.

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/client"
)

// swarmState is this engine's place in a swarm.
type swarmState struct {
	// Active: the engine is a node of a swarm; Manager: one that can
	// create services.
	Active, Manager bool
	NodeID          string
	// Labels are the swarm's own (its spec's), readable on a manager.
	Labels map[string]string
}

func (e *Engine) swarmState(ctx context.Context) (swarmState, error) {
	info, err := e.api.Info(ctx)
	if err != nil {
		return swarmState{}, fmt.Errorf("docker: engine info: %w", err)
	}
	st := swarmState{
		Active:  info.Swarm.LocalNodeState == swarm.LocalNodeStateActive,
		Manager: info.Swarm.ControlAvailable,
		NodeID:  info.Swarm.NodeID,
	}
	switch info.Swarm.LocalNodeState {
	case swarm.LocalNodeStateInactive, swarm.LocalNodeStateActive:
	default:
		return st, fmt.Errorf("docker: this engine's swarm is %s (%s); fix it or leave it (docker swarm leave) first",
			info.Swarm.LocalNodeState, info.Swarm.Error)
	}
	if st.Active && st.Manager {
		sw, err := e.api.SwarmInspect(ctx)
		if err != nil {
			return st, fmt.Errorf("docker: inspecting the swarm: %w", err)
		}
		st.Labels = sw.Spec.Labels
	}
	return st, nil
}

// initSwarm makes this engine a one-node swarm that listens and
// advertises on loopback only, labelled.
func (e *Engine) initSwarm(ctx context.Context, labels map[string]string) error {
	req := swarm.InitRequest{
		ListenAddr:    "127.0.0.1:2377",
		AdvertiseAddr: "127.0.0.1",
		Spec:          swarm.Spec{Annotations: swarm.Annotations{Labels: labels}},
	}
	if _, err := e.api.SwarmInit(ctx, req); err != nil {
		return fmt.Errorf("docker: docker swarm init on 127.0.0.1: %w", err)
	}
	return nil
}

func (e *Engine) leaveSwarm(ctx context.Context) error {
	if err := e.api.SwarmLeave(ctx, true); err != nil {
		return fmt.Errorf("docker: leaving the swarm: %w", err)
	}
	return nil
}

// createSwarmNetwork creates an internal overlay network: its tasks get
// no route out and no leg on docker_gwbridge, and they talk to nothing
// on it (a play's traffic is on its container's loopback). A service
// cannot do without a network ("none" is refused), and the swarm's
// default would be the engine's bridge, a route out. Not a bridge of
// swarm scope: Docker 20.10 keeps a stale copy of one in the node's list
// after its removal, until the node leaves the swarm.
func (e *Engine) createSwarmNetwork(ctx context.Context, name string, labels map[string]string) (string, error) {
	resp, err := e.api.NetworkCreate(ctx, name, network.CreateOptions{Driver: "overlay", Internal: true, Labels: labels})
	if err != nil {
		return "", fmt.Errorf("docker: creating network %s: %w", name, err)
	}
	return resp.ID, nil
}

// jobService is what a replicated job is created with.
type jobService struct {
	Name, Image, Network, Volume, Node string
	Args, Env                          []string
	Labels                             map[string]string
	Tasks                              int
	Memory, Pids                       int64
}

// createJob creates a replicated job of s.Tasks tasks, all at once, none
// restarted, on node s.Node, as the runner's user with no capability.
func (e *Engine) createJob(ctx context.Context, s jobService) (string, error) {
	n := uint64(s.Tasks)
	spec := swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: s.Name, Labels: s.Labels},
		Mode:        swarm.ServiceMode{ReplicatedJob: &swarm.ReplicatedJob{MaxConcurrent: &n, TotalCompletions: &n}},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: &swarm.ContainerSpec{
				Image: s.Image, Args: s.Args, Env: s.Env, Labels: s.Labels,
				User:           fmt.Sprintf("%d:%d", RunnerUID, RunnerUID),
				CapabilityDrop: []string{"ALL"},
				Privileges:     &swarm.Privileges{NoNewPrivileges: true},
				// docker-init as pid 1: it reaps what a play's processes
				// leave orphaned, which the harness does not wait for.
				Init:            ptr(true),
				Mounts:          []mount.Mount{{Type: mount.TypeVolume, Source: s.Volume, Target: RunnerStore}},
				StopGracePeriod: ptr(stopGrace),
			},
			Resources: &swarm.ResourceRequirements{Limits: &swarm.Limit{MemoryBytes: s.Memory, Pids: s.Pids}},
			// A share played twice would be in the matrix twice: a task
			// that fails is reported, never run again.
			RestartPolicy: &swarm.RestartPolicy{Condition: swarm.RestartPolicyConditionNone},
			Placement:     &swarm.Placement{Constraints: []string{"node.id==" + s.Node}},
			Networks:      []swarm.NetworkAttachmentConfig{{Target: s.Network}},
		},
	}
	// The image is this engine's own, from no registry: asking one for
	// its digest could only fail.
	resp, err := e.api.ServiceCreate(ctx, spec, swarm.ServiceCreateOptions{QueryRegistry: false})
	if err != nil {
		return "", fmt.Errorf("docker: creating service %s: %w", s.Name, err)
	}
	return resp.ID, nil
}

// JobTask is one task of a job as the swarm last saw it.
type JobTask struct {
	// Slot is the task's slot, from 0: a replicated job's slots count
	// from 0 (the templates say the node's id for slot 0, see SwarmSlot).
	Slot int
	// State is the swarm's task state: new ... running, then complete,
	// failed, rejected, shutdown, orphaned or remove.
	State string
	// Err is the swarm's error for the task, if any.
	Err       string
	ExitCode  int
	Container string
}

// Done reports whether the task has ended, for good or not.
func (t JobTask) Done() bool {
	switch swarm.TaskState(t.State) {
	case swarm.TaskStateComplete, swarm.TaskStateFailed, swarm.TaskStateRejected, swarm.TaskStateShutdown,
		swarm.TaskStateOrphaned, swarm.TaskStateRemove:
		return true
	}
	return false
}

func (e *Engine) jobTasks(ctx context.Context, serviceID string) ([]JobTask, error) {
	list, err := e.api.TaskList(ctx, swarm.TaskListOptions{Filters: filters.NewArgs(filters.Arg("service", serviceID))})
	if err != nil {
		return nil, fmt.Errorf("docker: listing the tasks of %s: %w", serviceID, err)
	}
	out := make([]JobTask, 0, len(list))
	for _, t := range list {
		jt := JobTask{Slot: t.Slot, State: string(t.Status.State), Err: t.Status.Err}
		if cs := t.Status.ContainerStatus; cs != nil {
			jt.ExitCode, jt.Container = cs.ExitCode, cs.ContainerID
		}
		out = append(out, jt)
	}
	return out, nil
}

// swarmServices lists the services with the labels, by id.
func (e *Engine) swarmServices(ctx context.Context, labels map[string]string) ([]objectInfo, error) {
	list, err := e.api.ServiceList(ctx, swarm.ServiceListOptions{Filters: labelFilter(labels)})
	if err != nil {
		return nil, fmt.Errorf("docker: listing services: %w", err)
	}
	out := make([]objectInfo, 0, len(list))
	for _, s := range list {
		out = append(out, objectInfo{ID: s.ID, Name: s.Spec.Name, Labels: s.Spec.Labels})
	}
	return out, nil
}

// stopGrace is how long a task has to end after SIGTERM before it is
// killed: a suite stopped heals, cleans up and reports each play in
// flight (seconds each, on a loaded machine more).
const stopGrace = time.Minute

// removeService removes a service and its tasks' containers, stopping
// those still running first (SIGTERM, SIGKILL after stopGrace), and waits
// until they are gone. Docker 20.10 does neither for a job: a running
// task's container goes on after its service is removed, and a completed
// one's stays.
func (e *Engine) removeService(ctx context.Context, id string) error {
	if err := e.endService(ctx, id); err != nil {
		return err
	}
	f := serviceContainers(id)
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := e.api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		if err != nil {
			return fmt.Errorf("docker: listing the containers of service %s: %w", id, err)
		}
		if len(list) == 0 {
			return nil
		}
		var errs []error
		for _, c := range list {
			errs = append(errs, e.removeContainer(ctx, c.ID))
		}
		if err := errors.Join(errs...); err != nil && time.Now().After(deadline) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("docker: service %s still has %d containers after 30 s", id, len(list))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func serviceContainers(id string) filters.Args {
	return filters.NewArgs(filters.Arg("label", "com.docker.swarm.service.id="+id))
}

// endService removes a service, so that the swarm makes no more tasks of
// it, and stops the running containers of its tasks, all at once:
// SIGTERM, SIGKILL after stopGrace. The containers stay, with their
// output.
func (e *Engine) endService(ctx context.Context, id string) error {
	if err := e.api.ServiceRemove(ctx, id); err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("docker: removing service %s: %w", id, err)
	}
	running, err := e.api.ContainerList(ctx, container.ListOptions{Filters: serviceContainers(id)})
	if err != nil {
		return fmt.Errorf("docker: listing the containers of service %s: %w", id, err)
	}
	errs := make([]error, len(running))
	var wg sync.WaitGroup
	for i, c := range running {
		wg.Go(func() { errs[i] = e.stopContainer(ctx, c.ID, int(stopGrace/time.Second)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// copyVolume copies the content of volume into the host folder dest
// through a container of image that mounts it and is never started:
// the engine reads a stopped container's mounts, so this works whatever
// the host may read of the engine's own folders (or on a remote engine).
func (e *Engine) copyVolume(ctx context.Context, image, volume, dest string, labels map[string]string) (err error) {
	resp, err := e.api.ContainerCreate(ctx,
		&container.Config{Image: image, Labels: labels, User: fmt.Sprintf("%d:%d", RunnerUID, RunnerUID)},
		&container.HostConfig{NetworkMode: "none", CapDrop: []string{"ALL"},
			Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: volume, Target: RunnerStore, ReadOnly: true}}},
		nil, nil, "")
	if err != nil {
		return fmt.Errorf("docker: a container to copy volume %s out: %w", volume, err)
	}
	defer func() { err = errors.Join(err, e.removeContainer(context.WithoutCancel(ctx), resp.ID)) }()
	rc, _, err := e.api.CopyFromContainer(ctx, resp.ID, RunnerStore)
	if err != nil {
		return fmt.Errorf("docker: copying volume %s out: %w", volume, err)
	}
	defer rc.Close()
	if err := untar(rc, dest); err != nil {
		return fmt.Errorf("docker: copying volume %s out: %w", volume, err)
	}
	return nil
}

// untar writes a tar's folders and regular files into dest, owned by this
// user, their modes kept but for set-id bits; a symbolic link is made only
// when it is relative and points inside dest (a store's latest links),
// and a name that would leave dest is an error: the tar comes from a
// container, which may have been given anything to write.
func untar(r io.Reader, dest string) error {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		// Each name starts with the folder copied, "store".
		top, name, _ := strings.Cut(path.Clean(hdr.Name), "/")
		if top != path.Base(RunnerStore) {
			return fmt.Errorf("%q is not in %s", hdr.Name, RunnerStore)
		}
		if name == "" {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("%q leaves the folder", hdr.Name)
		}
		to := filepath.Join(dest, filepath.FromSlash(name))
		mode := os.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(to, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if err := errors.Join(err, f.Close()); err != nil {
				return err
			}
		case tar.TypeSymlink:
			target := path.Join(path.Dir(name), hdr.Linkname)
			if path.IsAbs(hdr.Linkname) || target == ".." || strings.HasPrefix(target, "../") {
				continue
			}
			if err := os.Symlink(hdr.Linkname, to); err != nil {
				return err
			}
		}
	}
}
