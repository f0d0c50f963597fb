// Package spec reads scenario files (YAML) and checks them: the cluster,
// the lock, the workload, the scripted steps and random schedules, and
// what each play is expected to show, every error naming the file, line
// and field. It imports nothing that runs servers, proxies or clients,
// so that the parser and its fuzzing stay small; package scenarios plays
// what it reads.
package spec

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"splitbrain/locks"
)

//go:embed builtin/*.yaml
var builtin embed.FS

// Expect is what a scenario should show.
type Expect string

const (
	ExpectViolation Expect = "violation"
	ExpectSafe      Expect = "safe"
	ExpectAny       Expect = "any"
)

// Scenario is a parsed, validated scenario file.
type Scenario struct {
	Name        string
	Description string
	// Expect is what a play against Lock.Kind should show (see
	// ExpectFor): a word, or the two answers apart in checker.Expectation's
	// form; empty when the file states nothing for that lock.
	Expect Expect
	// Expects is the file's expect field: lock kind (or ExpectDefault) to
	// expectation (parse_expect.go).
	Expects map[string]Expect
	// NotFor holds, per lock kind, why the story makes no claim about it
	// (expect: {KIND: {na: WHY}}): what it would show is a race the story
	// does not pin. The cell is n/a with that reason.
	NotFor   map[string]string
	Nodes    int
	Clients  []string
	Lock     Lock
	Workload Workload
	Steps    []Step
	// File is where the scenario came from ("builtin/clock-jump.yaml" or a
	// user path), for messages.
	File string
	// Persistence is each lock node's (n1..nN) persistence.
	Persistence map[string]string
	// Replicas names the nodes that get asynchronous replicas; nK's are
	// rK, rKb, ... (ReplicasOf), ReplicaCount of them (absent: one).
	Replicas     []string
	ReplicaCount map[string]int
	// Backend is the file's cluster.backend (BackendLocal or
	// BackendDocker), empty when the file leaves it to the caller;
	// RunOptions.Backend, when set, wins.
	Backend string
	// Locks are the lock kinds the scenario is played against, once
	// each (see Plays); Lock.Kind is the first.
	Locks []string
	// Sentinel, when set, runs Sentinel over n1 and its replicas: it
	// fails n1 over, and the clients find the master through it.
	Sentinel *SentinelSpec
	// Source is the file as parsed, which each play keeps in its run
	// folder (ScenarioFile) so that the folder alone says what was played.
	Source []byte
}

// fileLockKinds are the kinds a scenario file may name: every kind
// (locks.Names), the driver among them.
var fileLockKinds = locks.Names()

// Backend names, as --backend takes them and results.Meta records them.
const (
	BackendLocal  = "local"
	BackendDocker = "docker"
)

// Backends are the names RunOptions.Backend accepts.
var Backends = []string{BackendLocal, BackendDocker}

// Random streams derived from the seed, one per consumer, so that adding a
// draw to one never shifts the draws of another.
const (
	StreamNemesis  = 1
	StreamWorkload = 2
)

// StorageNode names the storage in the network nemesis: each client reaches
// it through its own proxy, as it reaches the lock nodes, so that faults on
// the client↔storage links can be injected like any other.
const StorageNode = "storage"

// Lock is the lock under test and its parameters.
type Lock struct {
	Kind        string // a lock kind's name (package locks)
	TTL         time.Duration
	Key         string
	NodeTimeout time.Duration // zero: the library's default
	// Retries is how many attempts one acquire makes (redlock's MaxTries,
	// redsync's tries); 0 means one, as 1 does.
	Retries int
	// Extend makes a generated workload's clients extend their lease once
	// in each critical section, before the write (see workload.Config).
	Extend bool
	// Command is the driver program and its arguments of kind driver.
	Command []string
}

// Error is a problem in a scenario file, located by line and field.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Errors is every problem found in one file.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

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
	Key         string    `yaml:"key"`
	NodeTimeout yaml.Node `yaml:"node_timeout"`
	Retries     yaml.Node `yaml:"retries"`
	Extend      yaml.Node `yaml:"extend"`
	Command     yaml.Node `yaml:"command"`
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
	"fileSpec":     {"the top level", "name, description, expect, cluster, lock, workload, steps"},
	"clusterSpec":  {"cluster", "nodes, persistence, replicas, backend, sentinel"},
	"lockSpec":     {"lock", "kind, ttl, key, node_timeout, retries, extend, command"},
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
	sc := p.scenario(&spec)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	sc.File = file
	sc.Source = data
	return sc, nil
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
	sc.Lock.Key = s.Lock.Key
	if sc.Lock.Key == "" {
		sc.Lock.Key = "lock"
	}
	sc.Workload = p.workload(&s.Workload, len(s.Steps) > 0)
	p.moreOptions(s, sc)
	p.storage = sc.Workload.HasResource()
	if len(s.Steps) == 0 && sc.Workload.Kind == WorkloadSteps {
		p.fail(nil, "steps", "missing: a scenario needs at least one step, or a generated workload (workload.kind mutex, counter, bank or set)")
	}
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
		}
	}
	return sc
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

// PlayAgainst returns a copy of the scenario played against lock kind k
// alone, with k's expectation.
func (sc *Scenario) PlayAgainst(k string) *Scenario {
	c := *sc
	c.Lock.Kind = k
	c.Locks = []string{k}
	c.Expect, _ = sc.ExpectFor(k)
	return &c
}

// Plays returns the scenario once per lock kind it lists, each a copy
// with that kind alone: what one run plays.
func (sc *Scenario) Plays() []*Scenario {
	out := make([]*Scenario, len(sc.Locks))
	for i, k := range sc.Locks {
		out[i] = sc.PlayAgainst(k)
	}
	if len(out) == 0 {
		// Built in Go rather than parsed: Lock.Kind is the one kind.
		out = append(out, sc)
	}
	return out
}

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

// Builtin lists the names of the built-in scenarios, sorted.
func Builtin() []string {
	entries, _ := fs.ReadDir(builtin, "builtin")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	// File names sort "clock-jump-control.yaml" before "clock-jump.yaml";
	// a scenario should come before its control.
	sort.Strings(out)
	return out
}

// ErrUnknownScenario means a name is neither built in nor a readable file.
var ErrUnknownScenario = errors.New("unknown scenario")

// Load finds a scenario by built-in name or by file path.
func Load(nameOrPath string) (*Scenario, error) {
	if !strings.ContainsAny(nameOrPath, "/.") {
		data, err := builtin.ReadFile(path.Join("builtin", nameOrPath+".yaml"))
		if err != nil {
			return nil, fmt.Errorf("%w %q; built-in scenarios: %s (or give a path to a .yaml file)",
				ErrUnknownScenario, nameOrPath, strings.Join(Builtin(), ", "))
		}
		return Parse(data, "builtin/"+nameOrPath+".yaml")
	}
	data, err := readFile(nameOrPath)
	if err != nil {
		return nil, err
	}
	return Parse(data, nameOrPath)
}

// Overrides changes a loaded scenario from the command line; zero fields
// keep the file's values.
type Overrides struct {
	Lock     string        // a lock kind (locks.Matrix()), in place of the file's list
	Clients  int           // number of clients, c1..cN
	Duration time.Duration // a generated workload's duration
}

// MaxClients bounds --clients.
const MaxClients = 64

// Check says whether each override given is a valid value at all, whatever
// the scenario; given names the flags the user set (lock, clients, time), so
// that a zero given (--clients 0) is refused rather than taken for unset.
// It is the one place these values are judged: the command line calls it
// before any scenario is read, Override calls it again.
func (o Overrides) Check(given func(flag string) bool) error {
	switch {
	case given("lock") && !slices.Contains(locks.Matrix(), o.Lock):
		return fmt.Errorf("--lock %q: want one of %s", o.Lock, strings.Join(locks.Matrix(), ", "))
	case given("clients") && (o.Clients < 1 || o.Clients > MaxClients):
		return fmt.Errorf("--clients %d: want a whole number from 1 to %d", o.Clients, MaxClients)
	case given("time") && o.Duration < time.Millisecond:
		return fmt.Errorf("--time %v: want a duration of at least 1ms such as 10s", o.Duration)
	case given("time"):
		if err := CheckDuration(o.Duration); err != nil {
			return fmt.Errorf("--time %v: %w", o.Duration, err)
		}
	}
	return nil
}

// nonZero is Check's given for overrides set in code: a zero field is unset.
func (o Overrides) nonZero(flag string) bool {
	switch flag {
	case "lock":
		return o.Lock != ""
	case "clients":
		return o.Clients != 0
	case "time":
		return o.Duration != 0
	}
	return false
}

// Override applies o to sc, or says which override does not fit sc and
// what would.
func (sc *Scenario) Override(o Overrides) error {
	if err := o.Check(o.nonZero); err != nil {
		return err
	}
	if o.Lock != "" {
		sc.Lock.Kind = o.Lock
		sc.Locks = []string{o.Lock}
		sc.Expect, _ = sc.ExpectFor(o.Lock)
	}
	// Every play must be able to fence: a lock without tokens cannot
	// write to a fenced storage at all.
	for _, k := range sc.Locks {
		if sc.Workload.Fencing && !locks.FencedKind(k) {
			flag := "--lock " + k
			if o.Lock == "" {
				flag = fmt.Sprintf("%s: lock.kind %s", sc.File, k)
			}
			return fmt.Errorf("%s: %s fences its storage and needs a lock with tokens: %s",
				flag, sc.Name, locks.Or(locks.FencedNames()))
		}
	}
	if o.Clients != 0 {
		for _, st := range sc.Steps {
			for _, c := range append([]string{st.Client}, st.Clients...) {
				if n, err := strconv.Atoi(strings.TrimPrefix(c, "c")); err == nil && n > o.Clients {
					return fmt.Errorf("--clients %d: %s:%d: step %s uses %s; want at least %d clients",
						o.Clients, sc.File, st.Line, st.Kind, c, n)
				}
			}
		}
		clients := make([]string, o.Clients)
		for i := range clients {
			clients[i] = fmt.Sprintf("c%d", i+1)
		}
		sc.Clients = clients
	}
	if o.Duration != 0 {
		if !sc.Workload.Generated() {
			return fmt.Errorf("--time %v: %s is scripted, its steps set its length; --time is for a generated workload (workload.kind %s)",
				o.Duration, sc.Name, generatorKinds)
		}
		sc.Workload.Duration = o.Duration
	}
	return nil
}
