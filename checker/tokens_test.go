package checker

import (
	"sort"
	"strings"
	"testing"

	"splitbrain/history"
	"splitbrain/history/historytest"
)

// A lock that hands out fencing tokens promises that they strictly increase
// in grant order: a grant whose acquire began after another's OK must carry
// a higher token, and no two grants share one. Acquires that overlap may be
// granted in either order. Each edge from both sides.
func TestLockTokens(t *testing.T) {
	type grant struct {
		client  string
		inv, ok float64
		token   int64
	}
	for _, tc := range []struct {
		name   string
		grants []grant
		want   Verdict // "" : no tokens, no property
		reason string
	}{
		{"no tokens: the lock hands out none", []grant{{"c1", 0.01, 0.02, 0}, {"c2", 1.1, 1.11, 0}}, "", ""},
		{"increasing", []grant{{"c1", 0.01, 0.02, 3}, {"c2", 1.1, 1.11, 4}, {"c1", 2.1, 2.11, 9}}, Valid,
			"the lock's 3 grant(s) with a token: each above every grant that came before it"},
		{"backwards after a return", []grant{{"c1", 0.01, 0.02, 410}, {"c2", 1.1, 1.11, 264}}, Invalid,
			"c2's grant at 1.11s (event 5, token 264) came after c1's grant at 0.020s (event 1, token 410) had returned, with a lower token"},
		{"equal across leases of two clients", []grant{{"c1", 0.01, 0.02, 7}, {"c2", 1.1, 1.11, 7}}, Invalid,
			"were handed the same token 7"},
		{"equal across two leases of one client", []grant{{"c1", 0.01, 0.02, 7}, {"c2", 0.5, 0.51, 8}, {"c1", 1.1, 1.11, 7}}, Invalid,
			"were handed the same token 7"},
		{"overlapping acquires may come in either order", []grant{{"c1", 0.01, 0.05, 9}, {"c2", 0.02, 0.04, 8}}, Valid, ""},
		{"invoked at the other's OK: not yet known to come after", []grant{{"c1", 0.01, 0.02, 9}, {"c2", 0.02, 0.03, 8}}, Valid, ""},
		{"invoked just after the other's OK", []grant{{"c1", 0.01, 0.02, 9}, {"c2", 0.021, 0.03, 8}}, Invalid, "with a lower token"},
		{"lower than an earlier grant, not the last one", []grant{{"c1", 0.01, 0.02, 9}, {"c2", 1.1, 1.11, 12}, {"c3", 2.1, 2.11, 10}}, Invalid,
			"c3's grant at 2.11s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each grant's acquire and release, the events in time
			// order; a release comes after any other grant the
			// acquire overlaps (the check reads grants only).
			type ev struct {
				at  float64
				add func()
			}
			var evs []ev
			b := newRB()
			for _, g := range tc.grants {
				mods := []historytest.Mod{historytest.Deadline(g.ok + 5), historytest.Value("v-" + g.client)}
				if g.token > 0 {
					mods = append(mods, tok(g.token))
				}
				evs = append(evs,
					ev{g.inv, func() { b.Add(g.client, history.Invoke, history.Acquire, "k", g.inv) }},
					ev{g.ok, func() { b.Add(g.client, history.OK, history.Acquire, "k", g.ok, mods...) }},
					ev{g.ok + 0.01, func() {
						b.Add(g.client, history.Invoke, history.Release, "k", g.ok+0.01, historytest.Value("v-"+g.client))
					}},
					ev{g.ok + 0.011, func() {
						b.Add(g.client, history.OK, history.Release, "k", g.ok+0.011, historytest.Value("v-"+g.client))
					}})
			}
			sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
			for _, e := range evs {
				e.add()
			}
			res := Check(b.Events())
			if tc.want == "" {
				if res.Tokens != nil {
					t.Fatalf("tokens %+v, want none checked", res.Tokens)
				}
				return
			}
			if res.Tokens == nil || res.Tokens.Verdict != tc.want || !strings.Contains(res.Tokens.Reason, tc.reason) {
				t.Fatalf("tokens %+v, want %s with %q", res.Tokens, tc.want, tc.reason)
			}
			if got := AnswersOf(res).Lock; tc.want == Invalid && got != Invalid {
				t.Errorf("lock answer %s, want invalid: the tokens are the lock's promise", got)
			}
			if tc.want == Invalid && res.Verdict != Invalid {
				t.Errorf("verdict %s (%s), want invalid: lock tokens decide", res.Verdict, res.Reason)
			}
		})
	}
}

// A late extension's belief keeps its lease's token: it is no grant, and
// its token equal to the grant's is no violation.
func TestLockTokensLateExtensionIsNoGrant(t *testing.T) {
	b := newRB().init("k", 0)
	b.acquire("c1", "k", 0.01, 0.02, 0.5, 5)
	b.Add("c1", history.Invoke, history.Extend, "k", 1.0, func(e *history.Event) { e.Value = history.MustValue("v-c1") })
	b.Add("c1", history.OK, history.Extend, "k", 1.01, func(e *history.Event) { e.Value = history.MustValue("v-c1") }, tok(5), func(e *history.Event) { d := int64(2e9); e.Deadline = &d })
	b.release("c1", "k", 1.5, 1.51, history.OK)
	res := Check(b.Events())
	if res.Tokens == nil || res.Tokens.Verdict != Valid || res.Tokens.Grants != 1 {
		t.Fatalf("tokens %+v (verdict %s: %s), want one grant, valid", res.Tokens, res.Verdict, res.Reason)
	}
}
