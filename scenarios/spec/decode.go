package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"splitbrain/locks"
)

// The file's shape. Scalars that need checking are kept as nodes so that
// errors can name their line.
type fileSpec struct {
	Name        string       `yaml:"name"`
	Description yaml.Node    `yaml:"description"`
	Expect      yaml.Node    `yaml:"expect"`
	Cluster     clusterSpec  `yaml:"cluster"`
	Lock        lockSpec     `yaml:"lock"`
	Workload    workloadSpec `yaml:"workload"`
	Steps       []yaml.Node  `yaml:"steps"`
	Sweep       yaml.Node    `yaml:"sweep"`
	// Shapes are a fault family's deployments (shapes.go); ShapesNode
	// is the same section as written, for its order and lines.
	Shapes     map[string]shapeSpec `yaml:"shapes"`
	ShapesNode yaml.Node            `yaml:"-"`
}

type clusterSpec struct {
	Nodes       yaml.Node `yaml:"nodes"`
	Persistence yaml.Node `yaml:"persistence"`
	Replicas    yaml.Node `yaml:"replicas"`
	Backend     yaml.Node `yaml:"backend"`
	Sentinel    yaml.Node `yaml:"sentinel"`
}

type lockSpec struct {
	Kind        yaml.Node `yaml:"kind"`
	TTL         yaml.Node `yaml:"ttl"`
	Key         yaml.Node `yaml:"key"`
	NodeTimeout yaml.Node `yaml:"node_timeout"`
	Retries     yaml.Node `yaml:"retries"`
	Extend      yaml.Node `yaml:"extend"`
	Session     yaml.Node `yaml:"session"`
	Command     yaml.Node `yaml:"command"`
	Server      yaml.Node `yaml:"server"`
	Deployment  yaml.Node `yaml:"deployment"`
}

type workloadSpec struct {
	Clients  yaml.Node `yaml:"clients"`
	Kind     yaml.Node `yaml:"kind"`
	Keys     yaml.Node `yaml:"keys"`
	Duration yaml.Node `yaml:"duration"`
	Think    yaml.Node `yaml:"think"`
	Backoff  yaml.Node `yaml:"backoff"`
	Fencing  yaml.Node `yaml:"fencing"`
}

// sections lists the fields of each mapping, for "unknown field" errors.
var sections = map[string]struct{ name, fields string }{
	"fileSpec":     {"the top level", "name, description, expect, cluster, lock, workload, steps, sweep, shapes"},
	"shapeSpec":    {"a shape", "cluster, lock, workload, steps, expect"},
	"clusterSpec":  {"cluster", "nodes, persistence, replicas, backend, sentinel"},
	"lockSpec":     {"lock", "kind, ttl, key, node_timeout, retries, extend, session, command, server, deployment"},
	"workloadSpec": {"workload", "clients, kind, keys, duration, think, backoff, fencing"},
}

var unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found in type spec\.(\w+)`)
var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// Parse reads a scenario from data; file names it in errors.
func Parse(data []byte, file string) (*Scenario, error) {
	if len(data) > MaxFileSize {
		return nil, Errors{{File: file, Msg: fmt.Sprintf("%d bytes, more than the %d KiB a scenario file may have", len(data), MaxFileSize>>10)}}
	}
	var spec fileSpec
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&spec); err != nil {
		return nil, yamlError(file, err)
	}
	p := &parser{file: file}
	var sc *Scenario
	if spec.Shapes != nil {
		spec.ShapesNode = shapesNode(data)
		if vs := p.variants(&spec); len(p.errs) == 0 {
			sc = family(vs)
		}
	} else {
		sc = p.scenario(&spec)
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	sc.File = file
	sc.Source = data
	return sc, nil
}

// shapesNode is the shapes: section of a file that decoded already.
func shapesNode(data []byte) yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return yaml.Node{}
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "shapes" {
			return *root.Content[i+1]
		}
	}
	return yaml.Node{}
}

func yamlError(file string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var errs Errors
		for _, msg := range te.Errors {
			if m := unknownField.FindStringSubmatch(msg); m != nil {
				line, _ := strconv.Atoi(m[1])
				sec := sections[m[3]]
				errs = append(errs, &Error{File: file, Line: line, Field: m[2],
					Msg: fmt.Sprintf("unknown field in %s; valid fields: %s", sec.name, sec.fields)})
				continue
			}
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				line, _ := strconv.Atoi(m[1])
				errs = append(errs, &Error{File: file, Line: line, Msg: m[2]})
				continue
			}
			errs = append(errs, &Error{File: file, Msg: msg})
		}
		return errs
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Errors{{File: file, Line: line, Msg: m[2]}}
	}
	if err.Error() == "EOF" {
		msg = "the file is empty; a scenario needs at least name, cluster, lock, workload and steps"
	}
	return Errors{{File: file, Msg: msg}}
}

type parser struct {
	file       string
	errs       Errors
	nodes      map[string]bool
	cls        map[string]bool
	replicated map[string]int // nodes with replicas, and how many
	storage    bool           // the workload has a storage node
}

func (p *parser) fail(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

func (p *parser) scenario(s *fileSpec) *Scenario {
	sc := &Scenario{Name: s.Name, Description: strings.TrimSpace(s.Description.Value)}
	switch {
	case len(s.Name) > MaxName:
		p.fail(nil, "name", "%d characters, more than the %d a name may have", len(s.Name), MaxName)
	case !namePattern.MatchString(s.Name):
		p.fail(nil, "name", "%q: want a lower-case name of letters, digits and dashes, such as clock-jump", s.Name)
	}
	switch d := &s.Description; {
	case d.Kind != 0 && d.Kind != yaml.ScalarNode:
		p.fail(d, "description", "want text")
	case len(sc.Description) > MaxDescription:
		p.fail(d, "description", "%d bytes, more than the %d a description may have; keep the story short, and the rest in comments", len(sc.Description), MaxDescription)
	}
	if len(s.Steps) > MaxSteps {
		// Parsing 800 000 steps one by one would only list as many errors.
		p.fail(&s.Steps[MaxSteps], "steps", "%d steps, more than the %d a scenario may have", len(s.Steps), MaxSteps)
		return sc
	}
	sc.Expects, sc.NotFor = p.expectation(&s.Expect)
	sc.Nodes = p.count(&s.Cluster.Nodes, "cluster.nodes", 5, 1, 15)
	p.nodes = map[string]bool{}
	for i := 1; i <= sc.Nodes; i++ {
		p.nodes[fmt.Sprintf("n%d", i)] = true
	}
	sc.Persistence = p.persistence(&s.Cluster.Persistence, sc.Nodes)
	sc.Replicas, sc.ReplicaCount = p.replicas(&s.Cluster.Replicas)
	sc.Sentinel = p.sentinel(&s.Cluster.Sentinel, sc)
	clients := p.count(&s.Workload.Clients, "workload.clients", 2, 1, 64)
	p.cls = map[string]bool{}
	for i := 1; i <= clients; i++ {
		name := fmt.Sprintf("c%d", i)
		sc.Clients = append(sc.Clients, name)
		p.cls[name] = true
	}
	sc.Locks = p.lockKinds(&s.Lock.Kind)
	sc.Lock.Kind = sc.Locks[0]
	sc.Expect, _ = sc.ExpectFor(sc.Lock.Kind)
	p.checkExpectLocks(&s.Expect, sc)
	sc.Lock.TTL = p.duration(&s.Lock.TTL, "lock.ttl", 2*time.Second, time.Millisecond)
	sc.Lock.NodeTimeout = p.duration(&s.Lock.NodeTimeout, "lock.node_timeout", 0, time.Millisecond)
	if sc.Lock.NodeTimeout >= sc.Lock.TTL && sc.Lock.TTL > 0 {
		p.fail(&s.Lock.NodeTimeout, "lock.node_timeout", "%v must be shorter than lock.ttl %v", sc.Lock.NodeTimeout, sc.Lock.TTL)
	}
	sc.Lock.Command = p.driverCommand(&s.Lock.Command, sc.Locks)
	sc.Lock.Server, sc.Lock.Deployment, sc.Lock.ServerLine = p.driverServer(&s.Lock, sc.Locks)
	sc.Lock.Key = p.lockKey(&s.Lock.Key, "lock.key")
	if sc.Lock.Key == "" {
		sc.Lock.Key = "lock"
	}
	sc.Workload = p.workload(&s.Workload, len(s.Steps) > 0)
	p.moreOptions(s, sc)
	p.storage = sc.Workload.HasResource()
	if len(s.Steps) == 0 && sc.Workload.Kind == WorkloadSteps {
		p.fail(nil, "steps", "missing: a scenario needs at least one step, or a generated workload (workload.kind mutex, counter, bank or set)")
	}
	var scripted time.Duration
	tooLong := false
	for i := range s.Steps {
		if st, ok := p.parseStep(&s.Steps[i], i); ok {
			sc.Steps = append(sc.Steps, st)
			if sc.Workload.Kind != WorkloadSteps && drivesClient(st) {
				p.fail(&s.Steps[i], fmt.Sprintf("steps[%d].%s", i, st.Kind),
					"not allowed with workload.kind %s: the generator drives the clients; its steps may inject faults and wait for a time, until a node is up or down, or until a client is paused or wrote", sc.Workload.Kind)
			}
			if st.Kind == StepWait && st.Until == UntilWrote && !p.storage {
				p.fail(&s.Steps[i], fmt.Sprintf("steps[%d].wait.until", i),
					"wrote waits for a write to the storage, which workload.kind %s does not make; want a workload with a resource (counter, bank or set)", sc.Workload.Kind)
			}
			// Each duration is bounded on its own; so is their sum, or
			// 10 000 waits of a day each would make a run of 27 years.
			if scripted += st.scriptedTime(); scripted > MaxDuration && !tooLong {
				tooLong = true
				p.fail(&s.Steps[i], fmt.Sprintf("steps[%d]", i),
					"the steps up to here take up to %v, more than the %s a run may take; want shorter waits and schedules", scripted, maxDurationText)
			}
		}
	}
	if sc.Sweep = p.parseSweep(&s.Sweep); sc.Sweep != nil && !sc.hasSweepParam(sc.Sweep.Param) {
		p.fail(&s.Sweep, "sweep.param", "a sweep of %s needs %s in the story, and it has none", sc.Sweep.Param, sweepWhere[sc.Sweep.Param])
	}
	return sc
}

// scriptedTime is the longest the step itself takes: a wait's pause, a
// random schedule's total. A fault that heals on its own (for:) runs
// beside the next steps and takes none.
func (st Step) scriptedTime() time.Duration {
	switch st.Kind {
	case StepWait:
		return st.Span.Max
	case StepRandom:
		return st.Schedule.Total
	}
	return 0
}

// lockKinds parses lock.kind: one kind, or a list of kinds to play the
// scenario against one after another.
func (p *parser) lockKinds(n *yaml.Node) []string {
	const field = "lock.kind"
	if n.Kind != yaml.SequenceNode {
		return []string{p.enum(n, field, locks.Redlock.Name, fileLockKinds...)}
	}
	if len(n.Content) == 0 {
		p.fail(n, field, "empty list; want one or more of %s, such as [redlock, redsync]", strings.Join(fileLockKinds, ", "))
		return []string{locks.Redlock.Name}
	}
	var out []string
	for i, v := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		k := p.enum(v, f, "", fileLockKinds...)
		switch {
		case k == "":
		case slices.Contains(out, k):
			p.fail(v, f, "%s is listed twice; each kind is played once", k)
		default:
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return []string{locks.Redlock.Name}
	}
	return out
}

// driverCommand parses lock.command, which kind driver needs and no
// other kind takes.
func (p *parser) driverCommand(n *yaml.Node, kinds []string) []string {
	const field = "lock.command"
	wants := slices.Contains(kinds, locks.Driver.Name)
	if n.Kind == 0 {
		if wants {
			p.fail(nil, field, "missing: lock.kind driver runs the program it names, e.g. command: [python3, my_driver.py] (see docs/driver-protocol.md)")
		}
		return nil
	}
	if !wants {
		p.fail(n, field, "only lock.kind driver runs a command; %s is built in", strings.Join(kinds, ", "))
		return nil
	}
	var out []string
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.fail(n, field, "want a list: the program and its arguments, such as [python3, my_driver.py]")
		return nil
	}
	for i, v := range n.Content {
		if v.Kind != yaml.ScalarNode || (i == 0 && v.Value == "") {
			p.fail(v, fmt.Sprintf("%s[%d]", field, i), "want a string: the program, then each argument")
			return nil
		}
		out = append(out, v.Value)
	}
	return out
}

// driverServer parses lock.server and lock.deployment, which choose the
// lock a driver of kind driver plays among those its ready claims.
func (p *parser) driverServer(l *lockSpec, kinds []string) (server, deployment string, line int) {
	wants := slices.Contains(kinds, locks.Driver.Name)
	for _, f := range []struct {
		n    *yaml.Node
		name string
	}{{&l.Server, "lock.server"}, {&l.Deployment, "lock.deployment"}} {
		if f.n.Kind != 0 && !wants {
			p.fail(f.n, f.name, "only lock.kind driver chooses its server; %s runs on its own", strings.Join(kinds, ", "))
			return "", "", 0
		}
	}
	if l.Server.Kind != 0 {
		server = p.enum(&l.Server, "lock.server", "", DriverServers...)
		line = l.Server.Line
	}
	if l.Deployment.Kind != 0 {
		deployment = p.enum(&l.Deployment, "lock.deployment", "", DriverDeployments...)
		if server != "" && server != "redis" {
			p.fail(&l.Deployment, "lock.deployment", "a deployment is of Redis nodes; lock.server is %s, whose lock runs on its ensemble", server)
		}
		if line == 0 {
			line = l.Deployment.Line
		}
	}
	return server, deployment, line
}

// DriverServers and DriverDeployments are what lock.server and
// lock.deployment take (package driver's Servers, less sentinel, which a
// lock of one deployment uses in the Sentinel stories, and Deployments).
var (
	DriverServers     = []string{"redis", "zookeeper", "etcd"}
	DriverDeployments = []string{"masters", "one"}
)

func (p *parser) enum(n *yaml.Node, field, def string, valid ...string) string {
	if n.Kind == 0 {
		if def == "" {
			p.fail(nil, field, "missing; want one of %s", strings.Join(valid, ", "))
		}
		return def
	}
	for _, v := range valid {
		if n.Value == v && n.Kind == yaml.ScalarNode {
			return v
		}
	}
	p.fail(n, field, "%q is not valid; want one of %s", n.Value, strings.Join(valid, ", "))
	return def
}

// lockKey reads a lock key: text of at most MaxKey bytes ("" when absent).
func (p *parser) lockKey(n *yaml.Node, field string) string {
	switch {
	case n.Kind == 0, n.Tag == "!!null":
		return ""
	case n.Kind != yaml.ScalarNode:
		p.fail(n, field, "want a key name such as lock")
		return ""
	case len(n.Value) > MaxKey:
		p.fail(n, field, "%d bytes, more than the %d a lock key may have", len(n.Value), MaxKey)
		return ""
	}
	return n.Value
}

func (p *parser) count(n *yaml.Node, field string, def, min, max int) int {
	if n.Kind == 0 {
		return def
	}
	v, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || v < min || v > max {
		p.fail(n, field, "%q is not valid; want a whole number from %d to %d", n.Value, min, max)
		return def
	}
	return v
}

func (p *parser) duration(n *yaml.Node, field string, def, min time.Duration) time.Duration {
	if n.Kind == 0 {
		return def
	}
	d, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || d < min {
		p.fail(n, field, "%q is not valid; want a duration of at least %v such as 1500ms or 2s", n.Value, min)
		return def
	}
	if err := CheckDuration(d); err != nil {
		p.fail(n, field, "%q is too long; %v", n.Value, err)
		return def
	}
	return d
}

// span parses "5s", "-3s" or "3s..6s".
func (p *parser) span(n *yaml.Node, field string, allowNegative bool) (Span, bool) {
	bad := func() (Span, bool) {
		want := "a duration such as 5s or a range such as 3s..6s"
		if allowNegative {
			want = "a duration such as 5s or -2s, or a range such as 3s..6s"
		}
		p.fail(n, field, "%q is not valid; want %s", n.Value, want)
		return Span{}, false
	}
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		return bad()
	}
	lo, hi, isRange := strings.Cut(n.Value, "..")
	min, err := time.ParseDuration(strings.TrimPrefix(lo, "+"))
	if err != nil {
		return bad()
	}
	max := min
	if isRange {
		if max, err = time.ParseDuration(strings.TrimPrefix(hi, "+")); err != nil || max < min {
			return bad()
		}
	}
	if !allowNegative && min < 0 {
		return bad()
	}
	for _, d := range []time.Duration{min, max} {
		if err := CheckDuration(d); err != nil {
			p.fail(n, field, "%q is too long; %v", n.Value, err)
			return Span{}, false
		}
	}
	return Span{Min: min, Max: max}, true
}
