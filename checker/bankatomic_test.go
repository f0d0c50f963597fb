package checker

import (
	"bytes"
	"strings"
	"testing"

	"splitbrain/history"
	"splitbrain/history/historytest"
)

// bal writes balances: bal("a1", "100.00", "a2", "50.00").
func bal(kv ...string) history.Balances {
	b := history.Balances{}
	for i := 0; i+1 < len(kv); i += 2 {
		b[kv[i]] = kv[i+1]
	}
	return b
}

// xfer is a transfer of amount from → to writing the given new balances.
func xfer(from, to, amount, fromBal, toBal string) history.TransferValue {
	return history.TransferValue{From: from, To: to, Amount: amount, Balances: bal(from, fromBal, to, toBal)}
}

// section is a whole bank critical section of p from at, alone on the
// lock: acquire, read, transfer (typ, seq or highest), release.
func (b rb) section(p string, at float64, read history.Balances, t history.TransferValue, typ history.Type, seq int64) rb {
	b.acquire(p, "k", at, at+0.01, at+1, 0)
	b.read(p, "k", at+0.02, at+0.03, read)
	b.write(p, history.Transfer, "k", at+0.04, at+0.05, t, 0, typ, seq)
	return b.release(p, "k", at+0.06, at+0.07, history.OK)
}

// twoAccountsStale: c1 reads a1=a2=100 and pauses past its lease; c2 moves
// 30.00 a1→a2; c1 resumes and moves 10.00 a2→a1 from its stale read. The
// total stays 200.00, yet c2's transfer is gone.
func twoAccountsStale(seqs bool) []history.Event {
	b := newRB().init("k", bal("a1", "100.00", "a2", "100.00"))
	b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
	b.read("c1", "k", 0.03, 0.04, bal("a1", "100.00", "a2", "100.00"))
	seq := func(s int64) int64 {
		if seqs {
			return s
		}
		return 0
	}
	b.section("c2", 1.1, bal("a1", "100.00", "a2", "100.00"), xfer("a1", "a2", "30.00", "70.00", "130.00"), history.OK, seq(2))
	b.write("c1", history.Transfer, "k", 1.5, 1.51, xfer("a2", "a1", "10.00", "90.00", "110.00"), 0, history.OK, seq(3))
	b.release("c1", "k", 1.52, 1.53, history.Fail)
	b.read(history.ProcessFinal, "k", 2.5, 2.51, bal("a1", "110.00", "a2", "90.00"))
	return b.Events()
}

func TestBankCriticalSections(t *testing.T) {
	init3 := bal("a1", "100.00", "a2", "100.00", "a3", "100.00")
	serial := func() rb {
		b := newRB().init("k", init3)
		b.section("c1", 0.1, init3, xfer("a1", "a2", "10.00", "90.00", "110.00"), history.OK, 2)
		b.section("c2", 0.2, bal("a1", "90.00", "a2", "110.00", "a3", "100.00"), xfer("a2", "a3", "0.01", "109.99", "100.01"), history.OK, 3)
		return b
	}
	for _, tc := range []struct {
		name   string
		events []history.Event
		// overall is the whole verdict; "" when other properties (P2)
		// decide it and only the bank's is asserted.
		overall, bank Verdict
		reason        string
		lost          int
	}{
		{"serial transfers", serial().read(history.ProcessFinal, "k", 1, 1.01, bal("a1", "90.00", "a2", "109.99", "a3", "100.01")).Events(),
			Valid, Valid, "every transfer was an atomic read-then-write", 0},
		{"total conserved, transfer lost", twoAccountsStale(true), Invalid, Invalid,
			`1 transfer(s) lost: c1's transfer of 10.00 a2→a1 (read at 0.040s, written at 1.51s) was computed from stale balances ` +
				`(a1 was 100.00 when read but 70.00 by then; a2 was 100.00 when read but 130.00 by then): it undid 1 transfer(s) (c2's 30.00 a1→a2 at 1.15s)`, 1},
		{"total conserved, transfer lost, no seqs: porcupine alone", twoAccountsStale(false), Invalid, Invalid,
			"porcupine found no order", 0},
		{"final read disagrees with the transfers", serial().read(history.ProcessFinal, "k", 1, 1.01, bal("a1", "100.00", "a2", "99.99", "a3", "100.01")).Events(),
			Invalid, Invalid, "porcupine found no order", 0},
		{"sharing one account: total broken and transfer lost", func() []history.Event {
			b := newRB().init("k", init3)
			b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
			b.read("c1", "k", 0.03, 0.04, init3)
			b.section("c2", 1.1, init3, xfer("a3", "a2", "5.00", "95.00", "105.00"), history.OK, 2)
			b.write("c1", history.Transfer, "k", 1.5, 1.51, xfer("a1", "a2", "5.00", "95.00", "105.00"), 0, history.OK, 3)
			return b.read(history.ProcessFinal, "k", 2.5, 2.51, bal("a1", "95.00", "a2", "105.00", "a3", "95.00")).Events()
		}(), Invalid, Invalid, "a2 was 100.00 when read but 105.00 by then): it undid 1 transfer(s) (c2's 5.00 a3→a2 at 1.15s); money not conserved", 1},
		{"overlapping sections on disjoint accounts", func() []history.Event {
			b := newRB().init("k", bal("a1", "100.00", "a2", "100.00", "a3", "100.00", "a4", "100.00"))
			all := bal("a1", "100.00", "a2", "100.00", "a3", "100.00", "a4", "100.00")
			b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
			b.read("c1", "k", 0.03, 0.04, all)
			b.section("c2", 1.1, all, xfer("a3", "a4", "5.00", "95.00", "105.00"), history.OK, 2)
			b.write("c1", history.Transfer, "k", 1.5, 1.51, xfer("a1", "a2", "1.00", "99.00", "101.00"), 0, history.OK, 3)
			return b.read(history.ProcessFinal, "k", 2.5, 2.51, bal("a1", "99.00", "a2", "101.00", "a3", "95.00", "a4", "105.00")).Events()
		}(), "", Valid, "none lost", 0},
		{"stale transfer rejected by fencing", pauseHistory(kindBank, true), Valid, Valid, "none lost", 0},
		{"unknown transfer that landed", func() []history.Event {
			b := newRB().init("k", init3)
			b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
			b.read("c1", "k", 0.03, 0.04, init3)
			b.write("c1", history.Transfer, "k", 0.05, 0.3, xfer("a1", "a3", "20.00", "80.00", "120.00"), 0, history.Info, 0)
			b.releaseAs("c1.1", "c1", "k", 0.31, 0.32, history.OK)
			b.section("c2", 0.4, bal("a1", "80.00", "a2", "100.00", "a3", "120.00"), xfer("a3", "a2", "20.00", "100.00", "120.00"), history.OK, 3)
			return b.read(history.ProcessFinal, "k", 1, 1.01, bal("a1", "80.00", "a2", "120.00", "a3", "100.00")).Events()
		}(), Valid, Valid, "none lost", 0},
		{"unknown transfer that did not land", func() []history.Event {
			b := newRB().init("k", init3)
			b.acquire("c1", "k", 0.01, 0.02, 1.0, 0)
			b.read("c1", "k", 0.03, 0.04, init3)
			b.write("c1", history.Transfer, "k", 0.05, 0.3, xfer("a1", "a3", "20.00", "80.00", "120.00"), 0, history.Info, 0)
			b.releaseAs("c1.1", "c1", "k", 0.31, 0.32, history.OK)
			b.section("c2", 0.4, init3, xfer("a3", "a2", "20.00", "80.00", "120.00"), history.OK, 2)
			return b.read(history.ProcessFinal, "k", 1, 1.01, bal("a1", "100.00", "a2", "120.00", "a3", "80.00")).Events()
		}(), Valid, Valid, "none lost", 0},
		{"rejected transfer then serial ones", func() []history.Event {
			b := serial()
			b.section("c3", 0.3, bal("a1", "90.00", "a2", "109.99", "a3", "100.01"), xfer("a1", "a3", "90.00", "0.00", "190.01"), history.Fail, 9)
			return b.read(history.ProcessFinal, "k", 1, 1.01, bal("a1", "90.00", "a2", "109.99", "a3", "100.01")).Events()
		}(), Valid, Valid, "none lost", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.events)
			b := res.Bank
			if b == nil {
				t.Fatal("no bank check")
			}
			if b.Verdict != tc.bank || (tc.overall != "" && res.Verdict != tc.overall) {
				t.Fatalf("bank %s (%s), overall %s (%s); want bank %s, overall %s", b.Verdict, b.Reason, res.Verdict, res.Reason, tc.bank, tc.overall)
			}
			if !strings.Contains(b.Reason, tc.reason) {
				t.Errorf("reason\n%s\nlacks\n%s", b.Reason, tc.reason)
			}
			if b.LostTransfers != tc.lost {
				t.Errorf("lost transfers %d, want %d: %+v", b.LostTransfers, tc.lost, b.Lost)
			}
			if b.Ops == 0 {
				t.Error("no porcupine operations checked")
			}
		})
	}
}

// A lost transfer that conserves the total: no bad read, the loss named,
// and porcupine's window of it drawn.
func TestBankLostTransferExplained(t *testing.T) {
	res := Check(twoAccountsStale(true))
	b := res.Bank
	if b.BadReads != 0 || len(b.Violations) != 0 {
		t.Errorf("conservation flagged a conserving history: %+v", b.Violations)
	}
	if len(b.Lost) != 1 {
		t.Fatalf("lost = %+v", b.Lost)
	}
	l := b.Lost[0]
	if l.Transfer.Client != "c1" || l.Count != 1 || l.Undid[0].Client != "c2" || len(l.Stale) != 2 || l.Stale[0] != (StaleBalance{Account: "a1", Read: "100.00", Then: "70.00"}) {
		t.Errorf("lost transfer = %+v", l)
	}
	if res.Visualized != PropCriticalSection && res.Visualized != PropBank {
		t.Errorf("visualized %q", res.Visualized)
	}
	if p := property(t, res, PropBank); p.Verdict != Invalid || !p.Decides {
		t.Errorf("bank property = %+v", p)
	}

	// With fencing the bank's window is what porcupine.html shows.
	fenced := twoAccountsStale(true)
	for i := range fenced {
		if fenced[i].Type == history.OK && fenced[i].F == history.Acquire {
			v := int64(i + 1)
			fenced[i].Token = &v
		}
	}
	res = Check(fenced)
	if res.Visualized != PropBank {
		t.Fatalf("visualized %q (%s), want the bank", res.Visualized, res.Reason)
	}
	var buf bytes.Buffer
	if err := res.WriteVisualization(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "c1 a1=100.00 a2=100.00 → a1=110.00 a2=90.00") {
		t.Error("visualization lacks c1's stale critical section")
	}
}

// The pause in the critical section, on a bank: the loss is named as well
// as the broken total.
func TestBankPauseNamesTheLostTransfer(t *testing.T) {
	res := Check(pauseHistory(kindBank, false))
	b := res.Bank
	if b.LostTransfers != 1 || len(b.Lost) != 1 || b.Lost[0].Undid[0].Client != "c2" {
		t.Fatalf("bank = %+v", b)
	}
	for _, want := range []string{"1 transfer(s) lost", "money not conserved (1 bad read(s))"} {
		if !strings.Contains(b.Reason, want) {
			t.Errorf("reason %q lacks %q", b.Reason, want)
		}
	}
}

// The bank's transfers follow the storage's order as the counter's writes
// do, and a gap in it is filled only by a transfer of unknown outcome sent
// before the next applied one returned.
func TestBankStorageOrderDecides(t *testing.T) {
	all := func(a1, a2 string) history.Balances { return bal("a1", a1, "a2", a2) }
	mv := func(a1, a2 string) history.TransferValue { return xfer("a1", "a2", "1.00", a1, a2) }
	lease := func(v string) historytest.Mod { return historytest.Lease(v) }
	timeout := historytest.Err("i/o timeout")
	for _, tc := range []struct {
		name    string
		build   func(b rb)
		verdict Verdict
	}{
		{
			// Seq 3 can only be c2's own second transfer: c1's, which
			// read the bank as it was after seq 2, was sent after seq 4
			// returned. No transfer was lost.
			"a gap is filled only by a transfer sent in time", func(b rb) {
				c2, c1 := b.under("v-c2"), b.under("v-c1")
				b.acquire("c2", "k", 0.01, 0.02, 1.0, 0)
				c2.read("c2", "k", 0.03, 0.04, all("100.00", "100.00"))
				c2.write("c2", history.Transfer, "k", 0.05, 0.06, mv("90.00", "110.00"), 0, history.OK, 2)
				b.Add("c2", history.Invoke, history.Transfer, "k", 0.08, val(mv("80.00", "120.00")), lease("v-c2"))
				b.acquire("c1", "k", 0.09, 0.095, 1.0, 0)
				c1.read("c1", "k", 0.096, 0.1, all("90.00", "110.00"))
				b.Add("c2", history.Info, history.Transfer, "k", 0.11, timeout)
				c2.read("c2.1", "k", 0.11, 0.111, all("80.00", "120.00"))
				c2.write("c2.1", history.Transfer, "k", 0.115, 0.13, mv("70.00", "130.00"), 0, history.OK, 4)
				b.Add("c1", history.Invoke, history.Transfer, "k", 0.15, val(mv("85.00", "115.00")), lease("v-c1"))
				b.read(history.ProcessFinal, "k", 0.2, 0.21, all("70.00", "130.00"))
			}, Valid,
		},
		{
			// c2 read the bank at seq 1 and its transfer is seq 3: seq 2
			// landed in between, and only c1's transfer (c1.1's was sent
			// after c2's returned) can be it.
			"the one transfer sent in time landed in the gap", func(b rb) {
				c2 := b.under("v-c2")
				b.acquire("c2", "k", 0.001, 0.002, 1.0, 0)
				c2.read("c2", "k", 0.01, 0.02, all("100.00", "100.00"))
				b.write("c1", history.Transfer, "k", 0.03, 0.04, mv("50.00", "150.00"), 0, history.Info, 0)
				c2.write("c2", history.Transfer, "k", 0.05, 0.06, mv("90.00", "110.00"), 0, history.OK, 3)
				b.write("c1.1", history.Transfer, "k", 0.1, 0.11, mv("0.00", "200.00"), 0, history.Info, 0)
				b.read(history.ProcessFinal, "k", 0.2, 0.21, all("90.00", "110.00"))
			}, Invalid,
		},
		{
			// Two could be seq 2, c1's and c3's; whichever it was, c2's
			// read was stale.
			"one of two transfers sent in time landed in the gap", func(b rb) {
				c2 := b.under("v-c2")
				b.acquire("c2", "k", 0.001, 0.002, 1.0, 0)
				c2.read("c2", "k", 0.01, 0.02, all("100.00", "100.00"))
				b.write("c1", history.Transfer, "k", 0.03, 0.04, mv("50.00", "150.00"), 0, history.Info, 0)
				b.write("c3", history.Transfer, "k", 0.041, 0.045, mv("60.00", "140.00"), 0, history.Info, 0)
				c2.write("c2", history.Transfer, "k", 0.05, 0.06, mv("90.00", "110.00"), 0, history.OK, 3)
				b.read(history.ProcessFinal, "k", 0.2, 0.21, all("90.00", "110.00"))
			}, Invalid,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newRB().init("k", all("100.00", "100.00"))
			tc.build(b)
			res := Check(b.Events())
			if res.Bank == nil || res.Bank.Verdict != tc.verdict {
				t.Fatalf("bank %+v (%s), want %s", res.Bank, res.Reason, tc.verdict)
			}
		})
	}
}
