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
//   - deadlock-freedom and fault-tolerance: the lock's liveness promises
//     (package liveness), with the play's availability figures. Each
//     decides only where the play expects it (JudgeLiveness); otherwise
//     it is reported.
//
// P1 always decides the verdict. Where the storage checked fencing tokens,
// the resource checks decide and P2 explains (a fenced resource stays
// correct though critical sections overlap: that is what fencing is for);
// where it did not — no tokens, or tokens the storage ignores — the lock is
// the resource's only guard and P2 decides too: overlapping critical
// sections are a violation even when the timing happened to lose no update.
//
// Each property is a verdict.Checker of its own (package lease: P1 and P2;
// package resource: counter, bank, set, fencing) over the history as
// package paired reads it; Check composes them (verdict.Compose) in the
// order of checkers below. The types of those packages are named here too,
// so that a caller needs only this package.
package checker

import (
	"errors"
	"fmt"
	"html"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"splitbrain/checker/lease"
	"splitbrain/checker/liveness"
	"splitbrain/checker/paired"
	"splitbrain/checker/resource"
	"splitbrain/checker/search"
	"splitbrain/checker/verdict"
	"splitbrain/history"
)

// DefaultTimeout bounds each porcupine search when no WithTimeout is given.
const DefaultTimeout = 30 * time.Second

// MaxNotes caps the notes a Result lists, as MaxViolations caps its
// violations: a long run can trip the same oddity on every operation, and a
// report that repeats it 40,000 times hides everything else.
const MaxNotes = 50

// Option configures Check.
type Option func(*config)

type config struct {
	timeout    time.Duration
	incomplete string
	// deadlockFreedom, faultTolerance: the liveness promise decides the
	// verdict.
	deadlockFreedom, faultTolerance bool
	// check runs porcupine (search.Config.Run); tests replace it to reach
	// the timeout path without depending on scheduling.
	check func(porcupine.Model, []porcupine.Operation, time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo)
}

// checkers are the properties Check checks, in the order Result.Properties
// lists them; each stores its result where it is pointed to. The liveness
// promises read the events themselves (the lock's setup, its releases and
// extensions) beside the paired history.
func checkers(p1, p2 *IntervalResult, tokens **TokenResult, rs *resource.Results,
	events []history.Event, cfg config, live **LivenessResult, avail **Availability) []verdict.Checker {
	leaseLock, criticalSection := lease.Checkers(p1, p2)
	out := append([]verdict.Checker{leaseLock, lease.TokensChecker(tokens), criticalSection}, resource.Checkers(rs)...)
	return append(out, liveness.Checkers(events, cfg.deadlockFreedom, cfg.faultTolerance, live, avail)...)
}

// WithTimeout bounds each porcupine search; 0 means no bound. A search that
// runs out of time yields Unknown.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// JudgeLiveness makes the lock's liveness promises part of the verdict,
// deadlock freedom with df, fault tolerance with ft, as for a play that
// expects them (Expectation.Options); a promise not made part of it is
// judged and reported, and decides nothing.
func JudgeLiveness(df, ft bool) Option {
	return func(c *config) { c.deadlockFreedom, c.faultTolerance = df, ft }
}

// Incomplete says the history is only a prefix of the run (e.g. history.Parse
// reported a torn last line). A violation found in a prefix is still a
// violation, but a prefix without one is Unknown, not Valid.
func Incomplete(reason string) Option { return func(c *config) { c.incomplete = reason } }

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
	// Tokens is the order of the fencing tokens the lock handed out,
	// present when a grant carried one: a promise of the lock.
	Tokens *TokenResult `json:"tokens,omitempty"`
	// Liveness is the lock's two liveness promises, deadlock freedom and
	// fault tolerance, each with its verdict, counts and violations;
	// Availability the play's availability figures. Both are present
	// whenever the history could be judged; without a Setup event in the
	// history both promises are unknown.
	Liveness     *LivenessResult `json:"liveness,omitempty"`
	Availability *Availability   `json:"availability,omitempty"`
	// OutsideLease are the applied writes that no belief of their writer's
	// lease covered, for the report to show. result.json leaves them out
	// (a run without a lock has one per write); they are found again from
	// the history.
	OutsideLease []OutsideWrite `json:"-"`
	// Stalls are the moments the harness stood still (history.Stall):
	// its in-process clients, their timers and the nemesis with it — or a
	// lock driver's process did, its client with it. No safety verdict
	// reads them (liveness owes nothing to a client held by one); they
	// tell a reader, and a test, that a play on a loaded machine had a
	// pause the scenario did not script.
	Stalls []Stall `json:"stalls,omitempty"`
	// Visualized names the property whose failing window
	// WriteVisualization shows.
	Visualized string `json:"visualized,omitempty"`

	viz *search.Window
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
	cfg := config{timeout: DefaultTimeout, check: search.Quiet}
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
	h := paired.Analyze(events)
	res = Result{End: h.End, Clients: h.Clients, Faults: h.Faults, Keys: h.Keys, OutsideLease: h.OutsideLease}
	notes := h.Notes
	res.Stalls, notes = stalls(events, notes)
	defer func() {
		// The checks add notes as they go.
		res.Notes = capNotes(append(notes, res.Notes...))
	}()
	if len(h.Problems) > 0 {
		res.Verdict = Unknown
		res.Reason = "the history is inconsistent, so it cannot be judged: " + paired.JoinFirst(h.Problems, 3)
		return res
	}

	var p1 IntervalResult
	var rs resource.Results
	res.CriticalSection = &IntervalResult{}
	c := verdict.Compose(search.Config{Timeout: cfg.timeout, Run: cfg.check}, h,
		checkers(&p1, res.CriticalSection, &res.Tokens, &rs, events, cfg, &res.Liveness, &res.Availability)...)
	res.Violations, res.ViolationCount, res.Ops = p1.Violations, p1.ViolationCount, p1.Ops
	res.Counter, res.Bank, res.Set, res.Fencing = rs.Counter, rs.Bank, rs.Set, rs.Fencing
	notes = append(notes, c.Notes...)
	res.Verdict, res.Reason = c.Verdict, c.Reason

	switch {
	case res.Verdict == Valid && cfg.incomplete != "":
		res.Verdict = Unknown
		res.Reason = "the history is incomplete (" + cfg.incomplete + "); its prefix shows no violation"
	case res.Verdict == Unknown && cfg.incomplete != "":
		// Why the run stopped explains the unknown better than what the
		// checker missed because of it ("no operations recorded").
		res.Reason += "; the history is incomplete (" + cfg.incomplete + ")"
	}
	res.Visualized, res.viz = c.Window()
	res.Properties = c.Properties
	for i := range res.Properties {
		// The windows hold the checks' operations, and the notes are
		// res.Notes: a result kept for its verdict need not keep them.
		res.Properties[i].Window, res.Properties[i].Notes = nil, nil
	}
	if cfg.incomplete != "" && res.Liveness != nil {
		// As the verdict: a prefix that broke no promise proves none.
		res.Liveness.Incomplete(cfg.incomplete)
		for i, p := range res.Properties {
			switch p.Name {
			case PropDeadlockFreedom:
				res.Properties[i].Verdict, res.Properties[i].Reason = res.Liveness.DeadlockFreedom.Verdict, res.Liveness.DeadlockFreedom.Reason
			case PropFaultTolerance:
				res.Properties[i].Verdict, res.Properties[i].Reason = res.Liveness.FaultTolerance.Verdict, res.Liveness.FaultTolerance.Reason
			}
		}
	}
	return res
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
	_, info := porcupine.CheckOperationsVerbose(r.viz.Model, r.viz.Ops, r.viz.Timeout)
	info.AddAnnotations(r.viz.Annotations)
	if err := porcupine.Visualize(escapedModel(r.viz.Model), info, w); err != nil {
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

// capNotes keeps the first MaxNotes notes and says how many were left out.
func capNotes(notes []string) []string {
	if len(notes) <= MaxNotes {
		return notes
	}
	out := append([]string(nil), notes[:MaxNotes]...)
	return append(out, fmt.Sprintf("… and %d more note(s) not listed", len(notes)-MaxNotes))
}

// Stall is a gap in which the harness, or a client's driver process,
// stood still (history.Stall): from End-For to End, in nanoseconds of the
// history's clock.
type Stall struct {
	End int64 `json:"end"`
	For int64 `json:"for"`
	// Process is the client whose driver stood still; empty for the
	// harness.
	Process string `json:"process,omitempty"`
}

// Who says who stood still: "the harness", or "c1's driver".
func (s Stall) Who() string {
	if s.Process == "" {
		return "the harness"
	}
	return s.Process + "'s driver"
}

// LongestStall is the longest of stalls, in nanoseconds; 0 for none.
func LongestStall(stalls []Stall) int64 {
	var longest int64
	for _, st := range stalls {
		longest = max(longest, st.For)
	}
	return longest
}

// stalls reads the harness's stall events, and notes each (the first few
// by their times, the rest counted).
func stalls(events []history.Event, notes []string) ([]Stall, []string) {
	var out []Stall
	for i := range events {
		e := &events[i]
		if e.F != history.Stall {
			continue
		}
		stood, err := e.Stood()
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		st := Stall{End: e.Time, For: stood}
		if e.Process != history.ProcessHarness {
			st.Process = e.Process
		}
		out = append(out, st)
	}
	if len(out) == 0 {
		return nil, notes
	}
	// A note per process that stood still, the harness's first.
	var who []string
	byWho := map[string][]Stall{}
	for _, st := range out {
		if _, ok := byWho[st.Process]; !ok {
			who = append(who, st.Process)
		}
		byWho[st.Process] = append(byWho[st.Process], st)
	}
	slices.Sort(who)
	for _, p := range who {
		sts := byWho[p]
		var when []string
		for i, st := range sts {
			if i == 3 {
				when = append(when, fmt.Sprintf("and %d more", len(sts)-3))
				break
			}
			when = append(when, fmt.Sprintf("%s until %s", paired.Seconds(st.For), paired.Seconds(st.End)))
		}
		what := "starved of the CPU or stopped, with its in-process clients, their timers and the nemesis"
		if p != "" {
			what = "its process starved of the CPU (the kernel's count of its waiting), with the client's timers and renewals"
		}
		notes = append(notes, fmt.Sprintf("%s stood still %d time(s), at most %s (%s): %s — a pause the scenario did not script, and a lease can run out in it unseen",
			sts[0].Who(), len(sts), paired.Seconds(LongestStall(sts)), strings.Join(when, ", "), what))
	}
	return out, notes
}
