package pages

// What the client lanes of the timeline show: beliefs, acquire attempts
// and resource operations.

import (
	"fmt"

	"splitbrain/checker"
)

// clientItems turns beliefs, failed attempts and resource operations into
// items on the client lanes.
func clientItems(tl *timeline, ls *laneSet, res checker.Result, events eventIndex, resOps []resourceOp, sc scale) []item {
	// A long run has a million items: each refers to its belief or attempt
	// in res instead of holding a copy, and shares its kind's strings.
	n := len(resOps)
	for _, k := range res.Keys {
		n += len(k.Beliefs) + len(k.Attempts)
	}
	items := make([]item, 0, n)
	attemptKind := map[string]string{}
	for _, k := range res.Keys {
		for i := range k.Beliefs {
			b := &k.Beliefs[i]
			li := ls.of["client:"+b.Client]
			ln := tl.Lanes[li]
			end := b.End
			if b.Deadline != nil && b.EndReason != checker.EndDeadline {
				end = max(end, *b.Deadline)
			}
			items = append(items, item{lane: li, kind: "belief", noun: "belief interval", a: b.Invoke, b: end,
				y: ln.Y + 8, h: ln.H - 16,
				build: func() (under, over []shape) {
					under = append(under, sc.bar("acquiring", b.Invoke, b.Start, ln.Y+ln.H/2-1.5, 3,
						"acquire in flight\n"+beliefTitle(*b, events)))
					if b.EndReason != checker.EndDeadline && b.Deadline != nil && *b.Deadline > b.End {
						// What the lease still had left when the client
						// let go: how much a release shortened the belief.
						under = append(under, sc.bar("lease-rest", b.End, *b.Deadline, ln.Y+10, ln.H-20,
							fmt.Sprintf("%s's lease on %q would have lasted until %s", b.Client, b.Key, checker.Seconds(*b.Deadline))))
					}
					under = append(under, sc.bar("belief", b.Start, b.End, ln.Y+8, ln.H-16, beliefTitle(*b, events)))
					if len(res.Keys) > 1 && sc.x(b.End)-sc.x(b.Start) > 40 {
						over = append(over, textAt(b.Start, 4, ln.TextY, b.Key, "bar-label on-belief", sc))
					}
					return under, over
				}})
		}
		for i := range k.Attempts {
			a := &k.Attempts[i]
			li := ls.of["client:"+a.Client]
			ln := tl.Lanes[li]
			var noun string
			switch a.Outcome {
			case "fail":
				noun = "failed acquire"
			case "info":
				noun = "acquire of unknown outcome"
			default:
				noun = "acquire never completed"
			}
			kind, ok := attemptKind[a.Outcome]
			if !ok {
				kind = "attempt-" + cssIdent(a.Outcome)
				attemptKind[a.Outcome] = kind
			}
			items = append(items, item{lane: li, kind: kind, noun: noun, a: a.Invoke, b: a.End,
				y: ln.Y + ln.H - 8, h: 5,
				build: func() (under, over []shape) {
					title := attemptTitle(*a, events)
					cls := "attempt-" + cssIdent(a.Outcome)
					under = append(under, sc.bar("attempt "+cls, a.Invoke, a.End, ln.Y+ln.H-8, 5, title))
					glyph := map[string]string{"fail": "×", "info": "?", checker.OutcomePending: "…"}[a.Outcome]
					over = append(over, mark(a.End, ln.Y+4, ln.Y+ln.H-4, "attempt-mark "+cls, glyph, 2, ln.Y+13, title, sc))
					return under, over
				}})
		}
	}
	for _, r := range resOps {
		li := ls.of["client:"+r.Invoke.Process]
		ln := tl.Lanes[li]
		kind := "res-" + cssIdent(string(r.Invoke.F))
		if isWrite(r.Invoke.F) {
			kind = "res-write"
		}
		items = append(items, item{lane: li, kind: kind + " res-" + cssIdent(r.outcome), noun: string(r.Invoke.F), a: r.Invoke.Time, b: r.at(),
			y: ln.Y + 1, h: 6,
			build: func() (under, over []shape) {
				title := resourceTitle(r, events)
				cls := kind + " res-" + cssIdent(r.outcome)
				if r.bad {
					cls += " res-bad"
				}
				if r.at() > r.Invoke.Time {
					under = append(under, sc.bar("res-span "+cls, r.Invoke.Time, r.at(), ln.Y+3, 1.5, title))
				}
				y2 := ln.Y + ln.H - 2
				if !isWrite(r.Invoke.F) {
					y2 = ln.Y + 9 // a read is a short tick: it changes nothing
				}
				glyph := map[string]string{"rejected": "×", "info": "?", checker.OutcomePending: "…"}[r.outcome]
				over = append(over, mark(r.at(), ln.Y+1, y2, "res-tick "+cls, glyph, 2, ln.Y+10, title, sc))
				return under, over
			}})
	}
	return items
}
