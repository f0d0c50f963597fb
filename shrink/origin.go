package shrink

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/internal/regular"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

// origin is the run being shrunk: what it played and what it broke.
type origin struct {
	dir  string // the run folder, symbolic links resolved
	meta runstore.Meta
	res  checker.Result // result.json's summary
	// sc is the scenario as the run played it: its lock alone, its
	// number of clients and its workload's duration (run's --lock,
	// --clients and --time included).
	sc *spec.Scenario
	// prop is the property to keep violating: the run's first invalid
	// property that decides its verdict.
	prop   string
	faults []spec.TimedFault
	// doc is the run's scenario.yaml as parsed: candidates are written
	// from it, so that what they do not change (the cluster, the lock's
	// parameters, the workload's kind) stays as the file had it.
	doc *yaml.Node
}

func notShrinkable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotShrinkable, fmt.Sprintf(format, args...))
}

// load reads a run folder and checks that it can be shrunk.
func load(dir string) (*origin, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, notShrinkable("%s is not a run folder: %v", dir, err)
	}
	rec, err := runstore.ReadRecord(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notShrinkable("%s is not a finished run: it has no %s (a run folder such as store/random-clock-counter/latest)", dir, runstore.ResultFile)
	}
	if err != nil {
		return nil, notShrinkable("%s: %v", dir, err)
	}
	if rec.Result.Verdict != checker.Invalid {
		return nil, fmt.Errorf("%w: %s is %s, not invalid: there is no violation to shrink to (%s)", ErrNotInvalid, dir, rec.Result.Verdict, rec.Result.Reason)
	}
	o := &origin{dir: abs, meta: rec.Meta, res: rec.Result}
	for _, p := range rec.Result.Properties {
		if p.Decides && p.Verdict == checker.Invalid {
			o.prop = p.Name
			break
		}
	}
	if o.prop == "" {
		return nil, fmt.Errorf("%w: %s is invalid but names no invalid property (%s); it was judged by an older splitbrain: re-judge it with splitbrain check %s", ErrNotInvalid, dir, rec.Result.Reason, dir)
	}
	path := filepath.Join(abs, runner.ScenarioFile)
	src, err := regular.ReadFile(path, spec.MaxFileSize)
	if err != nil {
		return nil, notShrinkable("%s has no %s, the scenario it played: %v", dir, runner.ScenarioFile, err)
	}
	sc, err := spec.Parse(src, path)
	if err != nil {
		return nil, notShrinkable("%v", err)
	}
	if !sc.Workload.Generated() {
		return nil, notShrinkable("%s played %s, a scripted scenario: its steps are its story already; shrink is for a generated workload (workload.kind mutex, counter, bank or set) under faults", dir, sc.Name)
	}
	if o.sc, err = played(sc, rec.Meta); err != nil {
		return nil, notShrinkable("%s: %v", dir, err)
	}
	o.faults, _, err = o.sc.Unroll(rec.Meta.Seed)
	if err != nil {
		return nil, notShrinkable("%v", err)
	}
	if err := o.checkFaults(); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, notShrinkable("%s: not a mapping at the top: %v", path, err)
	}
	o.doc = &doc
	return o, nil
}

// played is sc as meta says it was played: one lock, that number of
// clients, and the duration run's --time gave, if it gave one (the
// command that re-runs the run names it).
func played(sc *spec.Scenario, meta runstore.Meta) (*spec.Scenario, error) {
	if meta.Lock != "" {
		sc = sc.PlayAgainst(meta.Lock)
	}
	var o spec.Overrides
	if n := len(meta.Clients); n > 0 && n != len(sc.Clients) {
		o.Clients = n
	}
	d, err := timeFlag(meta.Command)
	if err != nil {
		return nil, err
	}
	o.Duration = d
	if err := sc.Override(o); err != nil {
		return nil, err
	}
	return sc, nil
}

// timeFlag reads --time from a run command; zero when it has none.
func timeFlag(command string) (time.Duration, error) {
	args := strings.Fields(command)
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--time=")
		if a == "--time" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return 0, fmt.Errorf("its command %q: --time %q: %w", command, v, err)
			}
			return d, nil
		}
	}
	return 0, nil
}

// checkFaults compares the faults the run recorded with those its
// scenario draws from its seed: shrinking replays the drawn ones, so they
// must be the ones that broke the run. A run cut short recorded the first
// of them only.
func (o *origin) checkFaults() error {
	var drawn, recorded []string
	for _, f := range o.faults {
		for _, r := range f.Records {
			drawn = append(drawn, checker.FaultLabel(r))
		}
	}
	for _, f := range o.res.Faults {
		if f.Kind == "client-pause-held" {
			continue // the stretch a client pause held its client
		}
		recorded = append(recorded, checker.FaultLabel(history.Fault{Kind: f.Kind, Nodes: f.Nodes, Links: f.Links, Offset: f.Offset, Rate: f.Rate}))
	}
	for i, r := range recorded {
		if i >= len(drawn) || r != drawn[i] {
			want := "nothing more"
			if i < len(drawn) {
				want = drawn[i]
			}
			return notShrinkable("%s recorded fault %d as %q, but its scenario with seed %d draws %s there: the run was made by another version of splitbrain, or its %s was changed since",
				o.dir, i+1, r, o.meta.Seed, want, runner.ScenarioFile)
		}
	}
	return nil
}
