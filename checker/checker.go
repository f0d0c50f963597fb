// Package checker decides whether a run kept its promises: the lease-lock
// check (did two clients ever believe they held the same lock at once?) with
// porcupine, and a three-valued verdict that never reports a pass it cannot
// back.
package checker

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"sort"
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

// DefaultTimeout bounds the porcupine search when no WithTimeout is given.
const DefaultTimeout = 30 * time.Second

// MaxViolations caps the violations a Result lists; ViolationCount has the
// total. A random schedule can produce thousands, and the first few explain
// the failure.
const MaxViolations = 100

// Option configures Check.
type Option func(*config)

type config struct {
	timeout    time.Duration
	incomplete string
	// check is porcupine.CheckOperationsVerbose; tests replace it to reach
	// the timeout path without depending on scheduling.
	check func(porcupine.Model, []porcupine.Operation, time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo)
}

// WithTimeout bounds the porcupine search; 0 means no bound. A search that
// runs out of time yields Unknown.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// Incomplete says the history is only a prefix of the run (e.g. history.Parse
// reported a torn last line). A violation found in a prefix is still a
// violation, but a prefix without one is Unknown, not Valid.
func Incomplete(reason string) Option { return func(c *config) { c.incomplete = reason } }

// Violation is one pair of clients that believed they held the same lock at
// the same time.
type Violation struct {
	Key     string    `json:"key"`
	Clients [2]string `json:"clients"`
	// From and To bound the overlap of the two belief intervals (ns since
	// the run started).
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Faults are the nemesis faults active at any time from the first of
	// the two acquires to the end of the overlap: the fault that breaks
	// exclusion usually acts before the overlap starts (a clock jump
	// expires the first holder's key, then the second client acquires).
	Faults []FaultWindow `json:"faults,omitempty"`
	Text   string        `json:"text"`
}

// Result is the outcome of the lease-lock check. It is what result.json
// carries.
type Result struct {
	Verdict Verdict `json:"verdict"`
	// Reason says in words why the verdict is what it is.
	Reason     string      `json:"reason"`
	Violations []Violation `json:"violations,omitempty"`
	// ViolationCount is the number of overlapping pairs found; Violations
	// lists at most MaxViolations of them.
	ViolationCount int `json:"violation_count"`
	// Ops is the number of porcupine operations checked.
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

	viz *visualization
}

// ErrNoVisualization is returned by WriteVisualization when the result has no
// failing window to show (it is not Invalid, or it was read back from JSON).
var ErrNoVisualization = errors.New("checker: no porcupine visualization for this result")

// HasVisualization reports whether WriteVisualization has something to write.
func (r *Result) HasVisualization() bool { return r.viz != nil }

// Check runs the lease-lock check on a history.
//
// For each acquire the client saw succeed there is an acquire(c) operation
// over its [invoke, ok] interval and a zero-length expire(c) at
// min(validity deadline, invoke of the client's next release of that key).
// Failed, unknown and pending acquires are not operations: the client never
// believed it held the lock, and an unknown outcome kept as an operation
// makes the search explode. They are reported as attempts.
func Check(events []history.Event, opts ...Option) (res Result) {
	started := time.Now()
	cfg := config{timeout: DefaultTimeout, check: porcupine.CheckOperationsVerbose}
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
		return Result{Verdict: Unknown, Reason: "no operations recorded"}
	}
	a := analyze(events)
	res = Result{End: a.end, Clients: a.clients, Faults: a.faults, Notes: a.notes}
	for _, k := range sortedKeys(a.keys) {
		res.Keys = append(res.Keys, *a.keys[k])
	}
	if len(a.problems) > 0 {
		res.Verdict = Unknown
		res.Reason = "the history is inconsistent, so it cannot be judged: " + joinFirst(a.problems, 3)
		return res
	}

	ops := operations(res.Keys, a.clients)
	res.Ops = len(ops)
	if len(ops) == 0 {
		res.Verdict = Unknown
		if countAttempts(res.Keys) == 0 {
			res.Reason = "no operations recorded"
		} else {
			res.Reason = "no acquire succeeded, so mutual exclusion was never tested"
		}
		return res
	}

	model := MutexModel()
	outcome, _ := cfg.check(model, ops, cfg.timeout)
	all := overlaps(res.Keys, res.Faults)
	res.ViolationCount = len(all)
	if len(all) > MaxViolations {
		all = all[:MaxViolations]
	}
	res.Violations = all

	switch {
	case outcome == porcupine.Illegal && len(all) > 0:
		res.Verdict = Invalid
		res.Reason = fmt.Sprintf("mutual exclusion violated: %d overlapping belief interval(s)", res.ViolationCount)
	case outcome == porcupine.Illegal:
		res.Verdict = Invalid
		res.Reason = "mutual exclusion violated: porcupine found no order of the acquires and expiries " +
			"in which one client at a time held the lock, though no two belief intervals overlap by more than an instant"
	case len(all) > 0:
		// Two overlapping belief intervals are a counterexample on their
		// own: whichever acquire took effect first, the other took effect
		// before it expired. That holds whatever porcupine said.
		res.Verdict = Invalid
		res.Reason = fmt.Sprintf("mutual exclusion violated: %d overlapping belief interval(s) (porcupine: %s)",
			res.ViolationCount, strings.ToLower(string(outcome)))
	case outcome == porcupine.Unknown:
		res.Verdict = Unknown
		res.Reason = fmt.Sprintf("porcupine did not finish within %s", cfg.timeout)
		return res
	default:
		res.Verdict = Valid
		res.Reason = fmt.Sprintf("%d successful acquire(s) on %d key(s): no two clients believed they held the same lock at once",
			countBeliefs(res.Keys), len(res.Keys))
	}
	if res.Verdict == Valid && cfg.incomplete != "" {
		res.Verdict = Unknown
		res.Reason = "the history is incomplete (" + cfg.incomplete + "); its prefix shows no violation"
	}
	if res.Verdict == Invalid {
		res.viz = failingWindow(model, ops, res, outcome == porcupine.Illegal, cfg.timeout)
	}
	return res
}

// operations builds the porcupine history from belief intervals.
func operations(keys []KeyInfo, clients []string) []porcupine.Operation {
	ids := make(map[string]int, len(clients))
	for i, c := range clients {
		ids[c] = i
	}
	var ops []porcupine.Operation
	for _, k := range keys {
		for _, b := range k.Beliefs {
			meta := fmt.Sprintf("%s: events %d→%d", b.Client, b.InvokeIndex, b.OKIndex)
			ops = append(ops, porcupine.Operation{
				ClientId: ids[b.Client],
				Input:    MutexInput{Op: OpAcquire, Client: b.Client, Key: b.Key},
				Call:     b.Invoke,
				Return:   b.Start,
				Metadata: meta,
			})
			if b.EndReason == EndOpen {
				// Held to the end of the history: no expiry to check.
				continue
			}
			ops = append(ops, porcupine.Operation{
				ClientId: ids[b.Client],
				Input:    MutexInput{Op: OpExpire, Client: b.Client, Key: b.Key},
				Call:     b.End,
				Return:   b.End,
				Metadata: fmt.Sprintf("%s: belief ended (%s)", b.Client, b.EndReason),
			})
		}
	}
	return ops
}

// overlaps finds every pair of beliefs of different clients on one key that
// overlap for more than an instant, or where one is an instant strictly
// inside the other. Touching intervals do not count: porcupine's intervals
// are closed, so an acquire may take effect at the very instant of the
// previous holder's expiry.
func overlaps(keys []KeyInfo, faults []FaultWindow) []Violation {
	var out []Violation
	for _, k := range keys {
		bs := k.Beliefs // sorted by Start
		for i := range bs {
			for j := i + 1; j < len(bs) && bs[j].Start <= beliefEnd(bs[i]); j++ {
				x, y := bs[i], bs[j]
				if x.Client == y.Client {
					continue
				}
				from, to := max(x.Start, y.Start), min(beliefEnd(x), beliefEnd(y))
				if !(from < to || (from == to && (strictlyInside(from, x) || strictlyInside(from, y)))) {
					continue
				}
				out = append(out, violation(k.Key, x, y, from, to, faults))
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out
}

func strictlyInside(t int64, b Belief) bool { return b.Start < t && t < beliefEnd(b) }

// beliefEnd is End, except that an open belief (no deadline, no release)
// never ended: its End is only where the history stops.
func beliefEnd(b Belief) int64 {
	if b.EndReason == EndOpen {
		return math.MaxInt64
	}
	return b.End
}

func violation(key string, x, y Belief, from, to int64, faults []FaultWindow) Violation {
	v := Violation{Key: key, Clients: [2]string{x.Client, y.Client}, From: from, To: to}
	since := min(x.Invoke, y.Invoke)
	var labels []string
	for _, f := range faults {
		if f.Start <= to && f.End >= since {
			v.Faults = append(v.Faults, f)
			labels = append(labels, faultWhen(f))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s and %s both believed they held lock %q from %s to %s (%s)",
		x.Client, y.Client, key, Seconds(from), Seconds(to), Seconds(to-from))
	if len(labels) > 0 {
		b.WriteString("; active faults: " + strings.Join(labels, "; "))
	} else {
		b.WriteString("; no fault was active")
	}
	v.Text = b.String()
	return v
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

func sortedKeys(m map[string]*KeyInfo) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func countAttempts(keys []KeyInfo) int {
	n := 0
	for _, k := range keys {
		n += len(k.Attempts)
	}
	return n
}

func countBeliefs(keys []KeyInfo) int {
	n := 0
	for _, k := range keys {
		n += len(k.Beliefs)
	}
	return n
}

func joinFirst(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
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
	if err := porcupine.Visualize(r.viz.model, info, w); err != nil {
		return fmt.Errorf("checker: porcupine visualization: %w", err)
	}
	return nil
}

// failingWindow picks the partitions porcupine rejects (or, when porcupine
// did not decide, those holding a violation) and renumbers their clients
// densely so the visualization has no empty lanes.
func failingWindow(model porcupine.Model, ops []porcupine.Operation, res Result, illegal bool, timeout time.Duration) *visualization {
	var picked []porcupine.Operation
	for _, part := range model.Partition(append([]porcupine.Operation(nil), ops...)) {
		// Pieces are small after the quiescent split, so re-checking each
		// is cheap; it finds the failing one even when no two belief
		// intervals overlap.
		if holdsViolation(part, res.Violations) ||
			illegal && porcupine.CheckOperationsTimeout(model, part, timeout) == porcupine.Illegal {
			picked = append(picked, part...)
		}
	}
	if len(picked) == 0 {
		return nil
	}
	from, to := picked[0].Call, picked[0].Return
	dense := map[string]int{}
	keys := map[string]bool{}
	var names []string
	for _, op := range picked {
		from, to = min(from, op.Call), max(to, op.Return)
		keys[inputOf(op).Key] = true
		c := inputOf(op).Client
		if _, ok := dense[c]; !ok {
			dense[c] = 0
			names = append(names, c)
		}
	}
	SortNatural(names)
	for i, c := range names {
		dense[c] = i
	}
	for i := range picked {
		picked[i].ClientId = dense[inputOf(picked[i]).Client]
	}

	var anns []porcupine.Annotation
	for _, f := range res.Faults {
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
	for _, k := range res.Keys {
		if !keys[k.Key] {
			continue
		}
		for _, at := range k.Attempts {
			if at.End < from || at.Invoke > to {
				continue
			}
			id, ok := dense[at.Client]
			if !ok {
				// A client that only failed in this window still gets
				// a lane: its failures are part of the story.
				id = len(dense)
				dense[at.Client] = id
			}
			anns = append(anns, porcupine.Annotation{
				ClientId:        id,
				Start:           max(at.Invoke, from),
				End:             min(at.End, to),
				Description:     fmt.Sprintf("%s acquire %q: %s", at.Client, at.Key, at.Outcome),
				Details:         at.Err,
				BackgroundColor: "#e5e5e5",
			})
		}
	}
	return &visualization{model: model, ops: picked, annotations: anns, timeout: timeout}
}

func holdsViolation(part []porcupine.Operation, vs []Violation) bool {
	if len(part) == 0 {
		return false
	}
	key := inputOf(part[0]).Key
	from, to := part[0].Call, part[0].Return
	for _, op := range part {
		from, to = min(from, op.Call), max(to, op.Return)
	}
	for _, v := range vs {
		if v.Key == key && v.From <= to && v.To >= from {
			return true
		}
	}
	return false
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

func inputOf(op porcupine.Operation) MutexInput {
	in, _ := op.Input.(MutexInput)
	return in
}
