package lease

import (
	"cmp"
	"fmt"
	"slices"

	"splitbrain/checker/paired"
	"splitbrain/checker/search"
	"splitbrain/checker/verdict"
)

// Tokens is the property of a lock that hands out fencing tokens: they
// strictly increase in the order the lock granted them. It is the lock's
// promise, judged wherever the lock hands out tokens and deciding the
// lock's answer, whatever the storage does with them: the storage's
// fencing property says whether harm was done there (a storage that does
// not check tokens is harmed by neither kind of break, and a lock whose
// tokens went backwards has broken its promise all the same).
const Tokens = "lock tokens"

// TokenResult is the outcome of the token check.
type TokenResult struct {
	Verdict verdict.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
	// Grants counts the grants with a token.
	Grants int `json:"grants"`
	// Violations are pairs of grants whose tokens broke the order (at
	// most verdict.MaxViolations); Count has them all.
	Violations []TokenViolation `json:"violations,omitempty"`
	Count      int              `json:"count"`
}

// TokenViolation is a grant whose token did not exceed an earlier
// grant's, or two grants handed the same token.
type TokenViolation struct {
	Key     string     `json:"key"`
	Earlier TokenGrant `json:"earlier"`
	Later   TokenGrant `json:"later"`
	Text    string     `json:"text"`
}

// TokenGrant is one grant as a violation names it.
type TokenGrant struct {
	Client string `json:"client"`
	Token  int64  `json:"token"`
	// Invoke and Start are when the acquire was invoked and when its OK
	// came (ns since the run started); OKIndex is the OK's event.
	Invoke  int64 `json:"invoke"`
	Start   int64 `json:"start"`
	OKIndex int64 `json:"ok_index"`
}

func (g TokenGrant) label() string {
	return fmt.Sprintf("%s's grant at %s (event %d, token %d)", g.Client, paired.Seconds(g.Start), g.OKIndex, g.Token)
}

// TokensChecker checks the token order of every key, storing its result
// where out points; a history in which no grant carried a token has
// nothing to check (the lock hands out none).
func TokensChecker(out **TokenResult) verdict.Checker {
	return verdict.Func(func(_ search.Config, h *paired.History) verdict.Property {
		res := checkTokens(h.Keys)
		*out = res
		if res == nil {
			return verdict.Property{}
		}
		p := verdict.Property{Name: Tokens, Verdict: res.Verdict, Reason: res.Reason, Decides: true}
		p.Numbers = verdict.Count(nil, res.Count, "token out of grant order", "tokens out of grant order", true)
		p.Numbers = verdict.Count(p.Numbers, res.Grants, "grant with a token", "grants with a token", false)
		return p
	})
}

// checkTokens finds, per key, the grants whose token is not above that of
// every grant the client could have known came first — one whose OK came
// before this acquire was invoked — and the grants that share a token.
// Grants whose acquires overlap may be in either order, so only their
// tokens' being different is asked of them.
func checkTokens(keys []paired.KeyInfo) *TokenResult {
	res := &TokenResult{}
	for _, k := range keys {
		var grants []TokenGrant
		for i := range k.Beliefs {
			b := &k.Beliefs[i]
			if b.Grant() && b.Token != nil {
				grants = append(grants, TokenGrant{Client: b.Client, Token: *b.Token, Invoke: b.Invoke, Start: b.Start, OKIndex: b.OKIndex})
			}
		}
		res.Grants += len(grants)
		add := func(earlier, later TokenGrant, text string) {
			res.Count++
			if len(res.Violations) < verdict.MaxViolations {
				res.Violations = append(res.Violations, TokenViolation{Key: k.Key, Earlier: earlier, Later: later, Text: text})
			}
		}
		byStart := slices.Clone(grants)
		slices.SortStableFunc(byStart, func(x, y TokenGrant) int { return cmp.Compare(x.Start, y.Start) })
		byInvoke := slices.Clone(grants)
		slices.SortStableFunc(byInvoke, func(x, y TokenGrant) int { return cmp.Compare(x.Invoke, y.Invoke) })
		// first holds the first grant of each token, in OK order.
		first := map[int64]TokenGrant{}
		for _, g := range byStart {
			if f, ok := first[g.Token]; ok {
				add(f, g, fmt.Sprintf("%s and %s were handed the same token %d on %q", f.label(), g.label(), g.Token, k.Key))
				continue
			}
			first[g.Token] = g
		}
		// Sweep the acquires by invoke, knowing the highest token of the
		// grants whose OK came before.
		var top *TokenGrant
		i := 0
		for _, g := range byInvoke {
			for ; i < len(byStart) && byStart[i].Start < g.Invoke; i++ {
				if top == nil || byStart[i].Token > top.Token {
					top = &byStart[i]
				}
			}
			if top != nil && g.Token < top.Token {
				add(*top, g, fmt.Sprintf("%s came after %s had returned, with a lower token: the lock's tokens went backwards on %q",
					g.label(), top.label(), k.Key))
			}
		}
	}
	if res.Grants == 0 {
		return nil
	}
	if res.Count > 0 {
		res.Verdict = verdict.Invalid
		res.Reason = fmt.Sprintf("%d grant(s) broke the order of the lock's fencing tokens: %s", res.Count, res.Violations[0].Text)
		return res
	}
	res.Verdict = verdict.Valid
	res.Reason = fmt.Sprintf("the lock's %d grant(s) with a token: each above every grant that came before it", res.Grants)
	return res
}
