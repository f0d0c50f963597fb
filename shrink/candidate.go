package shrink

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"splitbrain/scenarios/spec"

	"go.yaml.in/yaml/v3"
)

// fault is one fault of a candidate: a fault of the original run, perhaps
// started earlier or made shorter.
type fault struct {
	// id is its place among the original run's faults, from 0: it names
	// the fault across candidates.
	id   int
	at   time.Duration // from the start of the workload
	step spec.Step
}

func (f fault) end() time.Duration { return f.at + f.step.For.Min }

// candidate is a scenario the search tries: the original's cluster and
// lock, with some of its clients, keys and faults and a workload as long.
type candidate struct {
	// clients are the original's clients kept, in order; the file names
	// them c1..cN in this order.
	clients  []string
	keys     int
	duration time.Duration
	faults   []fault // in the order they start
}

func (c *candidate) clone() *candidate {
	d := *c
	d.clients = slices.Clone(c.clients)
	d.faults = slices.Clone(c.faults)
	return &d
}

// without returns c without the faults whose ids are in drop.
func (c *candidate) without(drop map[int]bool) *candidate {
	d := c.clone()
	d.faults = slices.DeleteFunc(d.faults, func(f fault) bool { return drop[f.id] })
	return d
}

// withoutClient returns c without its i-th client and the faults that
// act on it.
func (c *candidate) withoutClient(i int) *candidate {
	d := c.clone()
	gone := d.clients[i]
	d.clients = slices.Delete(d.clients, i, i+1)
	d.faults = slices.DeleteFunc(d.faults, func(f fault) bool { return f.step.Client == gone })
	return d
}

// lastEnd is when its last fault ends.
func (c *candidate) lastEnd() time.Duration {
	var end time.Duration
	for _, f := range c.faults {
		end = max(end, f.end())
	}
	return end
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// size says how big c is: "3 faults (1.07s in all), 2 clients, 1 key, a
// 1.8s workload".
func (c *candidate) size() string {
	faults := plural(len(c.faults), "fault", "faults")
	var total time.Duration
	for _, f := range c.faults {
		total += f.step.For.Min
	}
	if total > 0 {
		faults += fmt.Sprintf(" (%v in all)", total)
	}
	return fmt.Sprintf("%s, %s, %s, a %v workload", faults,
		plural(len(c.clients), "client", "clients"), plural(c.keys, "key", "keys"), c.duration)
}

// names maps the original's client names to the candidate's.
func (c *candidate) names() map[string]string {
	m := map[string]string{}
	for i, name := range c.clients {
		m[name] = "c" + strconv.Itoa(i+1)
	}
	return m
}

// describe says what a fault does and for how long, in the candidate's
// names.
func describe(st spec.Step, names map[string]string) string {
	return fmt.Sprintf("%s for %v", action(st, names), st.For.Min)
}

// action says what a fault does.
func action(st spec.Step, names map[string]string) string {
	client := names[st.Client]
	var s string
	switch st.Kind {
	case spec.StepClock:
		s = fmt.Sprintf("%s's clock jumps %s", st.Node, signed(st.Span.Min))
		if st.Rate != 0 {
			s = fmt.Sprintf("%s's clock runs at ×%v", st.Node, st.Rate)
		}
	case spec.StepStrobe:
		s = fmt.Sprintf("%s's clock strobes %s every %v", st.Node, signed(st.Span.Min), st.Period)
	case spec.StepPause:
		if st.Client != "" {
			s = fmt.Sprintf("%s paused at %s", client, st.Point)
		} else {
			s = st.Node + " paused (SIGSTOP)"
		}
	case spec.StepKill:
		s = st.Node + " killed"
		if st.Amnesia {
			s += " with its data lost"
		}
		if st.Power {
			s = st.Node + " lost power (what it had not fsynced lost)"
		}
	case spec.StepStop:
		s = st.Node + " stopped"
	case spec.StepStarve:
		who := st.Node
		if st.Client != "" {
			who = client
		}
		s = fmt.Sprintf("%s starved to %v%% of a CPU", who, st.Share*100)
	case spec.StepFsync:
		s = fmt.Sprintf("%s's disk slow, each fsync waiting %v", st.Node, st.Delay.Min)
	case spec.StepNet:
		s = fmt.Sprintf("%s's links to %s: %s", client, strings.Join(st.Nodes, ","), st.Fault)
	case spec.StepReplication:
		s = fmt.Sprintf("%s's replication link: %s", st.Node, st.Fault)
	default:
		s = string(st.Kind)
	}
	return s
}

func signed(d time.Duration) string {
	if d > 0 {
		return "+" + d.String()
	}
	return d.String()
}

// Comments a file's steps and fields carry: why each is kept.
const (
	noteClients  = "workload.clients"
	noteKeys     = "workload.keys"
	noteDuration = "workload.duration"
)

func noteFault(id int) string       { return "fault:" + strconv.Itoa(id) }
func noteClient(name string) string { return "client:" + name }
func noteFor(id int) string         { return "for:" + strconv.Itoa(id) }
func noteWait(id int) string        { return "wait:" + strconv.Itoa(id) }

// writer writes candidates as scenario files, from the original's file.
type writer struct {
	doc  *yaml.Node
	name string
	lock string
}

// file is the text of c as a scenario file: the original's with the
// name, description, expectation, lock kind, workload size and steps
// replaced. comments, keyed by the note names above, go above the steps
// and beside the fields they are about.
func (w *writer) file(c *candidate, description string, comments map[string]string) ([]byte, error) {
	doc := cloneNode(w.doc)
	root := doc.Content[0]
	set(root, "name", scalar(w.name))
	desc := scalar(description)
	desc.Style = yaml.LiteralStyle
	if description == "" {
		desc = scalar("a candidate of splitbrain shrink")
	}
	set(root, "description", desc)
	set(root, "expect", scalar("violation"))
	lock := mapping(root, "lock")
	set(lock, "kind", scalar(w.lock))
	wl := mapping(root, "workload")
	wl.Style = 0 // block: each field its own line, for its comment
	for _, f := range []struct{ key, value, note string }{
		{"clients", strconv.Itoa(len(c.clients)), noteClients},
		{"keys", strconv.Itoa(c.keys), noteKeys},
		{"duration", c.duration.String(), noteDuration},
	} {
		v := scalar(f.value)
		v.LineComment = comment(comments[f.note])
		set(wl, f.key, v)
	}
	steps := &yaml.Node{Kind: yaml.SequenceNode}
	names := c.names()
	var at time.Duration
	for i, f := range c.faults {
		if d := f.at - at; d > 0 {
			n, err := spec.StepNode(spec.Step{Kind: spec.StepWait, Span: spec.Span{Min: d, Max: d}})
			if err != nil {
				return nil, err
			}
			n.HeadComment = comment(comments[noteWait(f.id)])
			steps.Content = append(steps.Content, n)
			at = f.at
		}
		st := f.step
		if st.Client != "" {
			st.Client = names[st.Client]
		}
		n, err := spec.StepNode(st)
		if err != nil {
			return nil, fmt.Errorf("fault %d (%s): %w", i, describe(f.step, names), err)
		}
		n.HeadComment = comment(comments[noteFault(f.id)])
		steps.Content = append(steps.Content, n)
	}
	set(root, "steps", steps)
	if len(steps.Content) == 0 {
		// Every fault removed: the workload violates on its own.
		steps.Style = yaml.FlowStyle
		steps.LineComment = comment("no fault: the workload alone violated")
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("writing the scenario: %w", err)
	}
	return buf.Bytes(), enc.Close()
}

// comment makes text a YAML comment, a "# " before each line.
func comment(text string) string {
	if text == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "# " + l
	}
	return strings.Join(lines, "\n")
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// set puts value under key in mapping m, replacing what was there and
// the comments about it, which may no longer be true.
func set(m *yaml.Node, key string, value *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			k := m.Content[i]
			k.HeadComment, k.LineComment, k.FootComment = "", "", ""
			m.Content[i+1] = value
			return
		}
	}
	m.Content = append(m.Content, scalar(key), value)
}

// mapping is the mapping under key in m, made if missing.
func mapping(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.MappingNode {
			return m.Content[i+1]
		}
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	set(m, key, n)
	return n
}

func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = cloneNode(k)
	}
	c.Alias = cloneNode(n.Alias)
	return &c
}
