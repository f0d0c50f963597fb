package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"splitbrain/history"
	"splitbrain/history/historytest"
)

// rb writes hand-made histories of critical sections on the protected
// resource, in the format the workload records (history/values.go). Its
// reads and writes name no lease, as histories recorded before the field,
// unless under gives one.
type rb struct {
	*historytest.Builder
	lease string
}

// under makes the reads and writes of the builder it returns name lease
// (history.Event.Lease), as the workload records them.
func (b rb) under(lease string) rb {
	b.lease = lease
	return b
}

func (b rb) leaseMod() historytest.Mod {
	if b.lease == "" {
		return noMod
	}
	return historytest.Lease(b.lease)
}

func newRB() rb { return rb{Builder: &historytest.Builder{}} }

func val(v any) historytest.Mod { return func(e *history.Event) { e.Value = history.MustValue(v) } }

func tok(t int64) historytest.Mod { return func(e *history.Event) { e.Token = &t } }

func noMod(*history.Event) {}

// init records the harness's initial write of key, applied with seq 1.
func (b rb) init(key string, v any) rb {
	b.Add(history.ProcessInit, history.Invoke, history.Write, key, 0, val(v))
	b.Add(history.ProcessInit, history.OK, history.Write, key, 0.001, val(history.Ack{Seq: 1}))
	return b
}

func (b rb) read(p, key string, inv, ok float64, v any) rb {
	b.Add(p, history.Invoke, history.Read, key, inv, b.leaseMod())
	b.Add(p, history.OK, history.Read, key, ok, val(v))
	return b
}

// write records a write, transfer or add: typ ok with seq, fail (rejected
// below highest), or info.
func (b rb) write(p string, f history.Func, key string, inv, done float64, v any, token int64, typ history.Type, seqOrHighest int64) rb {
	t := noMod
	if token > 0 {
		t = tok(token)
	}
	b.Add(p, history.Invoke, f, key, inv, val(v), t, b.leaseMod())
	switch typ {
	case history.OK:
		b.Add(p, typ, f, key, done, val(history.Ack{Seq: seqOrHighest}), t)
	case history.Fail:
		b.Add(p, typ, f, key, done, val(history.Ack{Highest: &seqOrHighest}), t, historytest.Err("write rejected by fencing"))
	default:
		b.Add(p, typ, f, key, done, t, historytest.Err("i/o timeout"))
	}
	return b
}

func (b rb) acquire(p, key string, inv, ok, dl float64, token int64) rb {
	b.Add(p, history.Invoke, history.Acquire, key, inv)
	mods := []historytest.Mod{historytest.Deadline(dl), historytest.Value("v-" + p)}
	if token > 0 {
		mods = append(mods, tok(token))
	}
	b.Add(p, history.OK, history.Acquire, key, ok, mods...)
	return b
}

func (b rb) release(p, key string, inv, done float64, typ history.Type) rb {
	return b.releaseAs(p, p, key, inv, done, typ)
}

// releaseAs releases owner's lease as process p (the client continues under
// a new process after an unknown outcome).
func (b rb) releaseAs(p, owner, key string, inv, done float64, typ history.Type) rb {
	b.Add(p, history.Invoke, history.Release, key, inv, historytest.Value("v-"+owner))
	b.Add(p, typ, history.Release, key, done, historytest.Value("v-"+owner))
	return b
}

// increment is a whole counter critical section of p from at: acquire
// (valid for 1s), read r, write r+1 (applied as seq), release.
func (b rb) increment(p string, at float64, token, r, seq int64) rb {
	b.acquire(p, "k", at, at+0.01, at+1, token)
	b.read(p, "k", at+0.02, at+0.03, r)
	b.write(p, history.Write, "k", at+0.04, at+0.05, r+1, token, history.OK, seq)
	return b.release(p, "k", at+0.06, at+0.07, history.OK)
}

// pauseHistory is Kleppmann's figure 1 on a resource: c1 acquires (valid
// until 1s) and reads; c1 pauses; c2 acquires at 1.1s, reads, writes,
// releases; c1 wakes at 1.5s and writes its stale value. With fencing
// (tokens 1 and 2) the storage rejects c1's write.
// The kinds of resource, as the initial write's value tells them.
const (
	kindCounter = "counter"
	kindBank    = "bank"
	kindSet     = "set"
)

func pauseHistory(kind string, fenced bool) []history.Event {
	b := newRB()
	var t1, t2 int64
	if fenced {
		t1, t2 = 1, 2
	}
	c1Typ, c1Arg := history.OK, int64(3)
	if fenced {
		c1Typ, c1Arg = history.Fail, 2
	}
	switch kind {
	case kindCounter:
		b.init("k", 0)
		b.acquire("c1", "k", 0.01, 0.02, 1.0, t1)
		b.read("c1", "k", 0.03, 0.04, 0)
		b.acquire("c2", "k", 1.1, 1.11, 2.1, t2)
		b.read("c2", "k", 1.12, 1.13, 0)
		b.write("c2", history.Write, "k", 1.14, 1.15, 1, t2, history.OK, 2)
		b.release("c2", "k", 1.16, 1.17, history.OK)
		b.write("c1", history.Write, "k", 1.5, 1.51, 1, t1, c1Typ, c1Arg)
		b.release("c1", "k", 1.52, 1.53, history.Fail)
		b.read(history.ProcessFinal, "k", 2.5, 2.51, 1)
	case kindBank:
		b.init("k", history.Balances{"a1": "100.00", "a2": "100.00", "a3": "100.00"})
		b.acquire("c1", "k", 0.01, 0.02, 1.0, t1)
		b.read("c1", "k", 0.03, 0.04, history.Balances{"a1": "100.00", "a2": "100.00", "a3": "100.00"})
		b.acquire("c2", "k", 1.1, 1.11, 2.1, t2)
		b.read("c2", "k", 1.12, 1.13, history.Balances{"a1": "100.00", "a2": "100.00", "a3": "100.00"})
		b.write("c2", history.Transfer, "k", 1.14, 1.15,
			history.TransferValue{From: "a1", To: "a3", Amount: "50.00", Balances: history.Balances{"a1": "50.00", "a3": "150.00"}}, t2, history.OK, 2)
		b.release("c2", "k", 1.16, 1.17, history.OK)
		b.write("c1", history.Transfer, "k", 1.5, 1.51,
			history.TransferValue{From: "a1", To: "a2", Amount: "30.00", Balances: history.Balances{"a1": "70.00", "a2": "130.00"}}, t1, c1Typ, c1Arg)
		b.release("c1", "k", 1.52, 1.53, history.Fail)
		final := history.Balances{"a1": "70.00", "a2": "130.00", "a3": "150.00"}
		if fenced {
			final = history.Balances{"a1": "50.00", "a2": "100.00", "a3": "150.00"}
		}
		b.read(history.ProcessFinal, "k", 2.5, 2.51, final)
	case kindSet:
		b.init("k", []int64{})
		b.acquire("c1", "k", 0.01, 0.02, 1.0, t1)
		b.read("c1", "k", 0.03, 0.04, history.SetRead{Size: 0})
		b.acquire("c2", "k", 1.1, 1.11, 2.1, t2)
		b.read("c2", "k", 1.12, 1.13, history.SetRead{Size: 0})
		b.write("c2", history.Add, "k", 1.14, 1.15, 21, t2, history.OK, 2)
		b.release("c2", "k", 1.16, 1.17, history.OK)
		b.write("c1", history.Add, "k", 1.5, 1.51, 11, t1, c1Typ, c1Arg)
		b.release("c1", "k", 1.52, 1.53, history.Fail)
		final := []int64{11}
		if fenced {
			final = []int64{21}
		}
		b.read(history.ProcessFinal, "k", 2.5, 2.51, history.SetRead{Size: 1, Elements: final})
	}
	return b.Events()
}

// The pause in the critical section: the lock kept its promise (P1 valid),
// the critical sections overlapped (P2), and each resource shows the harm
// without fencing and none with it.
func TestPauseInCriticalSection(t *testing.T) {
	for _, kind := range []string{kindCounter, kindBank, kindSet} {
		t.Run(kind+"/unfenced", func(t *testing.T) {
			res := Check(pauseHistory(kind, false))
			if res.Verdict != Invalid {
				t.Fatalf("verdict %s (%s), want invalid", res.Verdict, res.Reason)
			}
			if p := property(t, res, PropLeaseLock); p.Verdict != Valid {
				t.Errorf("P1 = %s (%s), want valid: c1's lease had expired when c2 acquired", p.Verdict, p.Reason)
			}
			// Without tokens the lock is the resource's only guard, so the
			// overlap decides too.
			p2 := property(t, res, PropCriticalSection)
			if p2.Verdict != Invalid || !p2.Decides {
				t.Errorf("P2 = %+v, want invalid and deciding", p2)
			}
			if res.CriticalSection == nil || len(res.CriticalSection.Violations) != 1 ||
				!strings.Contains(res.CriticalSection.Violations[0].Text, "c1's critical section ran 0.520s past its validity deadline") {
				t.Errorf("P2 violations = %+v", res.CriticalSection)
			}
			if p := property(t, res, kind); p.Verdict != Invalid || !p.Decides {
				t.Errorf("%s = %+v, want invalid", kind, p)
			}
			if res.Fencing != nil {
				t.Errorf("fencing checked without tokens: %+v", res.Fencing)
			}
			if !res.HasVisualization() {
				t.Error("no visualization of the failing window")
			}
		})
		t.Run(kind+"/fenced", func(t *testing.T) {
			res := Check(pauseHistory(kind, true))
			if res.Verdict != Valid {
				t.Fatalf("verdict %s (%s), want valid", res.Verdict, res.Reason)
			}
			if p := property(t, res, PropCriticalSection); p.Verdict != Invalid || p.Decides {
				t.Errorf("P2 = %+v, want the overlap reported but not deciding", p)
			}
			f := res.Fencing
			if f == nil || f.Verdict != Valid || f.Rejected != 1 || f.Accepted != 1 || f.RejectedWrites[0].Client != "c1" {
				t.Fatalf("fencing = %+v, want c1's write rejected", f)
			}
			if got := f.RejectedWrites[0].Label(); !strings.Contains(got, "token 1") || !strings.Contains(got, "rejected at 1.51s") {
				t.Errorf("rejected write label %q", got)
			}
		})
	}
}

func property(t *testing.T, res Result, name string) Property {
	t.Helper()
	for _, p := range res.Properties {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no property %q in %+v", name, res.Properties)
	return Property{}
}

func TestCounterLostUpdateExplained(t *testing.T) {
	res := Check(pauseHistory(kindCounter, false))
	c := res.Counter
	if c.LostUpdates != 1 || len(c.Lost) != 1 {
		t.Fatalf("counter = %+v, want one lost update", c)
	}
	l := c.Lost[0]
	if l.Write.Client != "c1" || l.Read != 0 || l.Count != 1 || l.Overwrote[0].Client != "c2" {
		t.Errorf("lost update = %+v, want c1's stale write undoing c2's", l)
	}
	want := "c1's write of 1 (read at 0.040s, written at 1.51s) was computed from a read of 0, but the counter was 1 by then: it undid 1 update(s) (c2's 1 at 1.15s)"
	if l.Text != want {
		t.Errorf("text =\n%s\nwant\n%s", l.Text, want)
	}
	if k := c.Keys[0]; k.Applied != 2 || k.Final == nil || *k.Final != 1 || k.Initial != 0 {
		t.Errorf("key = %+v", k)
	}
	if res.Visualized != PropCounter {
		t.Errorf("visualized %q, want the counter", res.Visualized)
	}
	var buf bytes.Buffer
	if err := res.WriteVisualization(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `c1 0→1`) {
		t.Error("visualization lacks c1's critical section")
	}
}

func TestCounter(t *testing.T) {
	valid := func() rb {
		return newRB().init("k", 0).increment("c1", 0.01, 0, 0, 2).increment("c2", 0.1, 0, 1, 3)
	}
	for _, tc := range []struct {
		name    string
		events  []history.Event
		verdict Verdict
		reason  string
	}{
		{"serial increments", valid().read(history.ProcessFinal, "k", 1, 1.01, 2).Events(), Valid, "2 increment(s) applied"},
		{"final read disagrees", valid().read(history.ProcessFinal, "k", 1, 1.01, 5).Events(), Invalid, "porcupine found no order"},
		{"stale write without seqs is still caught by porcupine", func() []history.Event {
			ev := pauseHistory(kindCounter, false)
			for i := range ev {
				if ev[i].Type == history.OK && ev[i].F == history.Write {
					ev[i].Value = history.MustValue(history.Ack{})
				}
			}
			return ev
		}(), Invalid, "porcupine found no order"},
		{"unknown write that landed", func() []history.Event {
			b := newRB().init("k", 0)
			b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
			b.read("c1", "k", 0.03, 0.04, 0)
			b.write("c1", history.Write, "k", 0.05, 0.3, 1, 0, history.Info, 0)
			b.releaseAs("c1.1", "c1", "k", 0.31, 0.32, history.OK)
			b.acquire("c2", "k", 0.4, 0.41, 1.4, 0)
			b.read("c2", "k", 0.42, 0.43, 1)
			b.write("c2", history.Write, "k", 0.44, 0.45, 2, 0, history.OK, 3)
			b.release("c2", "k", 0.46, 0.47, history.OK)
			return b.read(history.ProcessFinal, "k", 1, 1.01, 2).Events()
		}(), Valid, ""},
		{"unknown write that did not land", func() []history.Event {
			b := newRB().init("k", 0)
			b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
			b.read("c1", "k", 0.03, 0.04, 0)
			b.write("c1", history.Write, "k", 0.05, 0.3, 1, 0, history.Info, 0)
			b.releaseAs("c1.1", "c1", "k", 0.31, 0.32, history.OK)
			return b.read(history.ProcessFinal, "k", 1, 1.01, 0).Events()
		}(), Valid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.events)
			if res.Counter == nil {
				t.Fatal("no counter check")
			}
			if res.Counter.Verdict != tc.verdict || res.Verdict != tc.verdict {
				t.Fatalf("counter %s (%s), overall %s (%s); want %s", res.Counter.Verdict, res.Counter.Reason, res.Verdict, res.Reason, tc.verdict)
			}
			if !strings.Contains(res.Counter.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", res.Counter.Reason, tc.reason)
			}
		})
	}
}

func TestBank(t *testing.T) {
	res := Check(pauseHistory(kindBank, false))
	b := res.Bank
	if b == nil || b.Verdict != Invalid || b.BadReads != 1 {
		t.Fatalf("bank = %+v", b)
	}
	first := b.Violations[0]
	if first.Kind != "transfer" || first.Client != "c1" || first.Total != "350.00" {
		t.Errorf("first violation = %+v, want c1's transfer making 350.00", first)
	}
	want := `c1's transfer of 30.00 a1→a2 (read at 0.040s, written at 1.51s) broke bank "k": it was computed from stale balances ` +
		`(a1 was 100.00 when read but 50.00 by then (c2's transfer at 1.15s)); the total became 350.00 instead of 300.00`
	if first.Text != want {
		t.Errorf("text =\n%s\nwant\n%s", first.Text, want)
	}
	if k := b.Keys[0]; k.Total != "300.00" || k.FinalTotal != "350.00" || k.Applied != 2 || k.Accounts != 3 {
		t.Errorf("key = %+v", k)
	}

	neg := newRB().init("k", history.Balances{"a1": "10.00", "a2": "0.00"})
	neg.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
	neg.read("c1", "k", 0.03, 0.04, history.Balances{"a1": "10.00", "a2": "0.00"})
	neg.write("c1", history.Transfer, "k", 0.05, 0.06,
		history.TransferValue{From: "a1", To: "a2", Amount: "10.01", Balances: history.Balances{"a1": "-0.01", "a2": "10.01"}}, 0, history.OK, 2)
	neg.release("c1", "k", 0.07, 0.08, history.OK)
	neg.read(history.ProcessFinal, "k", 1, 1.01, history.Balances{"a1": "-0.01", "a2": "10.01"})
	res = Check(neg.Events())
	if res.Bank.Verdict != Invalid || !strings.Contains(res.Bank.Violations[0].Text, "negative: a1=-0.01") {
		t.Errorf("negative balance: %+v", res.Bank)
	}

	ok := newRB().init("k", history.Balances{"a1": "10.00", "a2": "0.10"})
	ok.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
	ok.read("c1", "k", 0.03, 0.04, history.Balances{"a1": "10.00", "a2": "0.10"})
	// Decimal arithmetic: 0.1 + 0.2 is exactly 0.3 here.
	ok.write("c1", history.Transfer, "k", 0.05, 0.06,
		history.TransferValue{From: "a1", To: "a2", Amount: "0.20", Balances: history.Balances{"a1": "9.80", "a2": "0.30"}}, 0, history.OK, 2)
	ok.release("c1", "k", 0.07, 0.08, history.OK)
	ok.read(history.ProcessFinal, "k", 1, 1.01, history.Balances{"a1": "9.80", "a2": "0.30"})
	res = Check(ok.Events())
	if res.Verdict != Valid || res.Bank.Verdict != Valid {
		t.Errorf("valid bank: %s (%s)", res.Verdict, res.Reason)
	}
}

func TestSet(t *testing.T) {
	res := Check(pauseHistory(kindSet, false))
	s := res.Set
	if s == nil || s.Verdict != Invalid || s.LostCount != 1 || s.Lost[0].Element != 21 {
		t.Fatalf("set = %+v", s)
	}
	want := `c2's add of 21 (read at 1.13s, written at 1.15s) is missing from the final read at 2.50s: ` +
		`c1's add of 11 (read at 0.040s, written at 1.51s) wrote back a set read before it was added`
	if s.Lost[0].Text != want {
		t.Errorf("text =\n%s\nwant\n%s", s.Lost[0].Text, want)
	}

	base := func(final ...int64) []history.Event {
		b := newRB().init("k", []int64{})
		b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
		b.read("c1", "k", 0.03, 0.04, history.SetRead{})
		b.write("c1", history.Add, "k", 0.05, 0.06, 11, 0, history.OK, 2)
		b.release("c1", "k", 0.07, 0.08, history.OK)
		b.acquire("c2", "k", 0.1, 0.11, 1.1, 0)
		b.read("c2", "k", 0.12, 0.13, history.SetRead{Size: 1})
		b.write("c2", history.Add, "k", 0.14, 0.15, 21, 0, history.Info, 0)
		b.releaseAs("c2.1", "c2", "k", 0.16, 0.17, history.OK)
		b.acquire("c3", "k", 0.2, 0.21, 1.2, 0)
		b.read("c3", "k", 0.22, 0.23, history.SetRead{Size: 1})
		b.write("c3", history.Add, "k", 0.24, 0.25, 31, 0, history.Fail, 5)
		b.release("c3", "k", 0.26, 0.27, history.OK)
		if final != nil {
			b.read(history.ProcessFinal, "k", 1, 1.01, history.SetRead{Size: len(final), Elements: final})
		}
		return b.Events()
	}
	for _, tc := range []struct {
		name    string
		events  []history.Event
		verdict Verdict
		reason  string
	}{
		{"acknowledged present, unknown absent", base(11), Valid, "all 1 acknowledged add(s)"},
		{"unknown present", base(11, 21), Valid, ""},
		{"acknowledged missing", base(21), Invalid, "1 acknowledged add(s) lost"},
		{"never added", base(11, 99), Invalid, "never added: [99]"},
		{"rejected but present", base(11, 31), Invalid, "rejected add(s) are in the final read: [31]"},
		{"no final read", base(), Unknown, "no final read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.events)
			if res.Set.Verdict != tc.verdict || res.Verdict != tc.verdict {
				t.Fatalf("set %s (%s), overall %s; want %s", res.Set.Verdict, res.Set.Reason, res.Verdict, tc.verdict)
			}
			if !strings.Contains(res.Set.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", res.Set.Reason, tc.reason)
			}
		})
	}
}

func TestFencing(t *testing.T) {
	// A lock whose token went backwards: c2's later write carries a lower
	// token than c1's earlier one. At a storage that fences, it would have
	// been refused, so its being applied is a stale token accepted; at one
	// that does not, the storage's check only says so, and the counter
	// (serial updates, nothing lost) is the resource's answer. Either way
	// the lock broke its promise of increasing tokens (lock tokens), which
	// is the lock's answer (issue 33: it was demoted to a note, and the
	// play judged valid).
	fencing := func(e *history.Event) { e.Fencing = true }
	for _, tc := range []struct {
		name    string
		mark    historytest.Mod
		decides bool
		overall Verdict
		reason  string
	}{
		{"storage fences", fencing, true, Invalid, "1 stale token(s) accepted: "},
		{"storage does not fence", noMod, false, Invalid, "the storage does not fence, so this does not decide: 1 write(s) applied out of token order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newRB()
			b.Add(history.ProcessInit, history.Invoke, history.Write, "k", 0, val(0), tc.mark)
			b.Add(history.ProcessInit, history.OK, history.Write, "k", 0.001, val(history.Ack{Seq: 1}))
			b.increment("c1", 0.01, 2, 0, 2).increment("c2", 0.1, 1, 1, 3)
			b.read(history.ProcessFinal, "k", 1, 1.01, 2)
			res := Check(b.Events())
			f := res.Fencing
			if f == nil || f.Verdict != Invalid || len(f.Violations) != 1 || f.StorageFences != tc.decides || res.Verdict != tc.overall {
				t.Fatalf("fencing = %+v, overall %s (%s); want fencing invalid, overall %s", f, res.Verdict, res.Reason, tc.overall)
			}
			if !strings.HasPrefix(f.Reason, tc.reason) {
				t.Errorf("reason %q, want it to begin %q", f.Reason, tc.reason)
			}
			for _, p := range res.Properties {
				if p.Name == PropFencing && p.Decides != tc.decides {
					t.Errorf("fencing decides %v, want %v", p.Decides, tc.decides)
				}
				// The lock guards the resource alone unless the storage
				// fences: then P2 decides too.
				if p.Name == PropCriticalSection && p.Decides == tc.decides {
					t.Errorf("P2 decides %v, want %v", p.Decides, !tc.decides)
				}
			}
			if res.Counter.Verdict != Valid {
				t.Errorf("counter %s: the updates themselves were serial", res.Counter.Verdict)
			}
			wantResource := Valid
			if tc.decides {
				wantResource = Invalid
			}
			if a := AnswersOf(res); a.Lock != Invalid || a.Resource != wantResource {
				t.Errorf("answers %+v, want the lock invalid (its tokens went backwards), the resource %s", a, wantResource)
			}
			want := "the storage applied c2's write of 2 (token 1, read at 0.130s, written at 0.150s) after c1's write of 1 (token 2, read at 0.040s, written at 0.060s) (seq 2, then 3): a stale token was accepted"
			if f.Violations[0].Text != want {
				t.Errorf("text =\n%s\nwant\n%s", f.Violations[0].Text, want)
			}
		})
	}

	// One lease writing twice with its token is fine; another lease
	// reusing the token is not.
	same := newRB().init("k", 0)
	same.acquire("c1", "k", 0.01, 0.02, 1.0, 4)
	same.read("c1", "k", 0.03, 0.04, 0)
	same.write("c1", history.Write, "k", 0.05, 0.06, 1, 4, history.OK, 2)
	same.read("c1", "k", 0.07, 0.08, 1)
	same.write("c1", history.Write, "k", 0.09, 0.1, 2, 4, history.OK, 3)
	same.release("c1", "k", 0.11, 0.12, history.OK)
	same.read(history.ProcessFinal, "k", 1, 1.01, 2)
	if res := Check(same.Events()); res.Fencing.Verdict != Valid || res.Verdict != Valid {
		t.Errorf("one lease, one token: %s (%s)", res.Verdict, res.Reason)
	}
	same.acquire("c2", "k", 1.1, 1.11, 2.0, 4)
	same.read("c2", "k", 1.12, 1.13, 2)
	same.write("c2", history.Write, "k", 1.14, 1.15, 3, 4, history.OK, 4)
	same.release("c2", "k", 1.16, 1.17, history.OK)
	res := Check(same.Events())
	if res.Fencing.Verdict != Invalid {
		t.Errorf("two leases, one token: %+v", res.Fencing)
	}
	// The storage does not fence, so its check decides nothing; the lock
	// handing two leases one token is the lock's own break, and decides.
	if res.Verdict != Invalid || res.Tokens == nil || res.Tokens.Verdict != Invalid || AnswersOf(res).Lock != Invalid {
		t.Errorf("two leases, one token: %s (%s), tokens %+v", res.Verdict, res.Reason, res.Tokens)
	}
}

// P2 decides when no resource is checked: a client holding past its
// deadline (the mutex workload under a pause) breaks it though P1 holds.
func TestCriticalSectionDecidesWithoutResource(t *testing.T) {
	b := newRB()
	b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
	b.acquire("c2", "k", 1.1, 1.11, 2.1, 0)
	b.release("c1", "k", 1.5, 1.51, history.Fail)
	b.release("c2", "k", 1.6, 1.61, history.OK)
	res := Check(b.Events())
	if res.Verdict != Invalid || property(t, res, PropLeaseLock).Verdict != Valid {
		t.Fatalf("verdict %s (%s), want invalid by P2 alone", res.Verdict, res.Reason)
	}
	if !strings.HasPrefix(res.Reason, "critical sections overlapped: 1 overlapping critical section(s)") {
		t.Errorf("reason %q", res.Reason)
	}
	if res.Visualized != PropCriticalSection || !res.HasVisualization() {
		t.Errorf("visualized %q", res.Visualized)
	}
	c1 := res.Keys[0].Beliefs[0]
	if c1.End != historytest.Sec(1.0) || c1.EndReason != EndDeadline || c1.CSEnd != historytest.Sec(1.5) || c1.CSEndReason != EndRelease {
		t.Errorf("c1 belief = %+v, want P1 to end at the deadline and P2 at the release", c1)
	}
}

// Without a release, the critical section ends with its last resource
// operation if that came after the deadline.
func TestCriticalSectionEndsWithLastOperation(t *testing.T) {
	b := newRB().init("k", 0)
	b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
	b.read("c1", "k", 0.03, 0.04, 0)
	b.write("c1", history.Write, "k", 1.2, 1.3, 1, 0, history.OK, 2)
	res := Check(b.Events())
	c1 := res.Keys[0].Beliefs[0]
	if c1.CSEnd != historytest.Sec(1.3) || c1.CSEndReason != EndLastOp || c1.ResourceOps != 2 {
		t.Errorf("c1 belief = %+v", c1)
	}
}

func TestResourceWithoutInitIsNotChecked(t *testing.T) {
	b := newRB()
	b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
	b.read("c1", "k", 0.03, 0.04, 0)
	b.release("c1", "k", 0.05, 0.06, history.OK)
	res := Check(b.Events())
	if res.Counter != nil || res.Verdict != Valid || !strings.Contains(strings.Join(res.Notes, "\n"), "not checked: no initial state") {
		t.Errorf("got %s, counter %+v, notes %q", res.Verdict, res.Counter, res.Notes)
	}
}

func TestResultWithResourcesRoundTripsThroughJSON(t *testing.T) {
	res := Check(pauseHistory(kindBank, true))
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Bank == nil || back.Bank.Verdict != Valid || back.Fencing == nil || back.Fencing.Rejected != 1 ||
		back.CriticalSection == nil || back.CriticalSection.ViolationCount != 1 || len(back.Properties) != 7 ||
		back.Tokens == nil || back.Tokens.Grants != 2 || back.Liveness == nil || back.Availability == nil ||
		back.Availability.Granted != 2 {
		t.Errorf("round trip lost data: %s", data)
	}
}

// A counter whose critical sections all overlap cannot be cut into pieces;
// a search that runs out of time is unknown, never valid.
func TestCounterTimeoutIsUnknown(t *testing.T) {
	b := newRB().init("k", 0)
	const n = 400
	for i := range n {
		p := "c" + itoa(i+1)
		b.Add(p, history.Invoke, history.Acquire, "k", 0.01)
	}
	for i := range n {
		p := "c" + itoa(i+1)
		at := 1 + float64(i)*0.001
		b.Add(p, history.OK, history.Acquire, "k", at, historytest.Deadline(100), historytest.Value("v-"+p))
	}
	for i := range n {
		b.Add("c"+itoa(i+1), history.Invoke, history.Read, "k", 2)
	}
	for i := range n {
		b.Add("c"+itoa(i+1), history.OK, history.Read, "k", 3+float64(i)*0.001, val(i))
	}
	for i := range n {
		b.Add("c"+itoa(i+1), history.Invoke, history.Write, "k", 4, val(i+1))
	}
	for i := range n {
		b.Add("c"+itoa(i+1), history.OK, history.Write, "k", 5+float64(i)*0.001, val(history.Ack{Seq: int64(i + 2)}))
	}
	// porcupine's own timer cannot be relied on to fire before a fast
	// search ends; the search is made to run out of time instead.
	timesOut := func(c *config) {
		c.check = func(porcupine.Model, []porcupine.Operation, time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
			return porcupine.Unknown, porcupine.LinearizationInfo{}
		}
	}
	res := Check(b.Events(), timesOut, WithTimeout(time.Second))
	if res.Counter == nil || res.Counter.Verdict != Unknown || !strings.Contains(res.Counter.Reason, "did not finish") {
		t.Fatalf("counter = %+v", res.Counter)
	}
	if res.Counter.Ops != n {
		t.Errorf("ops = %d, want %d", res.Counter.Ops, n)
	}
	if res.Verdict == Valid {
		t.Error("a timed-out check passed")
	}
	// With time to finish, the same history is valid for the counter: the
	// storage applied the writes in the order that makes every read right.
	if res := Check(b.Events(), WithTimeout(time.Minute)); res.Counter.Verdict != Valid {
		t.Errorf("without a timeout: counter %s (%s)", res.Counter.Verdict, res.Counter.Reason)
	}
}

// A late extension starts a new belief of the same lease: that lease's
// writes with its one token, before and after, are one lease's writes, not
// a stale token accepted. The other side: another lease with that token is.
func TestFencingComparesLeasesNotBeliefs(t *testing.T) {
	build := func(otherLease bool) []history.Event {
		b := newRB().init("k", 0)
		b.acquire("c1", "k", 0.01, 0.02, 0.5, 4)
		b.read("c1", "k", 0.03, 0.04, 0)
		b.write("c1", history.Write, "k", 0.05, 0.06, 1, 4, history.OK, 2)
		b.Add("c1", history.Invoke, history.Extend, "k", 0.6, historytest.Value("v-c1"))
		b.Add("c1", history.OK, history.Extend, "k", 0.61, historytest.Value("v-c1"), historytest.Deadline(1.5))
		b.read("c1", "k", 0.62, 0.63, 1)
		b.write("c1", history.Write, "k", 0.64, 0.65, 2, 4, history.OK, 3)
		b.release("c1", "k", 0.7, 0.71, history.OK)
		final := 2
		if otherLease {
			b.acquire("c2", "k", 1.6, 1.61, 2.5, 4)
			b.read("c2", "k", 1.62, 1.63, 2)
			b.write("c2", history.Write, "k", 1.64, 1.65, 3, 4, history.OK, 4)
			b.release("c2", "k", 1.66, 1.67, history.OK)
			final = 3
		}
		b.read(history.ProcessFinal, "k", 2.6, 2.61, final)
		return b.Events()
	}
	if res := Check(build(false)); res.Fencing == nil || res.Fencing.Verdict != Valid {
		t.Errorf("one lease, extended late, one token: fencing %+v", res.Fencing)
	}
	if res := Check(build(true)); res.Fencing == nil || res.Fencing.Verdict != Invalid {
		t.Errorf("another lease with the same token: fencing %+v (%s)", res.Fencing, res.Reason)
	}
}

// Every resource operation is tied to its lease by the lease's value when
// the history records it (history.Event.Lease), and every applied write is
// checked, in a lease or not. Histories without the field fall back to the
// process: the belief it holds on the key.
func TestResourceOpsTiedToTheirLease(t *testing.T) {
	// c1 reads 0 under its lease and releases; c2 increments 0 to 1; c1
	// then writes 1, computed from its read: c2's increment is lost.
	afterRelease := func(named bool) []history.Event {
		b := newRB().init("k", 0)
		l1, l2 := b, b
		if named {
			l1, l2 = b.under("v-c1"), b.under("v-c2")
		}
		b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
		l1.read("c1", "k", 0.03, 0.04, 0)
		b.release("c1", "k", 0.05, 0.06, history.OK)
		b.acquire("c2", "k", 0.1, 0.11, 1.1, 0)
		l2.read("c2", "k", 0.12, 0.13, 0)
		l2.write("c2", history.Write, "k", 0.14, 0.15, 1, 0, history.OK, 2)
		b.release("c2", "k", 0.16, 0.17, history.OK)
		l1.write("c1", history.Write, "k", 0.2, 0.21, 1, 0, history.OK, 3)
		return b.read(history.ProcessFinal, "k", 1, 1.01, 1).Events()
	}
	// The workload's shape: c1's extension has an unknown outcome, so c1
	// continues as c1.1, still holding its lease, and writes after a
	// pause past its deadline.
	afterUnknownExtend := func(named bool) []history.Event {
		b := newRB().init("k", 0)
		l1, l2 := b, b
		if named {
			l1, l2 = b.under("v-c1"), b.under("v-c2")
		}
		b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
		l1.read("c1", "k", 0.03, 0.04, 0)
		b.Add("c1", history.Invoke, history.Extend, "k", 0.5, historytest.Value("v-c1"))
		b.Add("c1", history.Info, history.Extend, "k", 0.6, historytest.Value("v-c1"), historytest.Err("i/o timeout"))
		b.acquire("c2", "k", 1.1, 1.11, 2.1, 0)
		l2.read("c2", "k", 1.12, 1.13, 0)
		l2.write("c2", history.Write, "k", 1.14, 1.15, 1, 0, history.OK, 2)
		b.release("c2", "k", 1.16, 1.17, history.OK)
		l1.write("c1.1", history.Write, "k", 1.5, 1.51, 1, 0, history.OK, 3)
		b.releaseAs("c1.1", "c1", "k", 1.52, 1.53, history.Fail)
		return b.read(history.ProcessFinal, "k", 2.5, 2.51, 1).Events()
	}
	for _, tc := range []struct {
		name    string
		events  []history.Event
		verdict Verdict
		reason  string
		note    string
	}{
		{"a write after its release, named by its lease", afterRelease(true), Invalid,
			"c1's write of 1 (read at 0.040s, written at 0.210s) was computed from a read of 0, but the counter was 1 by then", ""},
		// Issue 33: a write outside any lease counts as any other, computed
		// from its client's last read; it was judged a blind write and the
		// lost update VALID.
		{"the same without lease values: outside any lease, computed from its client's read", afterRelease(false), Invalid,
			"c1's write of 1 (read at 0.040s, written at 0.210s) was computed from a read of 0, but the counter was 1 by then",
			`write by c1 on "k" at event 16 ran outside any lease`},
		{"a write under a new process after an unknown extend, named by its lease", afterUnknownExtend(true), Invalid,
			"c1.1's write of 1", ""},
		{"the same without lease values: the read was c1's, the write c1.1's", afterUnknownExtend(false), Invalid,
			"c1.1's write of 1", `write by c1.1 on "k" at event 16 ran outside any lease`},
		{"a write outside any lease that lost nothing is valid, and named", func() []history.Event {
			b := newRB().init("k", 0)
			b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
			b.read("c1", "k", 0.03, 0.04, 0)
			b.release("c1", "k", 0.05, 0.06, history.OK)
			b.write("c1", history.Write, "k", 0.2, 0.21, 1, 0, history.OK, 2)
			return b.read(history.ProcessFinal, "k", 1, 1.01, 1).Events()
		}(), Valid, "1 of the writes made outside their client's lease", "ran outside any lease"},
		{"an applied write outside any lease is part of the register", func() []history.Event {
			b := newRB().init("k", 0)
			b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
			b.release("c1", "k", 0.05, 0.06, history.OK)
			b.write("c1", history.Write, "k", 0.2, 0.21, 7, 0, history.OK, 2)
			return b.read(history.ProcessFinal, "k", 1, 1.01, 7).Events()
		}(), Valid, "", "ran outside any lease"},
		{"a read-then-write outside any lease is a critical section of its own", func() []history.Event {
			b := newRB().init("k", 0)
			b.read("c3", "k", 0.03, 0.04, 0)
			b.increment("c2", 0.1, 0, 0, 2)
			b.write("c3", history.Write, "k", 0.3, 0.31, 1, 0, history.OK, 3)
			return b.read(history.ProcessFinal, "k", 1, 1.01, 1).Events()
		}(), Invalid, "c3's write of 1", ""},
		{"a late extension continues its lease's critical section", func() []history.Event {
			b := newRB().init("k", 0)
			b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
			b.read("c1", "k", 0.1, 0.11, 0)
			b.increment("c2", 1.1, 0, 0, 2)
			b.Add("c1", history.Invoke, history.Extend, "k", 1.4, historytest.Value("v-c1"))
			b.Add("c1", history.OK, history.Extend, "k", 1.45, historytest.Value("v-c1"), historytest.Deadline(3.0))
			b.write("c1", history.Write, "k", 1.5, 1.51, 1, 0, history.OK, 3)
			b.release("c1", "k", 1.6, 1.61, history.OK)
			return b.read(history.ProcessFinal, "k", 3.5, 3.51, 1).Events()
		}(), Invalid, "c1's write of 1 (read at 0.110s", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.events)
			if res.Counter == nil {
				t.Fatal("no counter check")
			}
			if res.Counter.Verdict != tc.verdict || !strings.Contains(res.Counter.Reason, tc.reason) {
				t.Fatalf("counter %s (%s), want %s with %q", res.Counter.Verdict, res.Counter.Reason, tc.verdict, tc.reason)
			}
			if tc.note != "" && !strings.Contains(strings.Join(res.Notes, "\n"), tc.note) {
				t.Errorf("notes %q lack %q", res.Notes, tc.note)
			}
		})
	}
}

// The storage's order of applied writes decides, also where a write of
// unknown outcome landed in a gap of it: c2 reads 0 and writes 1, applied
// as seq 3, so some write landed as seq 2 between them — only c1's (c1.1's
// began after c2's write returned). c2's read-then-write was not atomic. The
// other side: c2's write applied as seq 2, nothing landed in between.
// (Found by the reference check: porcupine's register ignored the order,
// and the replay gave up on a gap it could not match to a read.)
func TestCounterStorageOrderDecides(t *testing.T) {
	build := func(seq int64) []history.Event {
		b := newRB().init("k", 0)
		b.acquire("c2", "k", 0.001, 0.002, 1.0, 0)
		b.under("v-c2").read("c2", "k", 0.01, 0.02, 0)
		b.write("c1", history.Write, "k", 0.03, 0.04, 5, 0, history.Info, 0)
		b.under("v-c2").write("c2", history.Write, "k", 0.05, 0.06, 1, 0, history.OK, seq)
		b.write("c1.1", history.Write, "k", 0.1, 0.11, 7, 0, history.Info, 0)
		b.release("c2", "k", 0.12, 0.13, history.OK)
		return b.read(history.ProcessFinal, "k", 0.2, 0.21, 1).Events()
	}
	for _, tc := range []struct {
		seq     int64
		verdict Verdict
	}{{3, Invalid}, {2, Valid}} {
		t.Run(fmt.Sprintf("seq %d", tc.seq), func(t *testing.T) {
			res := Check(build(tc.seq))
			if res.Counter == nil || res.Counter.Verdict != tc.verdict {
				t.Fatalf("counter %+v, want %s", res.Counter, tc.verdict)
			}
		})
	}
}

// A gap in the storage's order is filled by a write of unknown outcome
// invoked before the next applied write returned, never by one invoked
// after it: here seq 3 can only be c2's own second write (of 1), so c2.1's
// write of 2 at seq 4, computed from a read of 1, lost nothing. c1's write
// of 2, still pending, also read 1, but was sent after seq 4 returned.
// (Found by the reference check: the replay took c1's write for seq 3 and
// reported a lost update that porcupine did not see.)
func TestCounterGapFilledOnlyByAWriteSentInTime(t *testing.T) {
	b := newRB().init("k", 0)
	c2 := b.under("v-c2")
	lc1, lc2 := historytest.Lease("v-c1"), historytest.Lease("v-c2")
	b.acquire("c2", "k", 0.01, 0.02, 1.0, 0)
	c2.read("c2", "k", 0.03, 0.04, 0)
	c2.write("c2", history.Write, "k", 0.05, 0.06, 1, 0, history.OK, 2)
	b.Add("c2", history.Invoke, history.Write, "k", 0.08, val(1), lc2)
	b.acquire("c1", "k", 0.09, 0.1, 1.0, 0)
	b.Add("c2", history.Info, history.Write, "k", 0.11, historytest.Err("i/o timeout"))
	b.Add("c1", history.Invoke, history.Read, "k", 0.11, lc1)
	c2.read("c2.1", "k", 0.11, 0.111, 1)
	b.Add("c1", history.OK, history.Read, "k", 0.112, val(1))
	c2.write("c2.1", history.Write, "k", 0.115, 0.13, 2, 0, history.OK, 4)
	b.Add("c1", history.Invoke, history.Write, "k", 0.15, val(2), lc1)
	events := b.read(history.ProcessFinal, "k", 0.2, 0.21, 2).Events()
	res := Check(events)
	if res.Counter == nil || res.Counter.Verdict != Valid || res.Counter.LostUpdates != 0 {
		t.Fatalf("counter %+v (%s), want valid with no update lost", res.Counter, res.Reason)
	}
}

// A resource's harm names the applied writes that took effect outside
// their writer's lease: there the lock guarded nothing, and a fencing
// storage turns a stale write away only once a higher token has written.
// Seen in a loaded make test (runner TestPauseInCriticalSectionOnEveryResource,
// fenced bank): c2, starved of the CPU past its lease, landed its transfer
// with an older token between the next holder's read and its write (token
// 94); both were applied, and the reason named only the later, well-leased
// transfer as stale.
func TestHarmNamesUnguardedWrites(t *testing.T) {
	all := history.Balances{"a1": "100.00", "a2": "100.00", "a3": "100.00"}
	stalled := func() []history.Event {
		b := newRB().init("k", all)
		b.acquire("c2", "k", 0.01, 0.02, 1.0, 1)
		b.read("c2", "k", 0.03, 0.04, all)
		// Sent in c2's lease; the storage applies it only at 1.30s.
		b.Add("c2", history.Invoke, history.Transfer, "k", 0.9,
			val(history.TransferValue{From: "a1", To: "a3", Amount: "50.00", Balances: history.Balances{"a1": "50.00", "a3": "150.00"}}), tok(1))
		b.acquire("c1", "k", 1.1, 1.11, 2.1, 2)
		b.read("c1", "k", 1.12, 1.13, all)
		b.Add("c2", history.OK, history.Transfer, "k", 1.3, val(history.Ack{Seq: 2}), tok(1))
		b.write("c1", history.Transfer, "k", 1.5, 1.51,
			history.TransferValue{From: "a1", To: "a2", Amount: "30.00", Balances: history.Balances{"a1": "70.00", "a2": "130.00"}}, 2, history.OK, 3)
		b.release("c1", "k", 1.52, 1.53, history.OK)
		b.release("c2", "k", 1.54, 1.55, history.Fail)
		return b.read(history.ProcessFinal, "k", 2.5, 2.51, history.Balances{"a1": "70.00", "a2": "130.00", "a3": "150.00"}).Events()
	}
	// Two clients believing at once (the lock broke), each write inside
	// its writer's lease: the harm is the lock's, and no write is named.
	overlapping := func() []history.Event {
		b := newRB().init("k", 0)
		b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
		b.acquire("c2", "k", 0.03, 0.04, 1.0, 0)
		b.read("c1", "k", 0.05, 0.06, 0)
		b.read("c2", "k", 0.07, 0.08, 0)
		b.write("c1", history.Write, "k", 0.1, 0.11, 1, 0, history.OK, 2)
		b.write("c2", history.Write, "k", 0.2, 0.21, 1, 0, history.OK, 3)
		b.release("c1", "k", 0.3, 0.31, history.OK)
		b.release("c2", "k", 0.32, 0.33, history.OK)
		return b.read(history.ProcessFinal, "k", 1.5, 1.51, 1).Events()
	}
	const named = "took effect outside their writer's lease"
	for _, tc := range []struct {
		name   string
		events []history.Event
		reason func(Result) string
		want   string // "" = the reason names no such write
	}{
		{"a stalled holder's late transfer, both tokens applied", stalled(), func(r Result) string { return r.Bank.Reason },
			"1 applied write(s) " + named + ", where the lock did not guard them: c2's transfer of 50.00 a1→a3 (token 1, read at 0.040s, written at 1.30s), sent in c2's lease, which ended at 1.00s (validity deadline)"},
		{"Kleppmann's figure 1 on the counter: c1 writes after its lease", pauseHistory(kindCounter, false), func(r Result) string { return r.Counter.Reason },
			"c1's write of 1 (read at 0.040s, written at 1.51s), after c1's lease ended at 1.00s (validity deadline)"},
		{"the same on the set", pauseHistory(kindSet, false), func(r Result) string { return r.Set.Reason },
			"c1's add of 11"},
		{"the lock broke, every write in its lease", overlapping(), func(r Result) string { return r.Counter.Reason }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.events)
			reason := tc.reason(res)
			if res.Verdict != Invalid {
				t.Fatalf("verdict %s (%s), want invalid", res.Verdict, res.Reason)
			}
			switch {
			case tc.want == "" && strings.Contains(reason, named):
				t.Errorf("reason %q names an unguarded write; every write was in its lease", reason)
			case tc.want != "" && (!strings.Contains(reason, named) || !strings.Contains(reason, tc.want)):
				t.Errorf("reason %q\nlacks %q", reason, tc.want)
			}
		})
	}
}

// The harness's stall events are read into Result.Stalls and noted; they
// decide nothing of safety or the resource, judged on what happened,
// stalled or not: the same history with and without them has the same
// verdict (the liveness promises read them: package liveness's
// TestHarnessStallsHoldEveryClient). A stall without its length is noted
// as such.
func TestStallsAreNotedNotJudged(t *testing.T) {
	var by func(process string, ms ...int64) []history.Event
	stall := func(ms int64) historytest.Mod {
		return func(e *history.Event) {
			if ms > 0 {
				e.Value = history.MustValue(history.StallValue{For: ms * 1e6})
			}
		}
	}
	with := func(ms ...int64) []history.Event { return by(history.ProcessHarness, ms...) }
	by = func(process string, ms ...int64) []history.Event {
		events := pauseHistory(kindCounter, false)
		b := &historytest.Builder{}
		for _, e := range events {
			b.Add(e.Process, e.Type, e.F, e.Key, float64(e.Time)/1e9, func(n *history.Event) {
				n.Value, n.Token, n.Lease, n.Deadline, n.Err = e.Value, e.Token, e.Lease, e.Deadline, e.Err
			})
			if e.Index == 10 {
				for _, m := range ms {
					b.Add(process, history.Info, history.Stall, "", float64(e.Time)/1e9, stall(m))
				}
			}
		}
		return b.Events()
	}
	base := Check(pauseHistory(kindCounter, false))
	for _, tc := range []struct {
		name   string
		events []history.Event
		stalls int
		note   string
	}{
		{"none", with(), 0, ""},
		{"two", with(450, 120), 2, "the harness stood still 2 time(s), at most 0.450s"},
		{"one without its length", with(0), 0, "a stall without its length"},
		// A driver's process starved: noted as its, not the harness's.
		{"c2's driver", by("c2", 300), 1, "c2's driver stood still 1 time(s), at most 0.300s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.events)
			if res.Verdict != base.Verdict || res.Reason != base.Reason {
				t.Errorf("verdict %s (%s), want %s (%s) as without stalls", res.Verdict, res.Reason, base.Verdict, base.Reason)
			}
			if len(res.Stalls) != tc.stalls {
				t.Errorf("stalls %+v, want %d", res.Stalls, tc.stalls)
			}
			notes := strings.Join(res.Notes, "\n")
			if tc.note != "" && !strings.Contains(notes, tc.note) {
				t.Errorf("notes lack %q:\n%s", tc.note, notes)
			}
			if tc.note == "" && strings.Contains(notes, "stood still") {
				t.Errorf("a note of a stall with none:\n%s", notes)
			}
			if strings.HasPrefix(tc.name, "c2") && (strings.Contains(notes, "the harness stood still") || res.Stalls[0].Process != "c2") {
				t.Errorf("a driver's stall told as the harness's: %+v\n%s", res.Stalls, notes)
			}
		})
	}
}
