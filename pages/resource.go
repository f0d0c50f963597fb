package pages

import (
	"fmt"
	"strings"

	"splitbrain/checker"
	"splitbrain/history"
)

// isResource reports whether f acts on the protected resource rather than
// on the lock.
func isResource(f history.Func) bool {
	return f == history.Read || isWrite(f)
}

// isWrite reports whether f changes the protected resource.
func isWrite(f history.Func) bool {
	return f == history.Write || f == history.Transfer || f == history.Add
}

// resourceOp is an operation on the protected resource with what the report
// makes of it.
type resourceOp struct {
	history.Op
	// outcome is "ok", "fail" ("rejected" for a write), "info" or
	// "pending".
	outcome string
	// finding is a sentence when the op shows something wrong (a write
	// outside the writer's lease, a stale token accepted) or a fence that
	// worked (a rejected write); "" otherwise.
	finding string
	// bad marks a finding that is a problem, not a fence that held.
	bad bool
}

// at is when the op completed (or, pending, when it was invoked).
func (o resourceOp) at() int64 {
	if o.Done() {
		return o.Completion.Time
	}
	return o.Invoke.Time
}

// resourceOps picks the resource operations out of ops and marks each
// write with the checker's findings: a write outside its writer's lease, a
// stale token accepted. It works from history events alone, so it renders
// whatever workload recorded them; what is wrong is the checker's to say.
func resourceOps(ops []history.Op, res checker.Result) []resourceOp {
	var out []resourceOp
	for _, o := range ops {
		if !isResource(o.Invoke.F) {
			continue
		}
		r := resourceOp{Op: o, outcome: string(o.Type())}
		if !o.Done() {
			r.outcome = checker.OutcomePending
		} else if o.Type() == history.Fail && isWrite(o.Invoke.F) {
			r.outcome = "rejected"
		}
		out = append(out, r)
	}
	// Tokens are the checker's to judge, in the storage's order, and so
	// are leases: the report shows its findings, write by write, never a
	// second opinion.
	stale := map[int64]string{}
	if f := res.Fencing; f != nil {
		for _, v := range f.Violations {
			stale[v.Later.Index] = v.Text
		}
	}
	outside := map[int64]string{}
	for _, w := range res.OutsideLease {
		outside[w.Index] = w.Text
	}
	for i := range out {
		r := &out[i]
		if !isWrite(r.Invoke.F) {
			continue
		}
		switch r.outcome {
		case "rejected":
			r.finding = fmt.Sprintf("the storage rejected %s%s", r.Describe(), errSuffix(r.Completion.Err))
			continue
		case "ok":
		default:
			continue
		}
		if text, ok := stale[r.Invoke.Index]; ok {
			r.finding, r.bad = text, true
		} else if text, ok := outside[r.Invoke.Index]; ok {
			r.finding, r.bad = text, true
		}
	}
	return out
}

func errSuffix(err string) string {
	if err == "" {
		return ""
	}
	line, _, _ := strings.Cut(err, "\n")
	return ": " + line
}

// opSentence says what one resource op did, for the violation explanation.
func opSentence(r resourceOp) string {
	o := r.Op
	when := checker.Seconds(o.Invoke.Time)
	if o.Done() {
		when += "–" + checker.Seconds(o.Completion.Time)
	}
	var s string
	switch {
	case r.outcome == "ok" && o.Invoke.F == history.Read:
		s = fmt.Sprintf("%s read %q: %s", o.Invoke.Process, o.Invoke.Key, orNothing(history.ShortValue(o.Completion.Value)))
	case r.outcome == "ok":
		s = o.Describe() + ": ok"
	case r.outcome == "rejected":
		s = o.Describe() + ": rejected" + errSuffix(completionErr(o))
	case r.outcome == "info":
		s = o.Describe() + ": outcome unknown" + errSuffix(completionErr(o))
	case r.outcome == checker.OutcomePending:
		s = o.Describe() + ": never completed"
	default:
		s = o.Describe() + ": " + r.outcome + errSuffix(completionErr(o))
	}
	return s + " (" + when + ")"
}

// completionErr is the error the completion recorded, "" when none.
func completionErr(o history.Op) string {
	if o.Completion == nil {
		return ""
	}
	return o.Completion.Err
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// maxOpSentences bounds the resource ops listed under one violation.
const maxOpSentences = 12

// resourceDuring says what the given clients did to the resource between
// from and to, findings first.
func resourceDuring(ops []resourceOp, clients []string, from, to int64) []string {
	want := map[string]bool{}
	for _, c := range clients {
		want[c] = true
	}
	var findings, plain []string
	for _, r := range ops {
		if !want[r.Invoke.Process] || r.Invoke.Time > to || r.at() < from {
			continue
		}
		if r.finding != "" {
			findings = append(findings, r.finding)
		} else {
			plain = append(plain, opSentence(r))
		}
	}
	all := append(findings, plain...)
	if len(all) > maxOpSentences {
		n := len(all) - maxOpSentences
		all = append(all[:maxOpSentences], fmt.Sprintf("… and %d more operations on the resource (history.jsonl has them all)", n))
	}
	return all
}

// resourceView is the page's summary of the protected resource.
type resourceView struct {
	Counts       []string
	Findings     []finding
	MoreFindings int
}

type finding struct {
	Text string
	Bad  bool
}

// maxFindings bounds the findings listed on the page.
const maxFindings = 30

func buildResourceView(ops []resourceOp) *resourceView {
	if len(ops) == 0 {
		return nil
	}
	type fk struct {
		f       history.Func
		outcome string
	}
	counts := map[fk]int{}
	var funcs []history.Func
	for _, r := range ops {
		k := fk{r.Invoke.F, r.outcome}
		if counts[fk{f: r.Invoke.F}] == 0 {
			funcs = append(funcs, r.Invoke.F)
		}
		counts[k]++
		counts[fk{f: r.Invoke.F}]++
	}
	v := &resourceView{}
	for _, f := range funcs {
		var parts []string
		for _, oc := range []string{"ok", "rejected", "fail", "info", checker.OutcomePending} {
			if n := counts[fk{f, oc}]; n > 0 {
				label := oc
				if oc == "info" {
					label = "unknown"
				}
				parts = append(parts, fmt.Sprintf("%d %s", n, label))
			}
		}
		v.Counts = append(v.Counts, fmt.Sprintf("%d %s (%s)", counts[fk{f: f}], f, strings.Join(parts, ", ")))
	}
	// Problems first: they are what the reader came for.
	for _, bad := range []bool{true, false} {
		for _, r := range ops {
			if r.finding == "" || r.bad != bad {
				continue
			}
			if len(v.Findings) < maxFindings {
				v.Findings = append(v.Findings, finding{Text: r.finding, Bad: r.bad})
			} else {
				v.MoreFindings++
			}
		}
	}
	return v
}
