package pages

import (
	"encoding/json"
	"strings"

	"splitbrain/history"
)

// Markup for the places of a history that stay free text after the
// reader's checks (process names are validated; these are not): keys,
// lock values and leases, bank account names and amounts, errors, fault
// kinds and details, node and link names. The page is built from an
// unfenced bank history that loses a transfer, so that porcupine's page
// shows the bank's window, whose tooltips carry the accounts.
const (
	evilAcct   = `a1<img src=x onerror=alert("acct")>`
	evilAcct2  = `a2<svg onload=alert("acct2")>`
	evilValue  = `v1<img src=x onerror=alert("value")>`
	evilDetail = `<img src=x onerror=alert("detail")>`
)

// evilBankHistory is stalePause("bank", false) with hostile text in every
// free-text place, written out and read back by history.Parse: everything
// in it is what the reader still lets in.
func evilBankHistory() ([]history.Event, error) {
	var events []history.Event
	for i, e := range stalePause("bank", false) {
		e.Key = evilLockKey
		if e.Process == "c1" && e.F != history.Acquire {
			e.Lease = "v1"
		}
		if e.Type != history.Invoke {
			e.Err = evilErr
		}
		events = append(events, e)
		if i == 3 {
			f := history.Fault{ID: 9, Kind: evilKind, Phase: history.PhaseStart, Nodes: []string{evilDetail},
				Links: []history.Link{{Client: "c1", Node: evilDetail}}, Detail: evilDetail}
			events = append(events, history.Event{Process: history.ProcessNemesis, Type: history.Info, F: history.Nemesis,
				Value: history.MustValue(f), Time: e.Time})
		}
	}
	// Accounts and lock values are renamed in the JSON text: "a1" is an
	// account (a key of balances, a transfer's from or to), "v1" c1's lock
	// value and lease.
	rename := strings.NewReplacer(`"a1"`, jsonString(evilAcct), `"a2"`, jsonString(evilAcct2), `"v1"`, jsonString(evilValue))
	var sb strings.Builder
	for i, e := range events {
		e.Index = int64(i)
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		sb.WriteString(rename.Replace(string(b)))
		sb.WriteByte('\n')
	}
	return history.Parse(strings.NewReader(sb.String()), "evil-bank.jsonl")
}

func jsonString(s string) string { return string(history.MustValue(s)) }
