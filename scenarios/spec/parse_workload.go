package spec

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// WorkloadSteps is the scripted workload: the steps drive the clients.
const WorkloadSteps = "steps"

// Workload is what the clients do: the scripted steps, or a generator
// (mutex, counter, bank, set) that drives every client for Duration while
// the steps, if any, inject faults.
type Workload struct {
	// Kind is "steps", "mutex", "counter", "bank" or "set".
	Kind string
	// Keys is the number of lock keys of a generated workload.
	Keys int
	// Duration is how long a generated workload runs.
	Duration time.Duration
	// Think is the time a client spends inside a critical section
	// between its read and its write (mutex: the whole hold), drawn from
	// the run's seed.
	Think Span
	// Backoff is how long a client waits after a refused acquire before
	// it tries again, drawn from the run's seed; nil leaves it to the
	// workload (2–10 ms).
	Backoff *Span
	// Fencing makes the storage reject writes with stale tokens.
	Fencing bool
	// FencingAuto (fencing: auto) fences the storage wherever the lock
	// played hands out tokens (PlayAgainst sets Fencing): a family's
	// resource as each lock would best protect it.
	FencingAuto bool
}

// Generated reports whether a generator drives the clients.
func (w Workload) Generated() bool { return w.Kind != WorkloadSteps }

// HasResource reports whether the workload uses the storage node.
func (w Workload) HasResource() bool {
	return w.Kind == "counter" || w.Kind == "bank" || w.Kind == "set"
}

const generatorKinds = "mutex, counter, bank or set"

func (p *parser) workload(s *workloadSpec, hasSteps bool) Workload {
	w := Workload{Kind: WorkloadSteps}
	if s.Kind.Kind != 0 {
		w.Kind = p.enum(&s.Kind, "workload.kind", WorkloadSteps, "steps", "mutex", "counter", "bank", "set")
	} else if !hasSteps {
		p.fail(nil, "workload.kind", "missing; a scenario without steps needs a generated workload: %s", generatorKinds)
		return w
	}
	only := func(n *yaml.Node, field string) bool {
		if n.Kind != 0 && !w.Generated() {
			p.fail(n, field, "only for a generated workload (workload.kind %s), not for steps", generatorKinds)
			return false
		}
		return true
	}
	w.Keys = 1
	if only(&s.Keys, "workload.keys") {
		w.Keys = p.count(&s.Keys, "workload.keys", 1, 1, 64)
	}
	if only(&s.Duration, "workload.duration") {
		w.Duration = p.duration(&s.Duration, "workload.duration", 10*time.Second, time.Millisecond)
	}
	w.Think = Span{Min: time.Millisecond, Max: 10 * time.Millisecond}
	if s.Think.Kind != 0 && only(&s.Think, "workload.think") {
		if sp, ok := p.span(&s.Think, "workload.think", false); ok {
			w.Think = sp
		}
	}
	if s.Backoff.Kind != 0 && only(&s.Backoff, "workload.backoff") {
		if sp, ok := p.span(&s.Backoff, "workload.backoff", false); ok {
			w.Backoff = &sp
		}
	}
	if s.Fencing.Kind != 0 && only(&s.Fencing, "workload.fencing") {
		switch strings.ToLower(s.Fencing.Value) {
		case "on", "true":
			w.Fencing = true
		case "auto":
			w.FencingAuto = true
		case "off", "false":
		default:
			p.fail(&s.Fencing, "workload.fencing", "%q is not valid; want on, off or auto (on wherever the lock hands out tokens)", s.Fencing.Value)
		}
		if (w.Fencing || w.FencingAuto) && !w.HasResource() {
			p.fail(&s.Fencing, "workload.fencing", "fencing guards the storage, which the %s workload does not write; use counter, bank or set", w.Kind)
		}
	}
	return w
}

// Keys names the lock keys of a generated workload: the lock's key, or
// key-1..key-N for several.
func (sc *Scenario) Keys() []string {
	if sc.Workload.Keys <= 1 {
		return []string{sc.Lock.Key}
	}
	out := make([]string, sc.Workload.Keys)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", sc.Lock.Key, i+1)
	}
	return out
}
