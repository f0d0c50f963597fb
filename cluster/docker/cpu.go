package docker

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/container"

	"splitbrain/cluster"
	"splitbrain/fault"
)

var _ cluster.CPULimiter = (*Container)(nil)

// cpuPeriod is the CFS period of a container's CPU limit, in µs.
const cpuPeriod = 100_000

// updateCPU sets a container's CPU quota, in µs of every cpuPeriod; -1
// lifts it.
func (e *Engine) updateCPU(ctx context.Context, id string, quota int64) error {
	_, err := e.api.ContainerUpdate(ctx, id, container.UpdateConfig{Resources: container.Resources{CPUPeriod: cpuPeriod, CPUQuota: quota}})
	if err != nil {
		return fmt.Errorf("docker: updating the container's CPU quota: %w", err)
	}
	return nil
}

// CPULimitAvailable implements cluster.CPULimiter: the engine sets a
// container's CPU quota itself.
func (n *Container) CPULimitAvailable() error { return n.Refuse(fault.CPU) }

// LimitCPU implements cluster.CPULimiter: the container's CPU quota is
// share of one CPU until the undo lifts it.
func (n *Container) LimitCPU(ctx context.Context, share float64) (func(context.Context) error, error) {
	if err := n.CPULimitAvailable(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	id := n.id
	n.mu.Unlock()
	if err := n.cluster.eng.updateCPU(ctx, id, max(int64(share*cpuPeriod), 1000)); err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name(), err)
	}
	return func(ctx context.Context) error {
		n.mu.Lock()
		id := n.id // amnesia may have replaced the container: it runs unlimited
		n.mu.Unlock()
		if err := n.cluster.eng.updateCPU(ctx, id, -1); err != nil {
			return fmt.Errorf("node %s: %w", n.Name(), err)
		}
		return nil
	}, nil
}
