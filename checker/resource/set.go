package resource

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"splitbrain/checker/paired"
	"splitbrain/checker/verdict"
	"splitbrain/history"
)

// SetResult is the outcome of the set check: every acknowledged add is in
// the final read, and nothing is there that was never added or was
// rejected.
type SetResult struct {
	Verdict verdict.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
	Keys    []SetKey        `json:"keys"`
	// LostCount counts acknowledged adds missing from the final read; Lost
	// lists at most verdict.MaxViolations of them.
	LostCount int       `json:"lost_count"`
	Lost      []SetLoss `json:"lost,omitempty"`
	// Unexpected are elements in the final read that no add wrote;
	// Resurrected are elements of rejected adds found there.
	Unexpected  []int64 `json:"unexpected,omitempty"`
	Resurrected []int64 `json:"resurrected,omitempty"`
}

// SetKey summarises one set.
type SetKey struct {
	Key          string `json:"key"`
	Acknowledged int    `json:"acknowledged"`
	Lost         int    `json:"lost"`
	Rejected     int    `json:"rejected"`
	// verdict.Unknown adds may or may not be present; UnknownPresent are.
	Unknown        int  `json:"unknown"`
	UnknownPresent int  `json:"unknown_present"`
	FinalRead      bool `json:"final_read"`
	FinalSize      int  `json:"final_size"`
}

// SetLoss is an acknowledged add missing from the final read.
type SetLoss struct {
	Key     string `json:"key"`
	Element int64  `json:"element"`
	Add     Write  `json:"add"`
	// By is the applied add that most likely wrote the set back without
	// it: the first after it whose read may have preceded it.
	By   *Write `json:"by,omitempty"`
	Text string `json:"text"`
}

func checkSet(a *analysis, rs []*resource) *SetResult {
	res := &SetResult{}
	var unknown, valid []string
	res.Verdict, unknown, valid = eachKey(rs, func(r *resource) (verdict.Verdict, string) { return setKey(a, r, res) })
	switch res.Verdict {
	case verdict.Invalid:
		var parts []string
		if res.LostCount > 0 {
			var texts []string
			for _, l := range res.Lost {
				texts = append(texts, l.Text)
			}
			parts = append(parts, fmt.Sprintf("%d acknowledged add(s) lost: %s", res.LostCount, paired.JoinFirst(texts, 2)))
		}
		if len(res.Unexpected) > 0 {
			parts = append(parts, fmt.Sprintf("%d element(s) in the final read were never added: %v", len(res.Unexpected), firstInts(res.Unexpected, 10)))
		}
		if len(res.Resurrected) > 0 {
			parts = append(parts, fmt.Sprintf("%d rejected add(s) are in the final read: %v", len(res.Resurrected), firstInts(res.Resurrected, 10)))
		}
		res.Reason = strings.Join(parts, "; ") + a.unguarded(rs)
	case verdict.Unknown:
		res.Reason = "the set cannot be judged: " + paired.JoinFirst(unknown, 3)
	default:
		res.Reason = strings.Join(valid, "; ")
	}
	if len(res.Lost) > verdict.MaxViolations {
		res.Lost = res.Lost[:verdict.MaxViolations]
	}
	return res
}

func setKey(a *analysis, r *resource, res *SetResult) (verdict.Verdict, string) {
	k := SetKey{Key: r.key}
	defer func() { res.Keys = append(res.Keys, k) }()
	type addOp struct {
		w    *writeOp
		elem int64
	}
	var adds []addOp
	attempted := map[int64]bool{}
	for _, w := range r.writes {
		if w.ev.F != history.Add {
			continue
		}
		var e int64
		if err := json.Unmarshal(w.ev.Value, &e); err != nil {
			a.notes = append(a.notes, fmt.Sprintf("event %d: set element %s is not a whole number", w.ev.Index, w.ev.Value))
			continue
		}
		attempted[e] = true
		adds = append(adds, addOp{w, e})
	}
	var initial []int64
	if err := r.init.ev.Decode(&initial); err != nil {
		return verdict.Unknown, err.Error()
	}
	for _, e := range initial {
		attempted[e] = true
	}
	final := r.lastFinal()
	if final == nil {
		return verdict.Unknown, fmt.Sprintf("set %q has no final read, so whether its adds survived is not known", r.key)
	}
	var fr history.SetRead
	if err := final.done.Decode(&fr); err != nil {
		return verdict.Unknown, err.Error()
	}
	if fr.Size != len(fr.Elements) {
		return verdict.Unknown, fmt.Sprintf("set %q: the final read records %d element(s) but a size of %d", r.key, len(fr.Elements), fr.Size)
	}
	k.FinalRead, k.FinalSize = true, fr.Size
	present := make(map[int64]bool, len(fr.Elements))
	for _, e := range fr.Elements {
		present[e] = true
		if !attempted[e] {
			res.Unexpected = append(res.Unexpected, e)
		}
	}
	finalAt := final.inv.Time
	kv := verdict.Valid
	if len(res.Unexpected) > 0 {
		kv = verdict.Invalid
	}
	for _, ad := range adds {
		switch ad.w.typ {
		case history.OK:
			k.Acknowledged++
			if present[ad.elem] {
				continue
			}
			k.Lost++
			res.LostCount++
			kv = verdict.Invalid
			if len(res.Lost) <= verdict.MaxViolations {
				res.Lost = append(res.Lost, setLoss(a, r, ad.w, ad.elem, finalAt))
			}
		case history.Fail:
			k.Rejected++
			if present[ad.elem] {
				res.Resurrected = append(res.Resurrected, ad.elem)
				kv = verdict.Invalid
			}
		default:
			k.Unknown++
			if present[ad.elem] {
				k.UnknownPresent++
			}
		}
	}
	if kv == verdict.Invalid {
		return verdict.Invalid, ""
	}
	return verdict.Valid, fmt.Sprintf("set %q: all %d acknowledged add(s) are in the final read", r.key, k.Acknowledged)
}

// setLoss explains a lost add by the first applied add after it whose read
// may have come before it: that add wrote back a set without the element.
func setLoss(a *analysis, r *resource, w *writeOp, elem int64, finalAt int64) SetLoss {
	ref := a.writeRef(w)
	l := SetLoss{Key: r.key, Element: elem, Add: ref}
	for _, o := range r.applied() {
		if o.ack.Seq <= w.ack.Seq || o.ev.F != history.Add || o.read == nil {
			continue
		}
		if o.read.inv.Time <= ref.End {
			by := a.writeRef(o)
			l.By = &by
			break
		}
	}
	if l.By != nil {
		l.Text = fmt.Sprintf("%s is missing from the final read at %s: %s wrote back a set read before it was added",
			ref.Label(), paired.Seconds(finalAt), l.By.Label())
	} else {
		l.Text = fmt.Sprintf("%s is missing from the final read at %s", ref.Label(), paired.Seconds(finalAt))
	}
	return l
}

func firstInts(xs []int64, n int) []int64 {
	xs = append([]int64(nil), xs...)
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

func setProperty(s *SetResult) verdict.Property {
	p := verdict.Property{Name: Set, Verdict: s.Verdict, Reason: s.Reason, Decides: true}
	p.Numbers = verdict.Count(nil, s.LostCount, "lost add", "lost adds", true)
	p.Numbers = verdict.Count(p.Numbers, len(s.Unexpected), "element never added", "elements never added", len(s.Unexpected) > 0)
	p.Numbers = verdict.Count(p.Numbers, len(s.Resurrected), "rejected add present", "rejected adds present", len(s.Resurrected) > 0)
	var acked, rejected, unknown int
	for _, k := range s.Keys {
		acked, rejected, unknown = acked+k.Acknowledged, rejected+k.Rejected, unknown+k.Unknown
	}
	p.Numbers = verdict.Count(p.Numbers, acked, "acknowledged add", "acknowledged adds", false)
	p.Numbers = verdict.Count(p.Numbers, rejected, "rejected add", "rejected adds", rejected > 0)
	p.Numbers = verdict.Count(p.Numbers, unknown, "add of unknown outcome", "adds of unknown outcome", unknown > 0)
	return p
}
