package checker

import (
	"fmt"
	"strings"

	"splitbrain/checker/verdict"
)

// A cell of the safety matrix has two answers, not one: whether the lock
// kept its promise (P1: no two clients believed they held it at once), and
// whether the resource it guards came to harm (lost update, broken bank,
// lost add, a token accepted out of order). With fencing the first can
// break while the second holds: Kleppmann's point, which a single verdict
// hides.

// Answers are a run's two answers, each valid, invalid or unknown.
type Answers struct {
	// Lock folds the lock's own promises: P1, and where the lock hands
	// out fencing tokens their order (lock tokens).
	Lock Verdict `json:"lock"`
	// Resource folds the resource checks (counter, bank, set, fencing):
	// invalid if one is, else unknown if one is, else valid. Empty when
	// the run had no resource.
	Resource Verdict `json:"resource,omitempty"`
}

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
	return a
}

// Expectation is what a scenario expects of one play, in the form
// runstore.Meta.Expect stores it: one word for the whole verdict ("violation",
// "safe", "any"), or the two answers apart, "lock violation, resource
// safe" (either part may be left out).
type Expectation struct {
	Verdict  string // violation, safe or any; empty when Lock or Resource is set
	Lock     string
	Resource string
}

// Expectation words.
const (
	ExpectViolation = "violation"
	ExpectSafe      = "safe"
	ExpectAny       = "any"
)

func (e Expectation) String() string {
	if e.Lock == "" && e.Resource == "" {
		return e.Verdict
	}
	var parts []string
	if e.Lock != "" {
		parts = append(parts, "lock "+e.Lock)
	}
	if e.Resource != "" {
		parts = append(parts, "resource "+e.Resource)
	}
	return strings.Join(parts, ", ")
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
		if word != ExpectViolation && word != ExpectSafe && word != ExpectAny {
			return e, fmt.Errorf("expectation %q: %q wants violation, safe or any", s, word)
		}
		switch {
		case what == "lock" && e.Lock == "":
			e.Lock = word
		case what == "resource" && e.Resource == "":
			e.Resource = word
		default:
			return e, fmt.Errorf("expectation %q: want violation, safe, any, or \"lock W, resource W\"", s)
		}
	}
	return e, nil
}

// AsExpected reports whether verdict v is what word expects: violation
// wants invalid, safe valid, any (or nothing) either; unknown never meets
// an expectation: it is never a pass.
func AsExpected(word string, v Verdict) bool {
	switch word {
	case ExpectViolation:
		return v == Invalid
	case ExpectSafe:
		return v == Valid
	case ExpectAny, "":
		return v == Valid || v == Invalid
	}
	return false
}

// Met reports whether res meets the expectation expect (runstore.Meta.Expect's
// form). A run whose verdict is unknown meets none; an expectation of the
// resource meets nothing in a run without one.
func Met(expect string, res Result) bool {
	e, err := ParseExpectation(expect)
	if err != nil || res.Verdict == Unknown {
		return false
	}
	if e.Lock == "" && e.Resource == "" {
		return AsExpected(e.Verdict, res.Verdict)
	}
	a := AnswersOf(res)
	if e.Lock != "" && !AsExpected(e.Lock, a.Lock) {
		return false
	}
	return e.Resource == "" || AsExpected(e.Resource, a.Resource)
}
