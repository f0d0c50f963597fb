package spec

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// A sweep plays one story across the values of one of its parameters —
// the clock rate of its rate steps, its TTL, the CPU share of its
// starvations — each value a variant of the story, so that a plot of
// how often the lock broke against the value shows where it stops
// holding (package suite plays it, package pages draws it):
//
//	sweep:
//	  param: rate
//	  values: [+0.05%, +0.5%, +1%, +2%, +8%]
//	  mark: {at: +1%, label: "Redlock's drift allowance"}

// Sweep is a story's sweep.
type Sweep struct {
	// Param is what is swept (a SweepParams name).
	Param string
	// Values are the values as written, in order; X their places on the
	// plot's axis (SweepParam.X).
	Values []string
	X      []float64
	// Mark, when set, is a value the plot marks with its label (the drift
	// allowance a Redlock subtracts).
	Mark *SweepMark
}

// SweepMark is a value marked on a sweep's plot.
type SweepMark struct {
	Value string
	X     float64
	Label string
}

// SweepParam is a parameter a sweep can vary: how its values read, where
// they go on the axis, and how a variant's file is written with one.
type SweepParam struct {
	Name string
	// Axis names the plot's x axis.
	Axis string
	// Log: the axis is logarithmic (values spanning decades).
	Log bool
	// X places a value (as parse read it) on the axis.
	parse func(s string) (float64, error)
	x     func(v float64) float64
	// set writes v (as written: text) into the story's file wherever the
	// parameter lives, and says how many places it set.
	set func(doc *yaml.Node, text string) int
}

// SweepParams are the parameters a sweep can vary.
var SweepParams = []SweepParam{
	{Name: "rate", Axis: "the clock rate's error of the story's rate steps (%)", Log: true,
		parse: func(s string) (float64, error) {
			r, err := ParseRate(s)
			if err == nil {
				err = checkRate(r)
			}
			return r, err
		},
		x:   func(r float64) float64 { return math.Round((r-1)*100*1e6) / 1e6 },
		set: func(doc *yaml.Node, text string) int { return setStepField(doc, StepClock, "rate", text) }},
	{Name: "ttl", Axis: "lock.ttl (s)",
		parse: func(s string) (float64, error) {
			d, err := time.ParseDuration(s)
			if err != nil || d < time.Millisecond {
				return 0, fmt.Errorf("ttl %q: want a duration of at least 1ms, such as 2s", s)
			}
			return d.Seconds(), nil
		},
		x: func(s float64) float64 { return s },
		set: func(doc *yaml.Node, text string) int {
			lock := mapValue(doc, "lock")
			if lock == nil || lock.Kind != yaml.MappingNode {
				return 0
			}
			setMapValue(lock, "ttl", text)
			return 1
		}},
	{Name: "cpu", Axis: "the CPU share of the story's starve steps (%)", Log: true,
		parse: func(s string) (float64, error) {
			v := strings.TrimSpace(s)
			scale := 1.0
			if num, ok := strings.CutSuffix(v, "%"); ok {
				v, scale = num, 0.01
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || !(f*scale >= 0.01 && f*scale <= 0.99) {
				return 0, fmt.Errorf("cpu %q: want a share of one CPU from 1%% to 99%%, such as 5%%", s)
			}
			return f * scale, nil
		},
		x:   func(s float64) float64 { return math.Round(s*100*1e6) / 1e6 },
		set: func(doc *yaml.Node, text string) int { return setStepField(doc, StepStarve, "cpu", text) }},
}

// checkRate is fault.CheckRate's test, which this file does not import
// for one call.
func checkRate(r float64) error {
	if math.IsNaN(r) || r < 0.1 || r > 10 || r == 1 {
		return fmt.Errorf("clock rate %v: want a factor from 0.1 to 10 other than 1", r)
	}
	return nil
}

// SweepParamOf finds a parameter by name.
func SweepParamOf(name string) (SweepParam, bool) {
	for _, p := range SweepParams {
		if p.Name == name {
			return p, true
		}
	}
	return SweepParam{}, false
}

func sweepParamNames() string {
	names := make([]string, len(SweepParams))
	for i, p := range SweepParams {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// maxSweepValues bounds a sweep's values: each is a variant played --runs
// times against each lock.
const maxSweepValues = 50

// NewSweep checks a sweep given on the command line (or read from a
// file): param's values, and an optional mark.
func NewSweep(param string, values []string, mark *SweepMark) (*Sweep, error) {
	p, ok := SweepParamOf(param)
	if !ok {
		return nil, fmt.Errorf("sweep param %q: want one of %s", param, sweepParamNames())
	}
	if len(values) == 0 || len(values) > maxSweepValues {
		return nil, fmt.Errorf("sweep of %s: %d values, want 1 to %d", param, len(values), maxSweepValues)
	}
	sw := &Sweep{Param: param}
	for _, v := range values {
		f, err := p.parse(v)
		if err != nil {
			return nil, fmt.Errorf("sweep of %s: %w", param, err)
		}
		x := p.x(f)
		if p.Log && x <= 0 {
			return nil, fmt.Errorf("sweep of %s: %q is at %v on a logarithmic axis, want above 0 (a clock that runs fast, a share of a CPU)", param, v, x)
		}
		sw.Values = append(sw.Values, strings.TrimSpace(v))
		sw.X = append(sw.X, x)
	}
	if mark != nil {
		f, err := p.parse(mark.Value)
		if err != nil {
			return nil, fmt.Errorf("sweep mark: %w", err)
		}
		m := *mark
		m.X = p.x(f)
		sw.Mark = &m
	}
	return sw, nil
}

// parseSweep reads the file's sweep section.
func (p *parser) parseSweep(n *yaml.Node) *Sweep {
	if n.Kind == 0 {
		return nil
	}
	const field = "sweep"
	if n.Kind != yaml.MappingNode {
		p.fail(n, field, "want a mapping such as {param: rate, values: [+0.5%%, +1%%, +2%%]}")
		return nil
	}
	var param string
	var values []string
	var mark *SweepMark
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "param":
			param = v.Value
			if _, ok := SweepParamOf(param); !ok {
				p.fail(v, field+".param", "%q: want one of %s", v.Value, sweepParamNames())
				return nil
			}
		case "values":
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				p.fail(v, field+".values", "want a list of values, such as [+0.5%%, +1%%, +2%%]")
				return nil
			}
			for _, e := range v.Content {
				values = append(values, e.Value)
			}
		case "mark":
			at, label := mapValue(v, "at"), mapValue(v, "label")
			if v.Kind != yaml.MappingNode || at == nil || len(v.Content) > 4 || (label == nil && len(v.Content) > 2) {
				p.fail(v, field+".mark", "want {at: VALUE, label: TEXT}, such as {at: +1%%, label: \"the drift allowance\"}")
				return nil
			}
			mark = &SweepMark{Value: at.Value}
			if label != nil {
				mark.Label = label.Value
			}
		default:
			p.fail(k, field+"."+k.Value, "unknown field; valid fields: param, values, mark")
			return nil
		}
	}
	if param == "" || values == nil {
		p.fail(n, field, "want param and values, such as {param: rate, values: [+0.5%%, +1%%, +2%%]}")
		return nil
	}
	sw, err := NewSweep(param, values, mark)
	if err != nil {
		p.fail(n, field, "%v", err)
		return nil
	}
	return sw
}

// Variant is the story with its sweep's parameter set to value (as
// written): its file rewritten — the value in every place the parameter
// lives, the name given the value's suffix, every expectation "any" (a
// sweep measures how often the lock breaks; it does not expect), every
// contending acquire's outcome left open (unpinContending), the sweep
// section gone — and parsed again, so that the file a play keeps in its
// run folder is exactly what it played.
func (sc *Scenario) Variant(param, value string) (*Scenario, error) {
	p, ok := SweepParamOf(param)
	if !ok {
		return nil, fmt.Errorf("sweep param %q: want one of %s", param, sweepParamNames())
	}
	if _, err := p.parse(value); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(sc.Source, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: cannot be rewritten for a sweep: %v", sc.File, err)
	}
	top := doc.Content[0]
	// A fault family's deployments each carry their own steps, lock and
	// expect (shapes.go): the value goes wherever the parameter lives in
	// any of them, and every expectation becomes any.
	places := []*yaml.Node{top}
	if shapes := mapValue(top, "shapes"); shapes != nil && shapes.Kind == yaml.MappingNode {
		for i := 1; i < len(shapes.Content); i += 2 {
			places = append(places, shapes.Content[i])
		}
	}
	set := 0
	for _, place := range places {
		set += p.set(place, value)
		if e := mapValue(place, "expect"); e != nil {
			anyExpect(e)
		}
		unpinContending(mapValue(place, "steps"))
	}
	if set == 0 {
		return nil, fmt.Errorf("%s: a sweep of %s needs %s in the story, and it has none", sc.File, param, sweepWhere[param])
	}
	name := VariantName(sc.Name, param, value)
	setMapValue(top, "name", name)
	deleteMapKey(top, "sweep")
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	v, err := Parse(buf.Bytes(), sc.File)
	if err != nil {
		return nil, fmt.Errorf("the variant %s of %s: %w", name, sc.Name, err)
	}
	return v, nil
}

var sweepWhere = map[string]string{
	"rate": "a clock step with a rate (clock: {node: n3, rate: 1.01})",
	"ttl":  "lock.ttl",
	"cpu":  "a starve step (starve: {node: n1, cpu: 5%})",
}

// VariantName is the name of a story's variant for one value of a sweep:
// the story's, then the parameter and the value in the letters a name
// may have (+1.25% is p1-25pct).
func VariantName(story, param, value string) string {
	r := strings.NewReplacer("+", "p", "-", "m", ".", "-", "%", "pct")
	slug := strings.ToLower(r.Replace(strings.TrimSpace(value)))
	var b strings.Builder
	for _, c := range slug {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' {
			b.WriteRune(c)
		}
	}
	name := story + "--" + param + "-" + b.String()
	if len(name) > MaxName {
		name = name[:MaxName]
	}
	return name
}

// unpinContending leaves open the outcome of every scripted acquire made
// after another client's: whether a second client is granted is what the
// swept value decides (clock-rate-drift's one master: c2 asks at 9.7 s,
// refused while the key lives at a low rate, granted once it runs fast),
// so a pinned outcome would turn the measurement into an unknown. The
// first client's acquires stay pinned: they set the story up.
func unpinContending(steps *yaml.Node) {
	if steps == nil || steps.Kind != yaml.SequenceNode {
		return
	}
	first := ""
	for _, st := range steps.Content {
		acq := mapValue(st, string(StepAcquire))
		client := mapValue(acq, "client")
		if client == nil {
			continue
		}
		switch {
		case first == "":
			first = client.Value
		case client.Value != first:
			deleteMapKey(acq, "expect")
		}
	}
}

// anyExpect makes every expectation in an expect field "any", keeping
// which lock kinds it names and its n/a entries.
func anyExpect(n *yaml.Node) {
	switch n.Kind {
	case yaml.ScalarNode:
		n.Value, n.Tag, n.Style = string(ExpectAny), "!!str", 0
	case yaml.MappingNode:
		if mapValue(n, "na") != nil {
			return
		}
		if mapValue(n, "lock") != nil || mapValue(n, "resource") != nil {
			*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(ExpectAny)}
			return
		}
		for i := 1; i < len(n.Content); i += 2 {
			anyExpect(n.Content[i])
		}
	}
}

// setStepField sets field of every step of kind that has it, and says how
// many it set.
func setStepField(doc *yaml.Node, kind StepKind, field, text string) int {
	steps := mapValue(doc, "steps")
	if steps == nil || steps.Kind != yaml.SequenceNode {
		return 0
	}
	set := 0
	for _, st := range steps.Content {
		if v := mapValue(st, string(kind)); v != nil && v.Kind == yaml.MappingNode && mapValue(v, field) != nil {
			setMapValue(v, field, text)
			set++
		}
	}
	return set
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func setMapValue(m *yaml.Node, key, value string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value})
}

func deleteMapKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// hasSweepParam reports whether the story has a place for param's value.
func (sc *Scenario) hasSweepParam(param string) bool {
	for _, st := range sc.Steps {
		if (param == "rate" && st.Kind == StepClock && st.Rate != 0) || (param == "cpu" && st.Kind == StepStarve) {
			return true
		}
	}
	return param == "ttl"
}
