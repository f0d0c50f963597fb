// Package checker decides whether a run kept its promises, from its history
// alone, with a three-valued verdict that never reports a pass it cannot
// back.
//
// Properties:
//
//   - lease-lock (P1): no two clients believed they held the same lock at
//     once, a belief lasting from the acquire's ok to min(validity deadline,
//     release). Clock jumps, amnesia and failover break it. Porcupine's
//     mutex model over belief intervals.
//   - critical-section (P2): the same with a belief lasting until the
//     critical section actually ended (the release, or the lease's last
//     resource operation). A client pause breaks it, though the lock kept
//     its promise.
//   - counter: every critical section was an atomic read-then-write
//     (porcupine, register model); lost updates counted and named.
//   - bank: the total is conserved and no balance goes negative, in exact
//     decimals; the first transfer that broke it named.
//   - set: every acknowledged add is in the final read.
//   - fencing: the tokens the storage accepted strictly increase (deciding
//     only where the storage checks them).
//
// P1 always decides the verdict. Where the storage checked fencing tokens,
// the resource checks decide and P2 explains (a fenced resource stays
// correct though critical sections overlap: that is what fencing is for);
// where it did not — no tokens, or tokens the storage ignores — the lock is
// the resource's only guard and P2 decides too: overlapping critical
// sections are a violation even when the timing happened to lose no update.
package checker

import (
	"errors"
	"fmt"
	"html"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"splitbrain/history"
)

// Verdict is the outcome of a check.
type Verdict string

const (
	// Valid: the property held over the whole history.
	Valid Verdict = "valid"
	// Invalid: a violation was found (and is explained).
	Invalid Verdict = "invalid"
	// Unknown: the checker could not decide (timeout, incomplete or
	// inconsistent history, nothing to check). Never a pass.
	Unknown Verdict = "unknown"
)

// ExitCode is Jepsen's exit code for the verdict: 0 valid, 1 invalid,
// 2 unknown.
func (v Verdict) ExitCode() int {
	switch v {
	case Valid:
		return 0
	case Invalid:
		return 1
	}
	return 2
}

// DefaultTimeout bounds each porcupine search when no WithTimeout is given.
const DefaultTimeout = 30 * time.Second

// MaxViolations caps the violations a Result lists; ViolationCount has the
// total. A random schedule can produce thousands, and the first few explain
// the failure.
const MaxViolations = 100

// MaxNotes caps the notes a Result lists, for the same reason: a long run
// can trip the same oddity on every operation, and a report that repeats it
// 40,000 times hides everything else.
const MaxNotes = 50

// Option configures Check.
type Option func(*config)

type config struct {
	timeout    time.Duration
	incomplete string
	// check runs porcupine for the lease-lock properties; tests replace it
	// to reach the timeout path without depending on scheduling.
	check func(porcupine.Model, []porcupine.Operation, time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo)
}

// WithTimeout bounds each porcupine search; 0 means no bound. A search that
// runs out of time yields Unknown.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// Incomplete says the history is only a prefix of the run (e.g. history.Parse
// reported a torn last line). A violation found in a prefix is still a
// violation, but a prefix without one is Unknown, not Valid.
func Incomplete(reason string) Option { return func(c *config) { c.incomplete = reason } }

// Violation is one pair of clients that believed they held the same lock at
// the same time (P1), or were in their critical sections at once (P2).
type Violation struct {
	Key     string    `json:"key"`
	Clients [2]string `json:"clients"`
	// From and To bound the overlap of the two intervals (ns since the
	// run started).
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Faults are the nemesis faults active at any time from the first of
	// the two acquires to the end of the overlap: the fault that breaks
	// exclusion usually acts before the overlap starts (a clock jump
	// expires the first holder's key, then the second client acquires).
	Faults []FaultWindow `json:"faults,omitempty"`
	Text   string        `json:"text"`
}

// Property names, as Result.Properties lists them.
const (
	PropLeaseLock       = "lease-lock (P1)"
	PropCriticalSection = "critical-section (P2)"
	PropCounter         = "counter"
	PropBank            = "bank"
	PropSet             = "set"
	PropFencing         = "fencing"
)

// Property is the verdict of one property.
type Property struct {
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	// Decides says whether the property is part of Result.Verdict; P2 only
	// explains where a resource was checked.
	Decides bool `json:"decides"`
}

// IntervalResult is the outcome of an interval property (P2; P1's is the
// top level of Result, where it has always been).
type IntervalResult struct {
	Verdict        Verdict     `json:"verdict"`
	Reason         string      `json:"reason"`
	Violations     []Violation `json:"violations,omitempty"`
	ViolationCount int         `json:"violation_count"`
	Ops            int         `json:"ops"`
}

// Result is the outcome of Check. It is what result.json carries.
type Result struct {
	// Verdict combines the properties that decide (see Properties).
	Verdict Verdict `json:"verdict"`
	// Reason says in words why the verdict is what it is.
	Reason string `json:"reason"`
	// Violations are P1's overlapping beliefs.
	Violations []Violation `json:"violations,omitempty"`
	// ViolationCount is the number of overlapping pairs found; Violations
	// lists at most MaxViolations of them.
	ViolationCount int `json:"violation_count"`
	// Ops is the number of porcupine operations of the P1 check.
	Ops     int       `json:"ops"`
	Keys    []KeyInfo `json:"keys,omitempty"`
	Clients []string  `json:"clients,omitempty"`
	// Faults are all nemesis faults of the run, with their windows.
	Faults []FaultWindow `json:"faults,omitempty"`
	// End is the time of the last event.
	End int64 `json:"end"`
	// Notes are oddities in the history that did not affect the verdict.
	Notes []string `json:"notes,omitempty"`
	// CheckTime is how long the check took.
	CheckTime time.Duration `json:"check_ns"`

	// Properties lists each property checked with its own verdict.
	Properties []Property `json:"properties,omitempty"`
	// CriticalSection is P2.
	CriticalSection *IntervalResult `json:"critical_section,omitempty"`
	// The resource checks, present when the history has such a resource.
	Counter *CounterResult `json:"counter,omitempty"`
	Bank    *BankResult    `json:"bank,omitempty"`
	Set     *SetResult     `json:"set,omitempty"`
	Fencing *FencingResult `json:"fencing,omitempty"`
	// OutsideLease are the applied writes that no belief of their writer's
	// lease covered, for the report to show. result.json leaves them out
	// (a run without a lock has one per write); they are found again from
	// the history.
	OutsideLease []OutsideWrite `json:"-"`
	// Visualized names the property whose failing window
	// WriteVisualization shows.
	Visualized string `json:"visualized,omitempty"`

	viz *visualization
}

// ErrNoVisualization is returned by WriteVisualization when the result has no
// failing window to show (it is not Invalid, or it was read back from JSON).
var ErrNoVisualization = errors.New("checker: no porcupine visualization for this result")

// HasVisualization reports whether WriteVisualization has something to write.
func (r *Result) HasVisualization() bool { return r.viz != nil }

// Check checks a history against every property it has the operations for.
//
// For the lease-lock properties each acquire the client saw succeed is an
// acquire(c) operation over its [invoke, ok] interval and a zero-length
// expire(c) at the end of the belief. Failed, unknown and pending acquires
// are not operations: the client never believed it held the lock, and an
// unknown outcome kept as an operation makes the search explode. They are
// reported as attempts.
func Check(events []history.Event, opts ...Option) (res Result) {
	started := time.Now()
	cfg := config{timeout: DefaultTimeout, check: checkQuiet}
	for _, o := range opts {
		o(&cfg)
	}
	defer func() {
		if r := recover(); r != nil {
			res.Verdict = Unknown
			res.Reason = fmt.Sprintf("the checker failed: %v", r)
			res.Notes = append(res.Notes, "panic: "+string(debug.Stack()))
			res.viz = nil
		}
		res.CheckTime = time.Since(started)
	}()

	if len(events) == 0 {
		res = Result{Verdict: Unknown, Reason: "no operations recorded"}
		if cfg.incomplete != "" {
			res.Reason += "; the history is incomplete (" + cfg.incomplete + ")"
		}
		return res
	}
	a := analyze(events)
	res = Result{End: a.end, Clients: a.clients, Faults: a.faults}
	defer func() {
		// The checks add notes as they go.
		res.Notes = capNotes(append(a.notes, res.Notes...))
	}()
	for _, k := range sortedKeys(a.keys) {
		res.Keys = append(res.Keys, *a.keys[k])
	}
	res.OutsideLease = outsideWrites(a.ops, res.Keys)
	if len(a.problems) > 0 {
		res.Verdict = Unknown
		res.Reason = "the history is inconsistent, so it cannot be judged: " + joinFirst(a.problems, 3)
		return res
	}

	p1 := checkIntervals(&cfg, res.Keys, res.Clients, res.Faults, false, nil)
	res.Verdict, res.Reason, res.Violations, res.ViolationCount, res.Ops =
		p1.res.Verdict, p1.res.Reason, p1.res.Violations, p1.res.ViolationCount, p1.res.Ops
	var reuse *intervalCheck
	if sameIntervals(res.Keys) {
		reuse = &p1
	}
	p2 := checkIntervals(&cfg, res.Keys, res.Clients, res.Faults, true, reuse)
	res.CriticalSection = &p2.res

	rc := checkResources(a, &cfg)
	res.Counter, res.Bank, res.Set, res.Fencing = rc.counter, rc.bank, rc.set, rc.fencing
	a.notes = append(a.notes, rc.notes...)

	guarded := rc.fencing != nil && rc.fencing.StorageFences
	res.Properties = []Property{
		{PropLeaseLock, p1.res.Verdict, p1.res.Reason, true},
		{PropCriticalSection, p2.res.Verdict, p2.res.Reason, !guarded},
	}
	res.Properties = append(res.Properties, rc.properties()...)
	res.Verdict, res.Reason = combine(res.Properties)

	switch {
	case res.Verdict == Valid && cfg.incomplete != "":
		res.Verdict = Unknown
		res.Reason = "the history is incomplete (" + cfg.incomplete + "); its prefix shows no violation"
	case res.Verdict == Unknown && cfg.incomplete != "":
		// Why the run stopped explains the unknown better than what the
		// checker missed because of it ("no operations recorded").
		res.Reason += "; the history is incomplete (" + cfg.incomplete + ")"
	}
	res.Visualized, res.viz = pickVisualization(&cfg, &res, p1, p2, rc)
	return res
}

// checkQuiet runs porcupine without the linearization info a visualization
// needs: that info costs memory for every partition, and only the failing
// window is ever drawn (WriteVisualization checks it again, verbosely).
func checkQuiet(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsTimeout(m, ops, timeout), porcupine.LinearizationInfo{}
}

// combine folds the deciding properties into one verdict: any invalid makes
// it invalid, else any unknown makes it unknown. The reason names what
// decided; P2 is left out of an invalid reason that P1 already gives, since
// P2's intervals contain P1's.
func combine(props []Property) (Verdict, string) {
	var invalid, unknown, valid []string
	p1Invalid := false
	seen := map[string]bool{}
	for _, p := range props {
		if !p.Decides || seen[p.Reason] {
			continue
		}
		seen[p.Reason] = true
		switch p.Verdict {
		case Invalid:
			if p.Name == PropLeaseLock {
				p1Invalid = true
			}
			if p.Name == PropCriticalSection && p1Invalid {
				continue
			}
			invalid = append(invalid, p.Reason)
		case Valid:
			valid = append(valid, p.Reason)
		default:
			unknown = append(unknown, p.Reason)
		}
	}
	switch {
	case len(invalid) > 0:
		return Invalid, strings.Join(invalid, "; ")
	case len(unknown) > 0:
		return Unknown, strings.Join(unknown, "; ")
	}
	return Valid, strings.Join(valid, "; ")
}

// pickVisualization chooses the failing window to show: P1's if the lock
// broke its promise, else the counter's or the bank's, else P2's overlap
// (which explains a set violation, or decides a lock-only run).
func pickVisualization(cfg *config, res *Result, p1, p2 intervalCheck, rc resourceChecks) (string, *visualization) {
	if res.Verdict != Invalid {
		return "", nil
	}
	if p1.res.Verdict == Invalid {
		if v := p1.window(cfg, res); v != nil {
			return PropLeaseLock, v
		}
	}
	if rc.counterViz != nil {
		return PropCounter, rc.counterViz(res.Faults)
	}
	if rc.bankViz != nil {
		if v := rc.bankViz(res.Faults); v != nil {
			return PropBank, v
		}
	}
	if p2.res.Verdict == Invalid {
		if v := p2.window(cfg, res); v != nil {
			return PropCriticalSection, v
		}
	}
	return "", nil
}

// visualization is what WriteVisualization needs: only the failing window,
// because porcupine's page for a whole long history can reach hundreds of MB.
type visualization struct {
	model       porcupine.Model
	ops         []porcupine.Operation
	annotations []porcupine.Annotation
	timeout     time.Duration
}

// WriteVisualization writes porcupine's HTML visualization of the failing
// window of an Invalid result, with nemesis faults and failed or unknown
// acquires as annotations.
func (r *Result) WriteVisualization(w io.Writer) (err error) {
	if r.viz == nil {
		return ErrNoVisualization
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("checker: porcupine visualization failed: %v", p)
		}
	}()
	_, info := porcupine.CheckOperationsVerbose(r.viz.model, r.viz.ops, r.viz.timeout)
	info.AddAnnotations(r.viz.annotations)
	if err := porcupine.Visualize(escapedModel(r.viz.model), info, w); err != nil {
		return fmt.Errorf("checker: porcupine visualization: %w", err)
	}
	return nil
}

// escapedModel escapes what porcupine's page puts into innerHTML: an
// operation's metadata and the model's states (its tooltips are built as
// HTML from them). They hold text from the history — process names,
// values, errors — and the page's own script needs 'unsafe-inline', so a
// stored history must not be able to put markup there. Descriptions of
// operations and annotations go into textContent and are left as they are.
func escapedModel(m porcupine.Model) porcupine.Model {
	state, meta := m.DescribeState, m.DescribeOperationMetadata
	m.DescribeState = func(s interface{}) string {
		if state == nil {
			return html.EscapeString(fmt.Sprintf("%v", s))
		}
		return html.EscapeString(state(s))
	}
	m.DescribeOperationMetadata = func(info interface{}) string {
		switch {
		case info == nil:
			return ""
		case meta == nil:
			return html.EscapeString(fmt.Sprintf("%v", info))
		}
		return html.EscapeString(meta(info))
	}
	return m
}

// faultAnnotations shades the faults active in [from, to].
func faultAnnotations(faults []FaultWindow, from, to int64) []porcupine.Annotation {
	var anns []porcupine.Annotation
	for _, f := range faults {
		if f.End < from || f.Start > to {
			continue
		}
		anns = append(anns, porcupine.Annotation{
			Tag:             "nemesis",
			Start:           max(f.Start, from),
			End:             min(f.End, to),
			Description:     f.Label(),
			Details:         faultWhen(f) + detailSuffix(f.Detail),
			BackgroundColor: faultColor(f.Kind),
		})
	}
	return anns
}

func detailSuffix(d string) string {
	if d == "" {
		return ""
	}
	return " — " + d
}

func faultColor(kind string) string {
	switch {
	case strings.Contains(kind, "clock"):
		return "#fff1b8"
	case strings.Contains(kind, "cut"), strings.Contains(kind, "partition"), strings.Contains(kind, "delay"):
		return "#ffd6d6"
	}
	return "#dde7ff"
}

func faultWhen(f FaultWindow) string {
	switch {
	case f.End == f.Start:
		return fmt.Sprintf("%s at %s", f.Label(), Seconds(f.Start))
	case !f.Healed:
		return fmt.Sprintf("%s from %s, never healed", f.Label(), Seconds(f.Start))
	}
	return fmt.Sprintf("%s %s–%s", f.Label(), Seconds(f.Start), Seconds(f.End))
}

// faultsDuring are the faults active at any time in [from, to], as labels.
func faultsDuring(faults []FaultWindow, from, to int64) ([]FaultWindow, []string) {
	var out []FaultWindow
	var labels []string
	for _, f := range faults {
		if f.Start <= to && f.End >= from {
			out = append(out, f)
			labels = append(labels, faultWhen(f))
		}
	}
	return out, labels
}

func joinFirst(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
}

// capNotes keeps the first MaxNotes notes and says how many were left out.
func capNotes(notes []string) []string {
	if len(notes) <= MaxNotes {
		return notes
	}
	out := append([]string(nil), notes[:MaxNotes]...)
	return append(out, fmt.Sprintf("… and %d more note(s) not listed", len(notes)-MaxNotes))
}
