package checker

import (
	"fmt"
	"slices"
	"strings"

	"splitbrain/checker/verdict"
)

// A cell of the safety matrix has two answers, not one: whether the lock
// kept its promise (P1: no two clients believed they held it at once), and
// whether the resource it guards came to harm (lost update, broken bank,
// lost add, a token accepted out of order). With fencing the first can
// break while the second holds: Kleppmann's point, which a single verdict
// hides. Beside them, the lock's two liveness promises (deadlock freedom,
// fault tolerance), judged on every play and expected where a story says.

// Answers are a run's answers, each valid, invalid or unknown.
type Answers struct {
	// Lock folds the lock's own promises: P1, and where the lock hands
	// out fencing tokens their order (lock tokens).
	Lock Verdict `json:"lock"`
	// Resource folds the resource checks (counter, bank, set, fencing):
	// invalid if one is, else unknown if one is, else valid. Empty when
	// the run had no resource.
	Resource Verdict `json:"resource,omitempty"`
	// DeadlockFreedom and FaultTolerance are the liveness promises'
	// verdicts; empty for a result judged before they were.
	DeadlockFreedom Verdict `json:"deadlock_freedom,omitempty"`
	FaultTolerance  Verdict `json:"fault_tolerance,omitempty"`
}

// Liveness folds the two liveness answers: invalid if one is, else
// unknown if one is, else valid; empty when the result has neither.
func (a Answers) Liveness() Verdict { return verdict.Worse(a.DeadlockFreedom, a.FaultTolerance) }

// AnswersOf reads a result's two answers from the checker's per-property
// verdicts. A result without properties (a run that recorded nothing) has
// only its verdict, which is then the lock's answer.
func AnswersOf(res Result) Answers {
	a := Answers{Lock: res.Verdict}
	for _, p := range res.Properties {
		switch p.Name {
		case PropLeaseLock:
			a.Lock = p.Verdict
		case PropCounter, PropBank, PropSet, PropFencing:
			if p.Decides {
				a.Resource = verdict.Worse(a.Resource, p.Verdict)
			}
		}
	}
	for _, p := range res.Properties {
		if p.Name == PropTokens {
			a.Lock = verdict.Worse(a.Lock, p.Verdict)
		}
	}
	if l := res.Liveness; l != nil {
		a.DeadlockFreedom, a.FaultTolerance = l.DeadlockFreedom.Verdict, l.FaultTolerance.Verdict
	}
	return a
}

// Expectation is what a scenario expects of one play, in the form
// runstore.Meta.Expect stores it: one word for the whole verdict ("violation",
// "safe", "any"), or the answers apart, "lock violation, resource safe,
// liveness ok" (any part may be left out; "liveness W" stands for
// "deadlock-freedom W, fault-tolerance W").
type Expectation struct {
	Verdict  string // violation, safe or any; empty when another part is set
	Lock     string
	Resource string
	// DeadlockFreedom and FaultTolerance are ok, violation or any.
	DeadlockFreedom string
	FaultTolerance  string
}

// Expectation words.
const (
	ExpectViolation = "violation"
	ExpectSafe      = "safe"
	ExpectAny       = "any"
	// ExpectOK is what a liveness promise is expected to be when kept.
	ExpectOK = "ok"
)

// The parts of an expectation, as scenario files and String name them.
const (
	PartLock            = "lock"
	PartResource        = "resource"
	PartLiveness        = "liveness"
	PartDeadlockFreedom = "deadlock-freedom"
	PartFaultTolerance  = "fault-tolerance"
)

// SafetyWords and LivenessWords are the words each part takes.
var (
	SafetyWords   = []string{ExpectViolation, ExpectSafe, ExpectAny}
	LivenessWords = []string{ExpectOK, ExpectViolation, ExpectAny}
)

// Liveness reports whether e expects anything of the liveness promises.
func (e Expectation) Liveness() bool { return e.DeadlockFreedom != "" || e.FaultTolerance != "" }

// CheckOptions are the options a play expecting expect (runstore.Meta.Expect's
// form) is checked with: the liveness promises it names decide its
// verdict. An expectation that does not parse names none.
func CheckOptions(expect string) []Option {
	e, err := ParseExpectation(expect)
	if err != nil || !e.Liveness() {
		return nil
	}
	return []Option{JudgeLiveness(e.DeadlockFreedom != "", e.FaultTolerance != "")}
}

func (e Expectation) String() string {
	if e.Lock == "" && e.Resource == "" && !e.Liveness() {
		return e.Verdict
	}
	var parts []string
	add := func(part, word string) {
		if word != "" {
			parts = append(parts, part+" "+word)
		}
	}
	add(PartLock, e.Lock)
	add(PartResource, e.Resource)
	if e.DeadlockFreedom == e.FaultTolerance {
		add(PartLiveness, e.DeadlockFreedom)
	} else {
		add(PartDeadlockFreedom, e.DeadlockFreedom)
		add(PartFaultTolerance, e.FaultTolerance)
	}
	return strings.Join(parts, ", ")
}

// Set sets part to word, and says what is wrong when part is no part,
// word is not one of its words, or the part is set already.
func (e *Expectation) Set(part, word string) error {
	var fields []*string
	words := SafetyWords
	switch part {
	case PartLock:
		fields = []*string{&e.Lock}
	case PartResource:
		fields = []*string{&e.Resource}
	case PartLiveness:
		fields, words = []*string{&e.DeadlockFreedom, &e.FaultTolerance}, LivenessWords
	case PartDeadlockFreedom:
		fields, words = []*string{&e.DeadlockFreedom}, LivenessWords
	case PartFaultTolerance:
		fields, words = []*string{&e.FaultTolerance}, LivenessWords
	default:
		return fmt.Errorf("unknown part %q; want %s (P1: did two clients believe they held it at once?), %s (was harm done at the storage?), "+
			"%s (the lock's deadlock freedom and fault tolerance), or %s or %s alone", part, PartLock, PartResource, PartLiveness,
			PartDeadlockFreedom, PartFaultTolerance)
	}
	if !slices.Contains(words, word) {
		return fmt.Errorf("%q is not valid for %s; want one of %s", word, part, strings.Join(words, ", "))
	}
	for _, f := range fields {
		if *f == "" {
			continue
		}
		if words[0] == ExpectOK {
			return fmt.Errorf("%s given twice (%s stands for %s and %s)", part, PartLiveness, PartDeadlockFreedom, PartFaultTolerance)
		}
		return fmt.Errorf("%s given twice", part)
	}
	for _, f := range fields {
		*f = word
	}
	return nil
}

// ParseExpectation reads the form String writes.
func ParseExpectation(s string) (Expectation, error) {
	switch s {
	case "", ExpectViolation, ExpectSafe, ExpectAny:
		return Expectation{Verdict: s}, nil
	}
	var e Expectation
	for _, part := range strings.Split(s, ",") {
		what, word, _ := strings.Cut(strings.TrimSpace(part), " ")
		if err := e.Set(what, word); err != nil {
			return e, fmt.Errorf("expectation %q: %w", s, err)
		}
	}
	return e, nil
}

// AsExpected reports whether verdict v is what word expects: violation
// wants invalid, safe and ok valid, any (or nothing) either; unknown never
// meets an expectation: it is never a pass.
func AsExpected(word string, v Verdict) bool {
	switch word {
	case ExpectViolation:
		return v == Invalid
	case ExpectSafe, ExpectOK:
		return v == Valid
	case ExpectAny, "":
		return v == Valid || v == Invalid
	}
	return false
}

// Met reports whether res meets the expectation expect (runstore.Meta.Expect's
// form). A run whose verdict is unknown meets none; an expectation of the
// resource meets nothing in a run without one, and an expectation of a
// liveness promise nothing in a result that did not judge it.
func Met(expect string, res Result) bool {
	e, err := ParseExpectation(expect)
	if err != nil || res.Verdict == Unknown {
		return false
	}
	if e.Lock == "" && e.Resource == "" && !e.Liveness() {
		return AsExpected(e.Verdict, res.Verdict)
	}
	for _, part := range e.Stated(AnswersOf(res)) {
		if !AsExpected(part.Word, part.Verdict) {
			return false
		}
	}
	return true
}

// StatedPart is one part of an expectation beside a play's answer to it.
type StatedPart struct {
	Name    string  // PartLock, PartResource, PartDeadlockFreedom or PartFaultTolerance
	Word    string  // what e expects of it
	Verdict Verdict // what the play answered
}

// Stated pairs each part e names (any included) with a's answer to it,
// in the order lock, resource, deadlock freedom, fault tolerance.
func (e Expectation) Stated(a Answers) []StatedPart {
	var out []StatedPart
	for _, p := range []StatedPart{
		{PartLock, e.Lock, a.Lock},
		{PartResource, e.Resource, a.Resource},
		{PartDeadlockFreedom, e.DeadlockFreedom, a.DeadlockFreedom},
		{PartFaultTolerance, e.FaultTolerance, a.FaultTolerance},
	} {
		if p.Word != "" {
			out = append(out, p)
		}
	}
	return out
}
