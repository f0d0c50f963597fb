// Package verdict is the checker's protocol, after Jepsen's checker.clj: a
// Checker judges one property of a paired history and returns it with a
// three-valued verdict; Compose runs several and folds their verdicts with
// Jepsen's priority, valid < unknown < invalid.
//
// Adding a property is one Checker in its own file and one line in the
// composition (checker.Check): the report reads every property alike, by
// its name, verdict, reason and the numbers it reports itself.
package verdict

import (
	"fmt"
	"runtime/debug"
	"strings"

	"splitbrain/checker/paired"
	"splitbrain/checker/search"
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

// Worse is the verdict of the two that weighs more: invalid beats unknown
// beats valid, and "" is no verdict yet.
func Worse(a, b Verdict) Verdict {
	switch {
	case a == Invalid || b == Invalid:
		return Invalid
	case a == Unknown || b == Unknown:
		return Unknown
	case a == "":
		return b
	}
	return a
}

// Property is the verdict of one property. Its first four fields are what
// result.json carries; the others are for the composition and the report.
type Property struct {
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	// Decides says whether the property is part of the composed verdict;
	// a property that only explains does not decide.
	Decides bool `json:"decides"`

	// Numbers are its key counts, in words ("1 lost update"), as the
	// report lists them.
	Numbers []string `json:"-"`
	// Notes are oddities its check met that did not change its verdict.
	Notes []string `json:"-"`
	// Fenced says the storage checked fencing tokens: the resource is
	// guarded by them, and a property that YieldsToFencing then explains
	// instead of deciding.
	Fenced bool `json:"-"`
	// YieldsToFencing: the property decides only where no fencing guards
	// the resource (critical sections that overlap harm a fenced resource
	// no more than fencing lets them).
	YieldsToFencing bool `json:"-"`
	// Within names a property whose invalid reason already tells this
	// one's: the composed reason leaves this one out then.
	Within string `json:"-"`
	// Window draws its failing window (nil when it has none). The first
	// invalid property's window is shown, those marked WindowLast only
	// when no other has one.
	Window     func() *search.Window `json:"-"`
	WindowLast bool                  `json:"-"`
}

// Checker checks one property of a history. A checker that panics is
// unknown (Compose recovers): a broken checker is never a pass, and never
// a crash of the run that called it.
type Checker interface {
	Check(cfg search.Config, h *paired.History) Property
}

// Func is a Checker written as a function.
type Func func(cfg search.Config, h *paired.History) Property

// Check calls f.
func (f Func) Check(cfg search.Config, h *paired.History) Property { return f(cfg, h) }

// Composed is what Compose makes of several checkers.
type Composed struct {
	Verdict    Verdict
	Reason     string
	Properties []Property
	// Notes are every checker's notes, in the checkers' order (a checker
	// with nothing to check may still have notes).
	Notes []string
}

// Compose runs the checkers in order. A checker that returns no name
// (nothing to check: no such resource in the history) is left out. The
// verdict folds the properties that decide: any invalid makes it invalid,
// else any unknown makes it unknown; the reason names what decided.
func Compose(cfg search.Config, h *paired.History, checkers ...Checker) Composed {
	var c Composed
	fenced := false
	for _, ch := range checkers {
		p := run(ch, cfg, h)
		c.Notes = append(c.Notes, p.Notes...)
		if p.Name == "" {
			continue
		}
		fenced = fenced || p.Fenced
		c.Properties = append(c.Properties, p)
	}
	for i := range c.Properties {
		if c.Properties[i].YieldsToFencing && fenced {
			c.Properties[i].Decides = false
		}
	}
	c.Verdict, c.Reason = fold(c.Properties)
	return c
}

// run checks one property, a panic making it unknown.
func run(ch Checker, cfg search.Config, h *paired.History) (p Property) {
	defer func() {
		if r := recover(); r != nil {
			name := p.Name
			if name == "" {
				name = fmt.Sprintf("%T", ch)
			}
			p = Property{Name: name, Verdict: Unknown, Decides: true,
				Reason: fmt.Sprintf("the checker failed: %v", r),
				Notes:  []string{"panic: " + string(debug.Stack())}}
		}
	}()
	return ch.Check(cfg, h)
}

// fold folds the deciding properties into one verdict with its reason. A
// reason given twice is told once, and a property Within another invalid
// one is left out of the invalid reason.
func fold(props []Property) (Verdict, string) {
	var invalid, unknown, valid []string
	invalidNames := map[string]bool{}
	seen := map[string]bool{}
	v := Valid
	for _, p := range props {
		if !p.Decides || seen[p.Reason] {
			continue
		}
		seen[p.Reason] = true
		switch p.Verdict {
		case Invalid:
			invalidNames[p.Name] = true
			v = Invalid
			if p.Within != "" && invalidNames[p.Within] {
				continue
			}
			invalid = append(invalid, p.Reason)
		case Valid:
			valid = append(valid, p.Reason)
		default:
			// Anything but valid or invalid is no pass.
			v = Worse(v, Unknown)
			unknown = append(unknown, p.Reason)
		}
	}
	switch v {
	case Invalid:
		return Invalid, strings.Join(invalid, "; ")
	case Unknown:
		return Unknown, strings.Join(unknown, "; ")
	}
	return Valid, strings.Join(valid, "; ")
}

// Window is the failing window of the first invalid property that has one.
func (c Composed) Window() (string, *search.Window) {
	if c.Verdict != Invalid {
		return "", nil
	}
	for _, last := range []bool{false, true} {
		for _, p := range c.Properties {
			if p.Window == nil || p.WindowLast != last || p.Verdict != Invalid {
				continue
			}
			if w := p.Window(); w != nil {
				return p.Name, w
			}
		}
	}
	return "", nil
}

// MaxViolations caps the violations a property lists; its count has the
// total. A random schedule can produce thousands, and the first few explain
// the failure.
const MaxViolations = 100

// Count appends "n things" to numbers, a property's counts in words; a
// zero count only when always, since "0 lost updates" is news where a loss
// was looked for.
func Count(numbers []string, n int, one, many string, always bool) []string {
	if n == 0 && !always {
		return numbers
	}
	word := many
	if n == 1 {
		word = one
	}
	return append(numbers, fmt.Sprintf("%d %s", n, word))
}
