package docker

import (
	"context"
	"strings"
)

// OwnObjects lists, by label, every container, volume and network in the
// engine that this process made, whatever run it belongs to, each as
// "kind name (run id)". A harness that has closed all its clusters has
// none; tests use it to check that a run, even an interrupted one, left
// nothing behind without having to know its run id.
func (e *Engine) OwnObjects(ctx context.Context) ([]string, error) {
	self, err := currentOwner()
	if err != nil {
		return nil, err
	}
	sel := self.labels()
	sel[labelApp] = "1"
	var out []string
	ctrs, err := e.listContainers(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range ctrs {
		out = append(out, "container "+strings.TrimPrefix(o.Name, "/")+" (run "+o.Labels[labelRun]+")")
	}
	vols, err := e.listVolumes(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range vols {
		out = append(out, "volume "+o.Name+" (run "+o.Labels[labelRun]+")")
	}
	nets, err := e.listNetworks(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range nets {
		out = append(out, "network "+o.Name+" (run "+o.Labels[labelRun]+")")
	}
	return out, nil
}
