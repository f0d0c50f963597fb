package liveness_test

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"splitbrain/checker/liveness"
	"splitbrain/checker/paired"
	"splitbrain/checker/verdict"
	"splitbrain/history"
)

// Times in these tests are in milliseconds (ms), converted on the way in.
const ms = int64(1_000_000)

// hist builds a history from operations and faults given with their
// times, in any order: it sorts the events by time (an operation's
// invoke before its completion) and numbers them.
type hist struct {
	ev  []history.Event
	ids int
}

func (b *hist) add(e history.Event) { b.ev = append(b.ev, e) }

func (b *hist) setup(s history.LockSetup) *hist {
	b.add(history.Event{Process: history.ProcessHarness, Type: history.Info, F: history.Setup, Value: history.MustValue(s)})
	return b
}

// op adds an operation of process p from inv to end (ms) that completed
// as typ ("" leaves it pending), with lock value v.
func (b *hist) op(p string, f history.Func, key string, inv, end int64, typ history.Type, v string) *hist {
	val := history.MustValue(v)
	b.add(history.Event{Process: p, Type: history.Invoke, F: f, Key: key, Time: inv * ms, Value: val})
	if typ != "" {
		b.add(history.Event{Process: p, Type: typ, F: f, Key: key, Time: end * ms, Value: val})
	}
	return b
}

func (b *hist) acquire(p, key string, inv, end int64, typ history.Type, v string) *hist {
	return b.op(p, history.Acquire, key, inv, end, typ, v)
}

// remain names, on the last event added (a refusal), the nodes where its
// key may remain.
func (b *hist) remain(nodes ...string) *hist {
	b.ev[len(b.ev)-1].Nodes = nodes
	return b
}

func (b *hist) release(p, key string, inv, end int64, typ history.Type, v string) *hist {
	return b.op(p, history.Release, key, inv, end, typ, v)
}

// fault adds a fault acting from began to its heal (ms; heal < 0: never
// healed), its start event recorded at start.
func (b *hist) fault(f history.Fault, began, start, heal int64) *hist {
	b.ids++
	f.ID, f.Phase, f.Began = b.ids, history.PhaseStart, began*ms
	b.add(history.Event{Process: history.ProcessNemesis, Type: history.Info, F: history.Nemesis, Time: start * ms, Value: history.MustValue(f)})
	if heal >= 0 {
		f.Phase, f.Began = history.PhaseStop, 0
		b.add(history.Event{Process: history.ProcessNemesis, Type: history.Info, F: history.Nemesis, Time: heal * ms, Value: history.MustValue(f)})
	}
	return b
}

func (b *hist) events(end int64) []history.Event {
	out := slices.Clone(b.ev)
	out = append(out, history.Event{Process: history.ProcessHarness, Type: history.Info, F: history.End, Time: end * ms})
	slices.SortStableFunc(out, func(x, y history.Event) int { return cmp.Compare(x.Time, y.Time) })
	for i := range out {
		out[i].Index = int64(i)
	}
	return out
}

func judge(t *testing.T, events []history.Event) (*liveness.Result, *liveness.Availability) {
	t.Helper()
	h := paired.Analyze(events)
	if len(h.Problems) > 0 {
		t.Fatalf("the test's history is inconsistent: %v", h.Problems)
	}
	return liveness.Judge(events, h)
}

func kill(nodes ...string) history.Fault { return history.Fault{Kind: "kill", Nodes: nodes} }

func cut(client string, nodes ...string) history.Fault {
	f := history.Fault{Kind: "cut"}
	for _, n := range nodes {
		f.Links = append(f.Links, history.Link{Client: client, Node: n})
	}
	return f
}

// Setups of the shapes: five independent masters, one instance, an
// ensemble of three, Redisson's master and replica.
var (
	masters = history.LockSetup{Kind: "redlock", Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Quorum: 3, Expiry: 1000 * ms, Retry: 100 * ms,
		Clients: []string{"c1", "c2", "c3"}}
	single   = history.LockSetup{Kind: "single", Nodes: []string{"n1"}, Quorum: 1, Expiry: 1000 * ms, Retry: 100 * ms}
	ensemble = history.LockSetup{Kind: "zookeeper", Nodes: []string{"n1", "n2", "n3"}, Quorum: 2, Peers: true, Renewed: true,
		Expiry: 1000 * ms, Retry: 100 * ms}
	// background releases in the background (rueidislock).
	background = history.LockSetup{Kind: "rueidislock", Nodes: []string{"n1"}, Quorum: 1, Renewed: true, AsyncRelease: true,
		Expiry: 1000 * ms, Retry: 100 * ms}
	replicas = history.LockSetup{Kind: "wait-replicas", Nodes: []string{"n1"}, Quorum: 1, Replicas: []string{"r1"}, Renewed: true,
		Expiry: 1000 * ms, Retry: 100 * ms}
)

// verdicts is what a test expects of both promises: "valid", "invalid",
// "unknown", each with how many attempts it judged.
type verdicts struct {
	df, ft             verdict.Verdict
	dfJudged, ftJudged int
}

func (w verdicts) check(t *testing.T, res *liveness.Result) {
	t.Helper()
	if res.DeadlockFreedom.Verdict != w.df || res.DeadlockFreedom.Judged != w.dfJudged {
		t.Errorf("deadlock freedom %s (%d judged), want %s (%d): %s", res.DeadlockFreedom.Verdict, res.DeadlockFreedom.Judged,
			w.df, w.dfJudged, res.DeadlockFreedom.Reason)
	}
	if res.FaultTolerance.Verdict != w.ft || res.FaultTolerance.Judged != w.ftJudged {
		t.Errorf("fault tolerance %s (%d judged), want %s (%d): %s", res.FaultTolerance.Verdict, res.FaultTolerance.Judged,
			w.ft, w.ftJudged, res.FaultTolerance.Reason)
	}
}

const (
	valid   = verdict.Valid
	invalid = verdict.Invalid
	unknown = verdict.Unknown
)

// When the lock is free again: each rule on both sides of its edge. c1
// holds the lock; c2 is refused once (the attempt runs from 4990 to 5000
// ms, unless said otherwise), which counts if nothing could hold the
// lock all along. What frees itself at an expiry (1000 ms) is free a
// retry interval (100 ms) later.
func TestWhenTheLockIsFree(t *testing.T) {
	t.Parallel()
	const end = 5000
	refused := func(b *hist, inv int64) []history.Event {
		return b.acquire("c2", "k", inv, end, history.Fail, "v2").events(9000)
	}
	for _, tc := range []struct {
		name string
		h    func() []history.Event
		want verdicts
	}{
		{"a grant expires an expiry after its OK: just free", func() []history.Event {
			return refused(new(hist).setup(single).acquire("c1", "k", 3800, 3890, history.OK, "v1"), 4990)
		}, verdicts{invalid, unknown, 2, 0}},
		{"a grant expires an expiry after its OK: 1 ms short", func() []history.Event {
			return refused(new(hist).setup(single).acquire("c1", "k", 3800, 3891, history.OK, "v1"), 4990)
		}, verdicts{valid, unknown, 1, 0}},
		{"an extension pushes the expiry", func() []history.Event {
			b := new(hist).setup(single).acquire("c1", "k", 3000, 3100, history.OK, "v1")
			b.op("c1", history.Extend, "k", 3800, 3901, history.OK, "v1")
			return refused(b, 4990)
		}, verdicts{valid, unknown, 1, 0}},
		{"an extension of unknown outcome may push it: unknown", func() []history.Event {
			b := new(hist).setup(single).acquire("c1", "k", 3000, 3100, history.OK, "v1")
			b.op("c1", history.Extend, "k", 3800, 3901, history.Info, "v1")
			return refused(b, 4990)
		}, verdicts{unknown, unknown, 2, 0}},
		{"a release that came back ok frees it: just free", func() []history.Event {
			b := new(hist).setup(single).acquire("c1", "k", 4500, 4510, history.OK, "v1").release("c1", "k", 4800, 4990, history.OK, "v1")
			return refused(b, 4990)
		}, verdicts{invalid, unknown, 2, 0}},
		{"a release that came back ok frees it: 1 ms short", func() []history.Event {
			b := new(hist).setup(single).acquire("c1", "k", 4500, 4510, history.OK, "v1").release("c1", "k", 4800, 4991, history.OK, "v1")
			return refused(b, 4990)
		}, verdicts{valid, unknown, 1, 0}},
		{"a release in the background frees it a retry interval later: just free", func() []history.Event {
			b := new(hist).setup(background).acquire("c1", "k", 4500, 4510, history.OK, "v1").release("c1", "k", 4800, 4890, history.OK, "v1")
			return refused(b, 4990)
		}, verdicts{invalid, unknown, 2, 0}},
		{"a release in the background: 1 ms short", func() []history.Event {
			b := new(hist).setup(background).acquire("c1", "k", 4500, 4510, history.OK, "v1").release("c1", "k", 4800, 4891, history.OK, "v1")
			return refused(b, 4990)
		}, verdicts{valid, unknown, 1, 0}},
		{"a release of unknown outcome frees nothing before the expiry", func() []history.Event {
			b := new(hist).setup(single).acquire("c1", "k", 4500, 4510, history.OK, "v1").release("c1", "k", 4800, 4850, history.Info, "v1")
			return refused(b, 4990)
		}, verdicts{valid, unknown, 1, 0}},
		{"an attempt longer than the retry interval must find it free all along", func() []history.Event {
			b := new(hist).setup(single).acquire("c1", "k", 4000, 4010, history.OK, "v1").release("c1", "k", 4600, 4700, history.OK, "v1")
			return refused(b, 4650)
		}, verdicts{valid, unknown, 1, 0}},
		{"an attempt longer than the retry interval: free from its invoke", func() []history.Event {
			b := new(hist).setup(single).acquire("c1", "k", 4000, 4010, history.OK, "v1").release("c1", "k", 4600, 4650, history.OK, "v1")
			return refused(b, 4650)
		}, verdicts{invalid, unknown, 2, 0}},
		{"a holder that released late held it no longer than its expiry", func() []history.Event {
			b := new(hist).setup(single).acquire("c1", "k", 3000, 3010, history.OK, "v1").release("c1", "k", 4600, 4700, history.OK, "v1")
			return refused(b, 4650)
		}, verdicts{invalid, unknown, 2, 0}},
		{"another client's attempt in flight takes it: contention", func() []history.Event {
			b := new(hist).setup(single).acquire("c3", "k", 4950, 4960, history.OK, "v3")
			return refused(b, 4980)
		}, verdicts{valid, unknown, 1, 0}},
		{"a refused attempt of another client in flight is contention too", func() []history.Event {
			b := new(hist).setup(masters).acquire("c3", "k", 4950, 5010, history.Fail, "v3")
			return refused(b, 4980)
		}, verdicts{unknown, unknown, 0, 0}},
		{"an acquire of unknown outcome may hold it an expiry more: unknown", func() []history.Event {
			b := new(hist).setup(single).acquire("c3", "k", 3850, 3891, history.Info, "v3")
			return refused(b, 4990)
		}, verdicts{unknown, unknown, 2, 0}},
		{"an acquire of unknown outcome, an expiry and more before", func() []history.Event {
			b := new(hist).setup(single).acquire("c3", "k", 3800, 3890, history.Info, "v3")
			return refused(b, 4990)
		}, verdicts{invalid, unknown, 2, 0}},
		{"another key's holder is no claim", func() []history.Event {
			b := new(hist).setup(single).acquire("c3", "other", 4950, 4960, history.OK, "v3")
			return refused(b, 4990)
		}, verdicts{invalid, unknown, 2, 0}},
		{"the attempt's own outcome unknown: unknown", func() []history.Event {
			return new(hist).setup(single).acquire("c2", "k", 4990, end, history.Info, "v2").events(9000)
		}, verdicts{unknown, unknown, 1, 0}},
		{"still pending when the history ended: unknown", func() []history.Event {
			return new(hist).setup(single).acquire("c2", "k", 4990, 0, "", "v2").events(end)
		}, verdicts{unknown, unknown, 1, 0}},
		{"granted: the promise met", func() []history.Event {
			return new(hist).setup(single).acquire("c2", "k", 4990, end, history.OK, "v2").events(9000)
		}, verdicts{valid, unknown, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := judge(t, tc.h())
			tc.want.check(t, res)
		})
	}
}

// A lock of independent masters: a release frees the lock at once only
// if it reached every node its acquire could have set the key on; a
// refused attempt leaves the key an expiry on the nodes it reached and
// its rollback could not.
func TestMastersLeaveKeysBehind(t *testing.T) {
	t.Parallel()
	// c1 holds from 1010 and releases at 1500–1510; c2 is refused at
	// 1700–1710, which counts if the release freed the lock.
	held := func() *hist { return new(hist).setup(masters).acquire("c1", "k", 1000, 1010, history.OK, "v1") }
	refused := func(b *hist) []history.Event {
		return b.release("c1", "k", 1500, 1510, history.OK, "v1").acquire("c2", "k", 1700, 1710, history.Fail, "v2").events(9000)
	}
	for _, tc := range []struct {
		name string
		h    func() []history.Event
		want verdicts
	}{
		{"the release reached every node", func() []history.Event { return refused(held()) }, verdicts{invalid, unknown, 2, 0}},
		{"the release missed n5: its key lives on", func() []history.Event {
			return refused(held().fault(cut("c1", "n5"), 1200, 1200, 1505))
		}, verdicts{valid, unknown, 1, 0}},
		{"the cut healed as the release began", func() []history.Event {
			return refused(held().fault(cut("c1", "n5"), 1200, 1200, 1500))
		}, verdicts{invalid, unknown, 2, 0}},
		{"n5 down from before the grant to after the release never had the key", func() []history.Event {
			return refused(held().fault(kill("n5"), 900, 900, 1600))
		}, verdicts{unknown, invalid, 0, 2}},
		{"a refusal cut from n3–n5 halfway keeps its keys there an expiry", func() []history.Event {
			return new(hist).setup(masters).fault(cut("c1", "n3", "n4", "n5"), 1020, 1020, 1100).
				acquire("c1", "k", 1000, 1050, history.Fail, "v1").
				acquire("c2", "k", 2149, 2160, history.Fail, "v2").events(9000)
		}, verdicts{unknown, unknown, 0, 0}},
		{"a refusal cut halfway, an expiry and a retry interval later", func() []history.Event {
			return new(hist).setup(masters).fault(cut("c1", "n3", "n4", "n5"), 1020, 1020, 1100).
				acquire("c1", "k", 1000, 1050, history.Fail, "v1").
				acquire("c2", "k", 2150, 2160, history.Fail, "v2").events(9000)
		}, verdicts{invalid, unknown, 1, 0}},
		{"a refusal cut from n3–n5 all along set nothing there", func() []history.Event {
			return new(hist).setup(masters).fault(cut("c1", "n3", "n4", "n5"), 900, 900, 1100).
				acquire("c1", "k", 1000, 1050, history.Fail, "v1").
				acquire("c2", "k", 1060, 1070, history.Fail, "v2").events(9000)
		}, verdicts{invalid, unknown, 1, 0}},
		// c1 is refused while c3 holds (900–1110), and its rollback
		// goes unanswered on n4 (a slow node, a starved client).
		{"a refusal whose rollback went unanswered on n4 keeps its key there an expiry", func() []history.Event {
			return new(hist).setup(masters).acquire("c3", "k", 900, 910, history.OK, "v3").
				acquire("c1", "k", 1000, 1050, history.Fail, "v1").remain("n4").
				release("c3", "k", 1100, 1110, history.OK, "v3").
				acquire("c2", "k", 2149, 2160, history.Fail, "v2").events(9000)
		}, verdicts{valid, unknown, 1, 0}},
		{"a refusal with a key left behind, an expiry and a retry interval later", func() []history.Event {
			return new(hist).setup(masters).acquire("c3", "k", 900, 910, history.OK, "v3").
				acquire("c1", "k", 1000, 1050, history.Fail, "v1").remain("n4").
				release("c3", "k", 1100, 1110, history.OK, "v3").
				acquire("c2", "k", 2150, 2160, history.Fail, "v2").events(9000)
		}, verdicts{invalid, unknown, 2, 0}},
		{"the same refusal without a key left behind", func() []history.Event {
			return new(hist).setup(masters).acquire("c3", "k", 900, 910, history.OK, "v3").
				acquire("c1", "k", 1000, 1050, history.Fail, "v1").
				release("c3", "k", 1100, 1110, history.OK, "v3").
				acquire("c2", "k", 2149, 2160, history.Fail, "v2").events(9000)
		}, verdicts{invalid, unknown, 2, 0}},
		{"a refusal with every node reached leaves nothing", func() []history.Event {
			return new(hist).setup(masters).acquire("c1", "k", 1000, 1050, history.Fail, "v1").
				acquire("c2", "k", 1150, 1160, history.Fail, "v2").events(9000)
		}, verdicts{invalid, unknown, 2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := judge(t, tc.h())
			tc.want.check(t, res)
		})
	}
}

// A waiter handed the lock at a release (a queue's next in line: v3lock,
// the ZooKeeper recipes) began on a held lock: its grant counts, a
// refusal of such an attempt does not. c1 holds from 1010 and releases at
// 3000–3010; c2 waits from 1500.
func TestWaitersHandedTheLock(t *testing.T) {
	t.Parallel()
	held := func() *hist {
		return new(hist).setup(ensemble).acquire("c1", "k", 1000, 1010, history.OK, "v1").
			release("c1", "k", 3000, 3010, history.OK, "v1")
	}
	for _, tc := range []struct {
		name string
		h    func() []history.Event
		want verdicts
	}{
		{"handed the lock at the release: met", func() []history.Event {
			return held().acquire("c2", "k", 1500, 3020, history.OK, "v2").events(9000)
		}, verdicts{valid, unknown, 2, 0}},
		{"refused while the lock was held: not judged", func() []history.Event {
			return held().acquire("c2", "k", 1500, 2900, history.Fail, "v2").events(9000)
		}, verdicts{valid, unknown, 1, 0}},
		{"handed the lock while cut off from the ensemble: promised nothing", func() []history.Event {
			return held().fault(cut("c2", "n1", "n2", "n3"), 1400, 1400, 3015).
				acquire("c2", "k", 1500, 3020, history.OK, "v2").events(9000)
		}, verdicts{valid, unknown, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := judge(t, tc.h())
			tc.want.check(t, res)
		})
	}
}

// A lock renewed in the background stays taken while its holder runs and
// reaches the nodes; it frees itself an expiry after the holder is cut off
// for that long, or after a release that did not come back ok.
func TestRenewedLocks(t *testing.T) {
	t.Parallel()
	// c1 holds from 1010 (its OK) on; c2 is refused at 4000–4010, which
	// counts if c1's lock expired (1000 ms) a retry interval (100 ms)
	// before.
	base := func() *hist { return new(hist).setup(ensemble).acquire("c1", "k", 1000, 1010, history.OK, "v1") }
	refused := func(b *hist) []history.Event {
		return b.acquire("c2", "k", 4000, 4010, history.Fail, "v2").events(9000)
	}
	minority := func(b *hist, from, to int64) *hist { return b.fault(cut("c1", "n1", "n2"), from, from, to) }
	for _, tc := range []struct {
		name string
		h    func() []history.Event
		want verdicts
	}{
		{"a live holder keeps it", func() []history.Event { return refused(base()) }, verdicts{valid, unknown, 1, 0}},
		{"cut off for an expiry: free an expiry after the cut", func() []history.Event {
			return refused(minority(base(), 2000, 3000))
		}, verdicts{invalid, unknown, 2, 0}},
		{"cut off 1 ms short of an expiry: renewed in time", func() []history.Event {
			return refused(minority(base(), 2000, 2999))
		}, verdicts{valid, unknown, 1, 0}},
		{"cut off for good, just early enough", func() []history.Event {
			return refused(minority(base(), 2900, -1))
		}, verdicts{invalid, unknown, 2, 0}},
		{"cut off for good, 1 ms too late", func() []history.Event {
			return refused(minority(base(), 2901, -1))
		}, verdicts{valid, unknown, 1, 0}},
		{"held at its gate for an expiry", func() []history.Event {
			return refused(base().fault(history.Fault{Kind: "client-pause-held", Nodes: []string{"c1"}}, 1500, 1500, 2600))
		}, verdicts{invalid, unknown, 2, 0}},
		{"armed but not held: the background runs on", func() []history.Event {
			return refused(base().fault(history.Fault{Kind: "client-pause", Nodes: []string{"c1"}}, 1500, 1500, 2600))
		}, verdicts{valid, unknown, 1, 0}},
		// A crashed holder: c1 stops at its after-acquire point 5 ms into
		// an acquire whose ok is recorded when it resumes, at 3500. The
		// grant came before the stop, and nothing renewed it since: free
		// at 1005 + 1000 + 100.
		{"held at after-acquire during the acquire: free an expiry into the stop", func() []history.Event {
			return refused(new(hist).setup(ensemble).acquire("c1", "k", 1000, 3500, history.OK, "v1").
				fault(history.Fault{Kind: "client-pause-held", Nodes: []string{"c1"}, Point: "after-acquire"}, 1005, 1005, 3500))
		}, verdicts{invalid, unknown, 1, 0}},
		// Stopped anywhere else (its background, a signal), the grant may
		// have come after the stop, from the ok on: a live holder keeps it.
		{"held elsewhere during the acquire: taken from the ok on", func() []history.Event {
			return refused(new(hist).setup(ensemble).acquire("c1", "k", 1000, 3500, history.OK, "v1").
				fault(history.Fault{Kind: "client-pause-held", Nodes: []string{"c1"}}, 1005, 1005, 3500))
		}, verdicts{unknown, unknown, 0, 0}},
		{"a release of unknown outcome stops the renewal", func() []history.Event {
			return refused(base().release("c1", "k", 2900, 2990, history.Info, "v1"))
		}, verdicts{invalid, unknown, 2, 0}},
		{"a release of unknown outcome, 1 ms too late", func() []history.Event {
			return refused(base().release("c1", "k", 2901, 2990, history.Info, "v1"))
		}, verdicts{valid, unknown, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := judge(t, tc.h())
			tc.want.check(t, res)
		})
	}
}

// What a client must reach for the lock to promise anything, on both
// sides of each edge, and which promise judges an attempt: deadlock
// freedom once the bound (expiry + retry: 1100 ms) has passed since the
// last fault on the client's path, fault tolerance before.
func TestReachAndWhichPromise(t *testing.T) {
	t.Parallel()
	at := func(b *hist, inv, end int64, typ history.Type) []history.Event {
		return b.acquire("c2", "k", inv, end, typ, "v2").events(9000)
	}
	for _, tc := range []struct {
		name string
		h    func() []history.Event
		want verdicts
	}{
		{"masters: two of five down, a majority left", func() []history.Event {
			return at(new(hist).setup(masters).fault(kill("n4", "n5"), 1000, 1000, 5000), 2000, 2010, history.Fail)
		}, verdicts{unknown, invalid, 0, 1}},
		{"masters: three of five down", func() []history.Event {
			return at(new(hist).setup(masters).fault(kill("n3", "n4", "n5"), 1000, 1000, 5000), 2000, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"masters: two down and one cut", func() []history.Event {
			return at(new(hist).setup(masters).fault(kill("n4", "n5"), 1000, 1000, 5000).fault(cut("c2", "n1"), 1000, 1000, 5000),
				2000, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"masters: another client's cut is not on c2's path", func() []history.Event {
			return at(new(hist).setup(masters).fault(cut("c1", "n1", "n2", "n3"), 1000, 1000, 5000), 2000, 2010, history.Fail)
		}, verdicts{invalid, unknown, 1, 0}},
		{"masters: a cut of the storage is no fault of the lock", func() []history.Event {
			return at(new(hist).setup(masters).fault(cut("c2", "storage"), 1000, 1000, 5000), 2000, 2010, history.Fail)
		}, verdicts{invalid, unknown, 1, 0}},
		{"single: its node down", func() []history.Event {
			return at(new(hist).setup(single).fault(kill("n1"), 1000, 1000, 3000), 2000, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"single: the retry interval after the restart", func() []history.Event {
			return at(new(hist).setup(single).fault(kill("n1"), 1000, 1000, 3000), 3090, 3100, history.Fail)
		}, verdicts{unknown, invalid, 0, 1}},
		{"single: 1 ms short of it", func() []history.Event {
			return at(new(hist).setup(single).fault(kill("n1"), 1000, 1000, 3000), 3090, 3099, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"single on a client slow to reconnect: its reconnect time after the restart", func() []history.Event {
			slow := single
			slow.Reconnect = 200 * ms
			return at(new(hist).setup(slow).fault(kill("n1"), 1000, 1000, 3000), 3290, 3300, history.Fail)
		}, verdicts{unknown, invalid, 0, 1}},
		{"single on a client slow to reconnect: 1 ms short", func() []history.Event {
			slow := single
			slow.Reconnect = 200 * ms
			return at(new(hist).setup(slow).fault(kill("n1"), 1000, 1000, 3000), 3290, 3299, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"single: the bound after the restart", func() []history.Event {
			return at(new(hist).setup(single).fault(kill("n1"), 1000, 1000, 3000), 4090, 4100, history.Fail)
		}, verdicts{invalid, unknown, 1, 0}},
		{"single: 1 ms short of the bound", func() []history.Event {
			return at(new(hist).setup(single).fault(kill("n1"), 1000, 1000, 3000), 4090, 4099, history.Fail)
		}, verdicts{unknown, invalid, 0, 1}},
		{"the fault acted from when it began, before its start event", func() []history.Event {
			return at(new(hist).setup(single).fault(kill("n1"), 1990, 2020, 3000), 1950, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"the fault began as the attempt ended: none during it", func() []history.Event {
			return at(new(hist).setup(single).fault(kill("n1"), 2010, 2020, 3000), 1950, 2010, history.Fail)
		}, verdicts{invalid, unknown, 1, 0}},
		{"the fault began 1 ms before the attempt ended", func() []history.Event {
			return at(new(hist).setup(single).fault(kill("n1"), 2009, 2020, 3000), 1950, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"a clock moved: fault tolerance promises nothing", func() []history.Event {
			return at(new(hist).setup(masters).fault(history.Fault{Kind: "clock-jump", Nodes: []string{"n3"}, Offset: 500 * ms}, 1000, 1000, 3000),
				2000, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"a clock moved by 500 ms: deadlock freedom waits that much longer", func() []history.Event {
			return at(new(hist).setup(masters).fault(history.Fault{Kind: "clock-jump", Nodes: []string{"n3"}, Offset: -500 * ms}, 1000, 1000, 3000),
				4590, 4599, history.Fail)
		}, verdicts{unknown, invalid, 0, 1}},
		{"a clock moved by 500 ms: past the bound and the offset", func() []history.Event {
			return at(new(hist).setup(masters).fault(history.Fault{Kind: "clock-jump", Nodes: []string{"n3"}, Offset: -500 * ms}, 1000, 1000, 3000),
				4590, 4600, history.Fail)
		}, verdicts{invalid, unknown, 1, 0}},
		{"the client itself stopped", func() []history.Event {
			return at(new(hist).setup(single).fault(history.Fault{Kind: "client-pause", Nodes: []string{"c2"}}, 1000, 1000, 3000),
				2000, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"a fault the checker does not know keeps everyone out", func() []history.Event {
			return at(new(hist).setup(masters).fault(history.Fault{Kind: "promote", Nodes: []string{"r1"}}, 1000, 1000, 3000),
				2000, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"ensemble: c2 with a majority", func() []history.Event {
			return at(new(hist).setup(ensemble).fault(cut("c2", "n3"), 1000, 1000, 5000), 2000, 2010, history.Fail)
		}, verdicts{unknown, invalid, 0, 1}},
		{"ensemble: a member down, the others still electing", func() []history.Event {
			return at(new(hist).setup(ensemble).fault(kill("n3"), 1000, 1000, 5000), 1150, 1199, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"ensemble: a member down, a retry interval after the election began", func() []history.Event {
			return at(new(hist).setup(ensemble).fault(kill("n3"), 1000, 1000, 5000), 1150, 1200, history.Fail)
		}, verdicts{unknown, invalid, 0, 1}},
		{"ensemble: the member back, rejoining", func() []history.Event {
			return at(new(hist).setup(ensemble).fault(kill("n3"), 1000, 1000, 5000), 5150, 5199, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"ensemble: the member back a retry interval", func() []history.Event {
			return at(new(hist).setup(ensemble).fault(kill("n3"), 1000, 1000, 5000), 5150, 5200, history.Fail)
		}, verdicts{unknown, invalid, 0, 1}},
		{"masters hold no election", func() []history.Event {
			return at(new(hist).setup(masters).fault(kill("n3"), 1000, 1000, 5000), 1050, 1060, history.Fail)
		}, verdicts{unknown, invalid, 0, 1}},
		{"ensemble: c2 with a majority cut from each other", func() []history.Event {
			peers := history.Fault{Kind: "partition", Links: []history.Link{{Client: "n1", Node: "n2:election"}}}
			return at(new(hist).setup(ensemble).fault(cut("c2", "n3"), 1000, 1000, 5000).fault(peers, 1000, 1000, 5000), 2000, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"ensemble: c2 on the minority side", func() []history.Event {
			return at(new(hist).setup(ensemble).fault(cut("c2", "n1", "n2"), 1000, 1000, 5000), 2000, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"replicas: the replica up", func() []history.Event {
			return at(new(hist).setup(replicas).fault(kill("r2"), 1000, 1000, 5000), 2000, 2010, history.Fail)
		}, verdicts{unknown, invalid, 0, 1}},
		{"replicas: the replica down", func() []history.Event {
			return at(new(hist).setup(replicas).fault(kill("r1"), 1000, 1000, 5000), 2000, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
		{"replicas: its replication link cut", func() []history.Event {
			repl := history.Fault{Kind: "cut", Links: []history.Link{{Client: "r1", Node: "n1"}}}
			return at(new(hist).setup(replicas).fault(repl, 1000, 1000, 5000), 2000, 2010, history.Fail)
		}, verdicts{unknown, unknown, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := judge(t, tc.h())
			tc.want.check(t, res)
		})
	}
}

// A history without the lock's setup cannot be judged; one with a bad
// setup says what is wrong with it.
func TestWithoutSetup(t *testing.T) {
	t.Parallel()
	res, avail := judge(t, new(hist).acquire("c2", "k", 100, 110, history.Fail, "v").events(1000))
	if res.DeadlockFreedom.Verdict != unknown || res.FaultTolerance.Verdict != unknown || !strings.Contains(res.DeadlockFreedom.Reason, "setup") {
		t.Errorf("no setup: %+v", res)
	}
	if avail.Attempts != 1 || avail.Refused != 1 || avail.Bound != 0 {
		t.Errorf("availability without a setup: %+v", avail)
	}
	bad := single
	bad.Quorum = 2
	res, _ = judge(t, new(hist).setup(bad).acquire("c2", "k", 100, 110, history.Fail, "v").events(1000))
	if res.DeadlockFreedom.Verdict != unknown || !strings.Contains(res.DeadlockFreedom.Reason, "quorum 2 of 1") {
		t.Errorf("bad setup: %+v", res.DeadlockFreedom)
	}
}

// A violation names the attempt and its window: from when the lock was
// free and reachable to the refusal, and when the last fault healed.
func TestViolationWindow(t *testing.T) {
	t.Parallel()
	events := new(hist).setup(single).fault(kill("n1"), 500, 500, 1000).
		acquire("c1", "k", 1200, 1210, history.OK, "v1").release("c1", "k", 1500, 1510, history.OK, "v1").
		acquire("c2", "k", 2500, 2510, history.Fail, "v2").events(9000)
	res, _ := judge(t, events)
	if res.DeadlockFreedom.Verdict != invalid || len(res.DeadlockFreedom.Violations) != 1 {
		t.Fatalf("deadlock freedom %+v", res.DeadlockFreedom)
	}
	v := res.DeadlockFreedom.Violations[0]
	if v.From != 1510*ms || v.To != 2510*ms || v.Healed != 1000*ms || v.Client != "c2" || v.Key != "k" {
		t.Errorf("violation %+v, want from 1.51s (the release) to 2.51s, healed at 1s", v)
	}
	for _, w := range []string{"c2's acquire", "1.51s", "healed (1.00s)"} {
		if !strings.Contains(v.Text, w) {
			t.Errorf("text %q lacks %q", v.Text, w)
		}
	}
	if _, err := json.Marshal(res); err != nil {
		t.Error(err)
	}
}

// The availability figures: the share granted, the longest stretch in
// which clients kept trying while nobody held the lock, the time from each
// heal to the next grant.
func TestAvailability(t *testing.T) {
	t.Parallel()
	b := new(hist).setup(single).fault(kill("n1"), 1000, 1000, 2990)
	// c1 holds until 900; c2 tries while it holds (no stretch), then
	// while n1 is down, every 100 ms (a stretch); the grant at 3050 ends
	// it.
	b.acquire("c1", "k", 0, 10, history.OK, "v1").release("c1", "k", 900, 910, history.OK, "v1")
	b.acquire("c2", "k", 500, 510, history.Fail, "a")
	for i, t0 := range []int64{1000, 1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900, 2000, 2100, 2200, 2300, 2400, 2500, 2600, 2700, 2800, 2900} {
		b.acquire("c2", "k", t0+5, t0+20, history.Fail, "b"+string(rune('a'+i)))
	}
	b.acquire("c2", "k", 2995, 3010, history.OK, "v2")
	// A lonely refusal much later: its own stretch, not one with the
	// first.
	b.acquire("c3", "k", 6000, 6010, history.Fail, "v3")
	// A heal after every client's last attempt waits for no grant.
	b.fault(kill("n1"), 7000, 7000, 8000)
	_, a := judge(t, b.events(9000))
	if a.Attempts != 24 || a.Granted != 2 || a.Refused != 22 || a.Unknown != 0 {
		t.Errorf("counts %+v", a)
	}
	if want := []liveness.ClientFigures{{"c1", 1, 1}, {"c2", 22, 1}, {"c3", 1, 0}}; !slices.Equal(a.Clients, want) {
		t.Errorf("clients %+v, want %+v", a.Clients, want)
	}
	if a.Longest == nil || a.Longest.From != 1005*ms || a.Longest.To != 3010*ms || !a.Longest.Granted || a.Longest.Client != "c2" {
		t.Errorf("longest stretch %+v, want 1.005s to the grant at 3.01s", a.Longest)
	}
	if len(a.Heals) != 1 || a.Heals[0].At != 2990*ms || a.Heals[0].Grant != 3010*ms || a.Heals[0].Delay != 20*ms || a.MaxHealDelay != 20*ms {
		t.Errorf("heals %+v (max %d)", a.Heals, a.MaxHealDelay)
	}
	if a.Expiry != single.Expiry || a.Bound != single.Bound() {
		t.Errorf("expiry %d, bound %d", a.Expiry, a.Bound)
	}
	m := liveness.Merge(a, nil, a)
	if m.Attempts != 48 || m.Granted != 4 || m.Longest.Length() != a.Longest.Length() || m.HealCount != 2 || m.Share() != a.Share() ||
		len(m.Clients) != 3 || m.Clients[1] != (liveness.ClientFigures{"c2", 44, 2}) {
		t.Errorf("merged %+v", m)
	}
	if liveness.Merge(nil, nil) != nil {
		t.Error("Merge of nothing is not nil")
	}
}

// stall adds the harness standing still for length ms, recorded when it
// ran again at to.
func (b *hist) stall(to, length int64) *hist {
	return b.stallOf(history.ProcessHarness, to, length)
}

// stallOf adds process (the harness, or a client's driver) standing still
// for length ms, recorded when it ran again at to.
func (b *hist) stallOf(process string, to, length int64) *hist {
	b.add(history.Event{Process: process, Type: history.Info, F: history.Stall, Time: to * ms,
		Value: history.MustValue(history.StallValue{For: length * ms})})
	return b
}

// A stall of the harness (history.Stall: starved of the CPU or stopped)
// holds every client and what it runs in the background for its length:
// a refusal it overlapped is owed nothing (a grant still counts), one after it is judged as if
// it had not been (nothing of the lock's was faulted: deadlock freedom),
// and a holder that could not renew for an expiry may have lost its lock.
// Both sides of each edge.
func TestHarnessStallsHoldEveryClient(t *testing.T) {
	t.Parallel()
	// c2 is refused at 4990–5000 by a single instance nothing holds.
	refused := func(b *hist) []history.Event {
		return b.acquire("c2", "k", 4990, 5000, history.Fail, "v2").events(9000)
	}
	// c1 holds a lock renewed in the background from 1010 and never
	// releases; c2 is refused at 4990–5000.
	renewed := func(b *hist) []history.Event {
		return b.acquire("c1", "k", 1000, 1010, history.OK, "v1").acquire("c2", "k", 4990, 5000, history.Fail, "v2").events(9000)
	}
	for _, tc := range []struct {
		name string
		h    func() []history.Event
		want verdicts
	}{
		{"no stall: a refusal of a free lock breaks deadlock freedom", func() []history.Event {
			return refused(new(hist).setup(single))
		}, verdicts{invalid, unknown, 1, 0}},
		{"a stall during the attempt: owed nothing", func() []history.Event {
			return refused(new(hist).setup(single).stall(4995, 45))
		}, verdicts{unknown, unknown, 0, 0}},
		{"a grant during a stall still shows the lock live", func() []history.Event {
			return new(hist).setup(single).stall(4995, 45).acquire("c2", "k", 4990, 5000, history.OK, "v2").events(9000)
		}, verdicts{valid, unknown, 1, 0}},
		{"a stall into the retry interval before its end: owed nothing", func() []history.Event {
			return refused(new(hist).setup(single).stall(4905, 45))
		}, verdicts{unknown, unknown, 0, 0}},
		{"a stall that ended before that retry interval: judged, and by deadlock freedom (no fault on its path)", func() []history.Event {
			return refused(new(hist).setup(single).stall(4895, 45))
		}, verdicts{invalid, unknown, 1, 0}},
		{"a client pause there is a fault on its path: fault tolerance", func() []history.Event {
			return refused(new(hist).setup(single).fault(history.Fault{Kind: "client-pause", Nodes: []string{"c2"}}, 4850, 4850, 4895))
		}, verdicts{unknown, invalid, 0, 1}},
		{"a renewed holder alive: its lock is taken", func() []history.Event {
			return renewed(new(hist).setup(ensemble))
		}, verdicts{valid, unknown, 1, 0}},
		{"a renewed holder stalled for less than an expiry keeps it", func() []history.Event {
			return renewed(new(hist).setup(ensemble).stall(2999, 999))
		}, verdicts{valid, unknown, 1, 0}},
		{"a renewed holder stalled for an expiry may have lost it", func() []history.Event {
			return renewed(new(hist).setup(ensemble).stall(3500, 1500))
		}, verdicts{invalid, unknown, 2, 0}},
		{"a stall of no length holds no one", func() []history.Event {
			return refused(new(hist).setup(single).stall(4995, 0))
		}, verdicts{invalid, unknown, 1, 0}},
		// A driver's process standing still (its cgroup's CPU pressure)
		// holds its own client, no other.
		{"c2's driver stalled during its attempt: owed nothing", func() []history.Event {
			return refused(new(hist).setup(single).stallOf("c2", 4995, 45))
		}, verdicts{unknown, unknown, 0, 0}},
		{"c1's driver stalled during c2's attempt: c2 is judged", func() []history.Event {
			return refused(new(hist).setup(single).stallOf("c1", 4995, 45))
		}, verdicts{invalid, unknown, 1, 0}},
		{"a renewed holder whose driver stalled for an expiry may have lost it", func() []history.Event {
			return renewed(new(hist).setup(ensemble).stallOf("c1", 3500, 1500))
		}, verdicts{invalid, unknown, 2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := judge(t, tc.h())
			tc.want.check(t, res)
		})
	}
}
