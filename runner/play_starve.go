package runner

import (
	"fmt"

	"splitbrain/nemesis"
	"splitbrain/scenarios/spec"
)

// starve is a starve step's fault: its node's server, or its client's
// lock driver process, kept to the step's share of one CPU.
func (r *runner) starve(st spec.Step) (nemesis.Fault, error) {
	if st.Node != "" {
		node, err := r.node(st.Node)
		return nemesis.Starve{Node: node, Share: st.Share}, err
	}
	f := nemesis.Starve{Client: st.Client, Share: st.Share}
	if r.drivers != nil {
		r.drivers.mu.Lock()
		if p, ok := r.drivers.procs[st.Client]; ok {
			f.Proc = p
		}
		r.drivers.mu.Unlock()
	}
	if f.Proc == nil && r.drivers != nil {
		return nil, fmt.Errorf("starve %s: no driver process for it", st.Client)
	}
	return f, nil
}
