package docker

// This file and engine_swarm.go are the only ones that import the Docker
// client. Everything else in the package talks to the engine through
// Engine's unexported methods, in the package's own vocabulary, so a move
// to github.com/moby/moby/client changes these two files and nothing else.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

// errNoContainer means the container is gone (removed behind our back).
var errNoContainer = errors.New("no such container")

// ErrNoEngine means no Docker engine answered: none is running, DOCKER_HOST
// points elsewhere, or this user may not use its socket.
var ErrNoEngine = errors.New("no Docker engine reachable")

// Engine is a connection to a Docker engine, with the API version
// negotiated (Debian's engines are often older than the client).
type Engine struct {
	api *client.Client
}

// EngineInfo describes the engine for humans (splitbrain doctor, logs).
type EngineInfo struct {
	Host          string // where the client connected (DOCKER_HOST or the default socket)
	ServerVersion string // the engine's release, e.g. 20.10.24
	APIVersion    string // the API version negotiated for this connection
	ServerAPI     string // the newest API version the engine speaks
}

// Connect reaches the engine named by the environment (DOCKER_HOST, or the
// default socket) and negotiates the API version. It fails with an error
// wrapping ErrNoEngine when nothing answers.
func Connect(ctx context.Context) (*Engine, error) {
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	ping, err := api.Ping(ctx)
	if err != nil {
		host := api.DaemonHost()
		_ = api.Close()
		return nil, fmt.Errorf("%w at %s: %v", ErrNoEngine, host, err)
	}
	// Settle the API version now, before the client is shared: the
	// client negotiates it lazily on its first request, writing the
	// version under a lock that the other requests read it without (a
	// data race the race detector found when two clusters started side
	// by side as an engine's first requests; docker client v28.5.2).
	api.NegotiateAPIVersionPing(ping)
	return &Engine{api: api}, nil
}

// Close releases the connection.
func (e *Engine) Close() error { return e.api.Close() }

// Info asks the engine for its version.
func (e *Engine) Info(ctx context.Context) (EngineInfo, error) {
	v, err := e.api.ServerVersion(ctx)
	if err != nil {
		return EngineInfo{}, fmt.Errorf("docker: engine version: %w", err)
	}
	return EngineInfo{
		Host:          e.api.DaemonHost(),
		ServerVersion: v.Version,
		APIVersion:    e.api.ClientVersion(),
		ServerAPI:     v.APIVersion,
	}, nil
}

func labelFilter(labels map[string]string) filters.Args {
	f := filters.NewArgs()
	for k, v := range labels {
		if v == "" {
			f.Add("label", k)
		} else {
			f.Add("label", k+"="+v)
		}
	}
	return f
}

// Images.

type imageInfo struct {
	ID     string
	Tags   []string
	Labels map[string]string
}

// imageByRef returns the image a tag or id names; ok is false when there is
// none.
func (e *Engine) imageByRef(ctx context.Context, ref string) (info imageInfo, ok bool, err error) {
	resp, err := e.api.ImageInspect(ctx, ref)
	if client.IsErrNotFound(err) {
		return imageInfo{}, false, nil
	}
	if err != nil {
		return imageInfo{}, false, fmt.Errorf("docker: inspecting image %s: %w", ref, err)
	}
	var labels map[string]string
	if resp.Config != nil {
		labels = resp.Config.Labels
	}
	return imageInfo{ID: resp.ID, Tags: resp.RepoTags, Labels: labels}, true, nil
}

// importImage creates image tag from a rootfs tar with Dockerfile-style
// changes (ENTRYPOINT, ENV, LABEL) applied.
func (e *Engine) importImage(ctx context.Context, rootfs io.Reader, tag string, changes []string) error {
	rc, err := e.api.ImageImport(ctx, image.ImportSource{Source: rootfs, SourceName: "-"}, tag,
		image.ImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("docker: importing image %s: %w", tag, err)
	}
	defer rc.Close()
	// The engine reports failures inside the stream, after a 200 status.
	dec := json.NewDecoder(rc)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("docker: importing image %s: reading the engine's answer: %w", tag, err)
		}
		if msg.Error != "" || msg.ErrorDetail.Message != "" {
			return fmt.Errorf("docker: importing image %s: %s%s", tag, msg.Error, msg.ErrorDetail.Message)
		}
	}
}

func (e *Engine) listImages(ctx context.Context, labels map[string]string) ([]imageInfo, error) {
	list, err := e.api.ImageList(ctx, image.ListOptions{All: true, Filters: labelFilter(labels)})
	if err != nil {
		return nil, fmt.Errorf("docker: listing images: %w", err)
	}
	out := make([]imageInfo, 0, len(list))
	for _, im := range list {
		out = append(out, imageInfo{ID: im.ID, Tags: im.RepoTags, Labels: im.Labels})
	}
	return out, nil
}

func (e *Engine) removeImage(ctx context.Context, id string) error {
	_, err := e.api.ImageRemove(ctx, id, image.RemoveOptions{PruneChildren: true})
	if err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("docker: removing image %s: %w", id, err)
	}
	return nil
}

// Containers.

// containerSpec is everything a node's container is created with.
type containerSpec struct {
	Name       string
	Image      string
	Cmd        []string
	Env        []string
	Labels     map[string]string
	Network    string
	IP         string
	Binds      []bindMount // host folders, read-only
	DataTmpfs  string      // where a tmpfs goes (wiped at every stop), or ""
	DataVolume string      // a named volume mounted at DataPath, or ""
	// DataBind is a host folder mounted read-write at DataPath, or "":
	// the harness writes files the server needs there before each start
	// (ZooKeeper's myid, Sentinel's config, which Sentinel rewrites) and
	// wipes it itself.
	DataBind string
	DataPath string
	// User runs the server as uid:gid ("" as the image's root): the
	// harness's own, for a container writing to a DataBind, so that the
	// harness can rewrite and remove what the server wrote. It also gets
	// a tmpfs at /tmp (a JVM's scratch files).
	User string
}

type bindMount struct{ Source, Target string }

// Limits of every node's container, so that a node gone wrong (a runaway
// workload, a fork loop in a crafted config) takes down itself and not
// the machine the harness and the other nodes share.
const (
	// nodeMemory bounds a container's memory, swap included (no swap: a
	// swapping node would be a latency fault nobody asked for). The data
	// tmpfs (dataTmpfsSize) is charged to the container too, so this
	// leaves as much again for the server itself; a lock's keys and a
	// workload's resource take a few MiB.
	nodeMemory = 512 << 20
	// dataTmpfsSize is the data folder of a node without persistence.
	dataTmpfsSize = "256m"
	// nodePids bounds a container's processes and threads: redis-server
	// runs a handful of threads (main, bio jobs, I/O threads); 256 leaves
	// room for any server kind's worker pool, not for a fork bomb.
	nodePids = 256
)

type containerState struct {
	Running  bool
	Paused   bool
	Status   string
	ExitCode int
}

type objectInfo struct {
	ID     string
	Name   string
	Labels map[string]string
}

func (e *Engine) createContainer(ctx context.Context, s containerSpec) (string, error) {
	cfg := &container.Config{
		Image:      s.Image,
		Entrypoint: s.Cmd,
		Env:        s.Env,
		Labels:     s.Labels,
		User:       s.User,
	}
	host := &container.HostConfig{
		NetworkMode:    container.NetworkMode(s.Network),
		ReadonlyRootfs: true,
		// Redis needs no privilege; DAC_OVERRIDE lets the container's root
		// read the harness user's 0600 config and offset files.
		CapDrop:     []string{"ALL"},
		CapAdd:      []string{"DAC_OVERRIDE"},
		SecurityOpt: []string{"no-new-privileges"},
		Resources: container.Resources{
			Memory:     nodeMemory,
			MemorySwap: nodeMemory,
			PidsLimit:  ptr(int64(nodePids)),
		},
	}
	for _, b := range s.Binds {
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: b.Source, Target: b.Target, ReadOnly: true})
	}
	switch {
	case s.DataVolume != "":
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeVolume, Source: s.DataVolume, Target: s.DataPath})
	case s.DataBind != "":
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: s.DataBind, Target: s.DataPath})
	case s.DataTmpfs != "":
		host.Tmpfs = map[string]string{s.DataTmpfs: "rw,nosuid,nodev,noexec,size=" + dataTmpfsSize + ",mode=0700"}
	}
	if s.User != "" {
		if host.Tmpfs == nil {
			host.Tmpfs = map[string]string{}
		}
		host.Tmpfs["/tmp"] = "rw,nosuid,nodev,noexec,size=64m,mode=1777"
	}
	net := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		s.Network: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: s.IP}},
	}}
	resp, err := e.api.ContainerCreate(ctx, cfg, host, net, nil, s.Name)
	if err != nil {
		return "", fmt.Errorf("docker: creating container %s: %w", s.Name, err)
	}
	return resp.ID, nil
}

func ptr[T any](v T) *T { return &v }

// containerLimits are the memory (bytes, swap included) and pid limits the
// engine applies to a container.
type containerLimits struct {
	Memory, MemorySwap, Pids int64
}

func (e *Engine) containerLimits(ctx context.Context, id string) (containerLimits, error) {
	resp, err := e.api.ContainerInspect(ctx, id)
	if err != nil {
		return containerLimits{}, fmt.Errorf("docker: inspecting container: %w", err)
	}
	if resp.ContainerJSONBase == nil || resp.HostConfig == nil {
		return containerLimits{}, fmt.Errorf("docker: inspecting container %s: no host config in the answer", id)
	}
	r := resp.HostConfig.Resources
	l := containerLimits{Memory: r.Memory, MemorySwap: r.MemorySwap}
	if r.PidsLimit != nil {
		l.Pids = *r.PidsLimit
	}
	return l, nil
}

func (e *Engine) startContainer(ctx context.Context, id string) error {
	if err := e.api.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("docker: starting container: %w", err)
	}
	return nil
}

// stopContainer sends SIGTERM and lets the engine send SIGKILL after
// timeoutSec seconds.
func (e *Engine) stopContainer(ctx context.Context, id string, timeoutSec int) error {
	if err := e.api.ContainerStop(ctx, id, container.StopOptions{Timeout: &timeoutSec}); err != nil {
		return fmt.Errorf("docker: stopping container: %w", err)
	}
	return nil
}

// killContainer sends SIGKILL and waits until the container has stopped.
func (e *Engine) killContainer(ctx context.Context, id string) error {
	// Register the wait before the kill, so the exit cannot slip by; the
	// cancel ends the wait's request on every return.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waitCh, errCh := e.api.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	if err := e.api.ContainerKill(ctx, id, "KILL"); err != nil {
		if st, ierr := e.containerState(ctx, id); ierr == nil && !st.Running {
			return nil // it was not running: nothing to kill
		}
		return fmt.Errorf("docker: killing container: %w", err)
	}
	select {
	case <-waitCh:
		return nil
	case err := <-errCh:
		return fmt.Errorf("docker: waiting for the killed container: %w", err)
	}
}

func (e *Engine) pauseContainer(ctx context.Context, id string) error {
	if err := e.api.ContainerPause(ctx, id); err != nil {
		return fmt.Errorf("docker: pausing container: %w", err)
	}
	return nil
}

func (e *Engine) unpauseContainer(ctx context.Context, id string) error {
	if err := e.api.ContainerUnpause(ctx, id); err != nil {
		return fmt.Errorf("docker: unpausing container: %w", err)
	}
	return nil
}

func (e *Engine) removeContainer(ctx context.Context, id string) error {
	err := e.api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && strings.Contains(err.Error(), "already in progress") {
		// Two harnesses reaping the same leftovers at once: the other one
		// is removing it; it is ours to wait for, not to fail on.
		return e.waitGone(ctx, id)
	}
	if err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("docker: removing container %s: %w", id, err)
	}
	return nil
}

// waitGone waits until container id no longer exists.
func (e *Engine) waitGone(ctx context.Context, id string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := e.api.ContainerInspect(ctx, id)
		if client.IsErrNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: container %s is still being removed: %w", id, ctx.Err())
		case <-tick.C:
		}
	}
}

func (e *Engine) containerState(ctx context.Context, id string) (containerState, error) {
	resp, err := e.api.ContainerInspect(ctx, id)
	if client.IsErrNotFound(err) {
		return containerState{}, fmt.Errorf("docker: %w: %v", errNoContainer, err)
	}
	if err != nil {
		return containerState{}, fmt.Errorf("docker: inspecting container: %w", err)
	}
	if resp.ContainerJSONBase == nil || resp.State == nil {
		return containerState{}, fmt.Errorf("docker: inspecting container %s: no state in the answer", id)
	}
	s := resp.State
	return containerState{Running: s.Running, Paused: s.Paused, Status: string(s.Status), ExitCode: s.ExitCode}, nil
}

// containerLogs returns the container's stdout and stderr, interleaved as
// written; tail is how many lines from the end ("all" for everything), and
// a non-zero since leaves out what came before.
func (e *Engine) containerLogs(ctx context.Context, id, tail string, since time.Time) ([]byte, error) {
	opts := container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: tail}
	if !since.IsZero() {
		opts.Since = fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond())
	}
	rc, err := e.api.ContainerLogs(ctx, id, opts)
	if client.IsErrNotFound(err) {
		return nil, fmt.Errorf("docker: container logs: %w: %v", errNoContainer, err)
	}
	if err != nil {
		return nil, fmt.Errorf("docker: container logs: %w", err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	// Without a TTY the engine multiplexes both streams into one.
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return buf.Bytes(), fmt.Errorf("docker: container logs: %w", err)
	}
	return buf.Bytes(), nil
}

func (e *Engine) listContainers(ctx context.Context, labels map[string]string) ([]objectInfo, error) {
	list, err := e.api.ContainerList(ctx, container.ListOptions{All: true, Filters: labelFilter(labels)})
	if err != nil {
		return nil, fmt.Errorf("docker: listing containers: %w", err)
	}
	out := make([]objectInfo, 0, len(list))
	for _, c := range list {
		name := ""
		if len(c.Names) > 0 {
			name = c.Names[0]
		}
		out = append(out, objectInfo{ID: c.ID, Name: name, Labels: c.Labels})
	}
	return out, nil
}

// Networks.

type subnet struct{ Subnet, Gateway string }

// createNetwork creates a bridge network; with sn empty the engine picks a
// free subnet.
func (e *Engine) createNetwork(ctx context.Context, name string, internal bool, sn subnet, labels map[string]string) (string, error) {
	opts := network.CreateOptions{Driver: "bridge", Internal: internal, Labels: labels}
	if sn.Subnet != "" {
		opts.IPAM = &network.IPAM{Config: []network.IPAMConfig{{Subnet: sn.Subnet, Gateway: sn.Gateway}}}
	}
	resp, err := e.api.NetworkCreate(ctx, name, opts)
	if err != nil {
		return "", fmt.Errorf("docker: creating network %s: %w", name, err)
	}
	return resp.ID, nil
}

func (e *Engine) networkSubnet(ctx context.Context, id string) (subnet, error) {
	resp, err := e.api.NetworkInspect(ctx, id, network.InspectOptions{})
	if err != nil {
		return subnet{}, fmt.Errorf("docker: inspecting network: %w", err)
	}
	for _, c := range resp.IPAM.Config {
		if c.Subnet != "" && c.Gateway != "" {
			return subnet{Subnet: c.Subnet, Gateway: c.Gateway}, nil
		}
	}
	return subnet{}, fmt.Errorf("docker: network %s has no IPv4 subnet with a gateway", resp.Name)
}

func (e *Engine) connectNetwork(ctx context.Context, netID, ctrID, ip string) error {
	err := e.api.NetworkConnect(ctx, netID, ctrID, &network.EndpointSettings{
		IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: ip},
	})
	if err != nil {
		return fmt.Errorf("docker: connecting to the network: %w", err)
	}
	return nil
}

func (e *Engine) disconnectNetwork(ctx context.Context, netID, ctrID string) error {
	if err := e.api.NetworkDisconnect(ctx, netID, ctrID, true); err != nil {
		return fmt.Errorf("docker: disconnecting from the network: %w", err)
	}
	return nil
}

// StaleNetworkError is a network the engine will not remove because it
// counts an endpoint that no container holds (Docker 20.10's libnetwork,
// seen after a run was stopped while its containers were being removed).
// Nothing of ours uses it any more; only restarting the engine frees it.
type StaleNetworkError struct {
	ID, Name string
	Err      error
}

func (e *StaleNetworkError) Error() string {
	return fmt.Sprintf("docker: network %s (%s) keeps an endpoint no container holds, so the engine will not remove it (restarting the Docker engine frees it): %v", e.Name, e.ID, e.Err)
}

func (e *StaleNetworkError) Unwrap() error { return e.Err }

// removeNetwork removes network id, a network of the run's own. Refused
// with "has active endpoints" (seen under load right after the run's
// containers were force-removed: a container still being made when the run
// was stopped, or an endpoint the engine had not released yet), it removes
// whatever is still attached — nothing but the run's containers joins its
// network — and tries again, for up to 10 s.
func (e *Engine) removeNetwork(ctx context.Context, id string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := e.api.NetworkRemove(ctx, id)
		switch {
		case err == nil || client.IsErrNotFound(err):
			return nil
		case strings.Contains(err.Error(), "active endpoints") && !time.Now().Before(deadline):
			n, ierr := e.api.NetworkInspect(ctx, id, network.InspectOptions{})
			if ierr == nil && len(n.Containers) == 0 {
				return &StaleNetworkError{ID: id, Name: n.Name, Err: err}
			}
			return fmt.Errorf("docker: removing network %s: %w", id, err)
		case strings.Contains(err.Error(), "active endpoints") && ctx.Err() == nil:
			if n, ierr := e.api.NetworkInspect(ctx, id, network.InspectOptions{}); ierr == nil {
				for ctr := range n.Containers {
					_ = e.removeContainer(ctx, ctr)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		default:
			return fmt.Errorf("docker: removing network %s: %w", id, err)
		}
	}
}

func (e *Engine) listNetworks(ctx context.Context, labels map[string]string) ([]objectInfo, error) {
	list, err := e.api.NetworkList(ctx, network.ListOptions{Filters: labelFilter(labels)})
	if err != nil {
		return nil, fmt.Errorf("docker: listing networks: %w", err)
	}
	out := make([]objectInfo, 0, len(list))
	for _, n := range list {
		out = append(out, objectInfo{ID: n.ID, Name: n.Name, Labels: n.Labels})
	}
	return out, nil
}

// Volumes.

func (e *Engine) createVolume(ctx context.Context, name string, labels map[string]string) error {
	if _, err := e.api.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: labels}); err != nil {
		return fmt.Errorf("docker: creating volume %s: %w", name, err)
	}
	return nil
}

func (e *Engine) removeVolume(ctx context.Context, name string) error {
	if err := e.api.VolumeRemove(ctx, name, true); err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("docker: removing volume %s: %w", name, err)
	}
	return nil
}

func (e *Engine) listVolumes(ctx context.Context, labels map[string]string) ([]objectInfo, error) {
	resp, err := e.api.VolumeList(ctx, volume.ListOptions{Filters: labelFilter(labels)})
	if err != nil {
		return nil, fmt.Errorf("docker: listing volumes: %w", err)
	}
	out := make([]objectInfo, 0, len(resp.Volumes))
	for _, v := range resp.Volumes {
		out = append(out, objectInfo{ID: v.Name, Name: v.Name, Labels: v.Labels})
	}
	return out, nil
}
