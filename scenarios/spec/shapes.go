package spec

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"splitbrain/locks"
)

// A fault family is written once and played against every lock in the
// shape of that lock's deployment (DESIGN.md, "the landscape of
// promises"): a clock jump after the grant is a jump of n3's clock between
// two Redlock grants on five independent masters, a jump of the one
// master's clock for a lock of one deployment, and a jump of a member's
// clock under a ZooKeeper session. The file says the family once — its
// name, its story, its workload, its lock's parameters and its
// expectations — and under shapes: what differs per deployment, usually
// the cluster and the steps:
//
//	shapes:
//	  masters:  {cluster: {nodes: 5}, steps: [...]}
//	  one:      {cluster: {nodes: 1}, steps: [...]}
//	  ensemble: {cluster: {nodes: 3}, steps: [...], expect: {...}}
//
// A shape's cluster, lock and workload fields replace the top level's
// field by field, its expect entries replace the top level's lock by lock
// (default too), and its steps replace the top level's steps. Each shape
// is parsed as a story of its own (Shapes), with the file's lines in
// its errors; every lock kind of that shape plays it (PlayAgainst), and
// the matrix's row is the family's name whichever shape a lock plays.

// shapeSpec is one shape's section.
type shapeSpec struct {
	Cluster  clusterSpec  `yaml:"cluster"`
	Lock     lockSpec     `yaml:"lock"`
	Workload workloadSpec `yaml:"workload"`
	Steps    []yaml.Node  `yaml:"steps"`
	Expect   yaml.Node    `yaml:"expect"`
}

// ShapeNames are the keys of shapes:, in the order the variants are
// listed, and the deployment each names.
var ShapeNames = []string{"masters", "one", "ensemble"}

var shapeOf = map[string]locks.Shape{"masters": locks.Masters, "one": locks.OneDeployment, "ensemble": locks.Ensemble}

// ShapeName is the shapes: key of shape s.
func ShapeName(s locks.Shape) string {
	for name, v := range shapeOf {
		if v == s {
			return name
		}
	}
	return s.String()
}

// defaultKind is the lock a shape plays when neither it nor the top level
// names one: the first built-in lock of that deployment.
func defaultKind(s locks.Shape) string {
	for _, name := range locks.Matrix() {
		if k := locks.ByName(name); k != nil && k.Shape == s && !k.Driver {
			return name
		}
	}
	return locks.Redlock.Name
}

// variants parses a family's shapes: each shape's fields over the top
// level's, parsed as a story of its own. It returns nil when the file has
// no shapes.
func (p *parser) variants(s *fileSpec) map[locks.Shape]*Scenario {
	if len(s.Shapes) == 0 {
		if s.ShapesNode.Kind != 0 {
			p.fail(&s.ShapesNode, "shapes", "empty; want one or more of %s, each with the cluster and steps of that deployment", strings.Join(ShapeNames, ", "))
		}
		return nil
	}
	out := map[locks.Shape]*Scenario{}
	for i := 0; i+1 < len(s.ShapesNode.Content); i += 2 {
		key := s.ShapesNode.Content[i]
		shape, ok := shapeOf[key.Value]
		if !ok {
			p.fail(key, "shapes."+key.Value, "not a deployment; want %s (independent masters, one master with its replicas, a consensus ensemble)", strings.Join(ShapeNames, ", "))
			continue
		}
		sh := s.Shapes[key.Value]
		merged := *s
		overlay(&merged.Cluster, &sh.Cluster)
		overlay(&merged.Lock, &sh.Lock)
		overlay(&merged.Workload, &sh.Workload)
		if sh.Steps != nil {
			merged.Steps = sh.Steps
		}
		merged.Expect = mergeMapping(s.Expect, sh.Expect)
		if merged.Lock.Kind.Kind == 0 {
			merged.Lock.Kind = yaml.Node{Kind: yaml.ScalarNode, Value: defaultKind(shape), Line: key.Line, Column: key.Column}
		}
		errs := len(p.errs)
		v := p.scenario(&merged)
		v.Shape = shape
		if len(p.errs) == errs {
			p.shapeKinds(&merged.Lock.Kind, key.Value, shape, v.Locks)
		}
		out[shape] = v
	}
	return out
}

// shapeKinds checks that the locks a shape lists are of its deployment.
func (p *parser) shapeKinds(n *yaml.Node, key string, shape locks.Shape, kinds []string) {
	for _, k := range kinds {
		if lk := locks.ByName(k); lk != nil && !lk.Driver && lk.Shape != shape {
			p.fail(n, "shapes."+key+".lock.kind", "%s runs on %s; shapes.%s plays the locks of %s (%s)", k, lk.Shape, key, shape, strings.Join(kindsOf(shape), ", "))
		}
	}
}

// kindsOf are the built-in lock kinds of a shape.
func kindsOf(shape locks.Shape) []string {
	var out []string
	for _, name := range locks.Matrix() {
		if k := locks.ByName(name); k != nil && k.Shape == shape {
			out = append(out, name)
		}
	}
	return out
}

// overlay sets each yaml.Node field of dst that src sets (a section of
// the file, field by field).
func overlay[T any](dst, src *T) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := range d.NumField() {
		if n, ok := s.Field(i).Addr().Interface().(*yaml.Node); ok && n.Kind != 0 {
			d.Field(i).Set(s.Field(i))
		}
	}
}

// mergeMapping is top with over's keys replacing its own; either may be
// absent. A non-mapping over replaces top whole (the parser then says
// what is wrong with it).
func mergeMapping(top, over yaml.Node) yaml.Node {
	if over.Kind == 0 {
		return top
	}
	if top.Kind != yaml.MappingNode || over.Kind != yaml.MappingNode {
		return over
	}
	out := over
	out.Content = slices.Clone(over.Content)
	for i := 0; i+1 < len(top.Content); i += 2 {
		k := top.Content[i].Value
		if !slices.ContainsFunc(pairsKeys(over.Content), func(o string) bool { return o == k }) {
			out.Content = append(out.Content, top.Content[i], top.Content[i+1])
		}
	}
	return out
}

func pairsKeys(content []*yaml.Node) []string {
	var out []string
	for i := 0; i+1 < len(content); i += 2 {
		out = append(out, content[i].Value)
	}
	return out
}

// family makes the scenario Parse returns for a file with shapes: its
// first variant, with every variant beside it (Shapes) and the lock
// kinds of all of them (Locks), so that Plays plays each listed lock on
// its shape.
func family(vs map[locks.Shape]*Scenario) *Scenario {
	var first *Scenario
	var kinds []string
	for _, name := range ShapeNames {
		v := vs[shapeOf[name]]
		if v == nil {
			continue
		}
		if first == nil {
			first = v
		}
		kinds = append(kinds, v.Locks...)
	}
	sc := *first
	sc.Shapes = vs
	sc.Locks = kinds
	return &sc
}

// ForLock is the story as lock kind k plays it: the variant of k's
// deployment for a family (nil when the family has none), the story
// itself otherwise.
func (sc *Scenario) ForLock(k string) *Scenario {
	if sc.Shapes == nil {
		return sc
	}
	lk := sc.KindOf(k)
	if lk == nil {
		return nil
	}
	v := sc.Shapes[lk.Shape]
	if v == nil {
		return nil
	}
	c := *v
	c.Shapes, c.Drivers, c.Source, c.File = sc.Shapes, sc.Drivers, sc.Source, sc.File
	return &c
}

// ShapesText lists the deployments a family is written for.
func (sc *Scenario) ShapesText() string {
	var out []string
	for _, name := range ShapeNames {
		if sc.Shapes[shapeOf[name]] != nil {
			out = append(out, shapeOf[name].String())
		}
	}
	return strings.Join(out, ", ")
}

// checkShape is Variant's error for a kind the family has no shape for.
func (sc *Scenario) checkShape(k string) error {
	if sc.ForLock(k) != nil {
		return nil
	}
	lk := sc.KindOf(k)
	if lk == nil {
		return fmt.Errorf("%q is not a lock kind", k)
	}
	return fmt.Errorf("%s is written for %s, and %s runs on %s", sc.Name, sc.ShapesText(), k, lk.Shape)
}
