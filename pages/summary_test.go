package pages

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"splitbrain/runstore"
	"strings"
	"testing"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/history/histgen"
	"splitbrain/history/historytest"
)

// result.json lists no belief and no attempt, and explains each violation
// with its window: the two beliefs and the events between the first
// acquire and the end of the overlap.
func TestResultIsASummary(t *testing.T) {
	dir := t.TempDir()
	events := clockJump()
	writeHistory(t, dir, events)
	res := checker.Check(events)
	if err := Write(dir, meta("clock-jump", "violation"), events, res); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, runstore.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Result struct {
			Keys []map[string]json.RawMessage `json:"keys"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Result.Keys) != 1 {
		t.Fatalf("keys: %d", len(doc.Result.Keys))
	}
	for _, field := range []string{"beliefs", "attempts"} {
		if _, ok := doc.Result.Keys[0][field]; ok {
			t.Errorf("result.json lists the key's %s", field)
		}
	}
	for _, field := range []string{"acquired", "failed", "releases"} {
		if _, ok := doc.Result.Keys[0][field]; !ok {
			t.Errorf("result.json lacks the key's count %s", field)
		}
	}

	rec, err := runstore.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Windows) != 2 || rec.Windows[0].Property != checker.PropLeaseLock || rec.Windows[1].Property != checker.PropCriticalSection {
		t.Fatalf("windows: %+v", rec.Windows)
	}
	for _, w := range rec.Windows {
		if w.Key != evilKey || w.Clients != [2]string{"c1", "c2"} || w.From != historytest.Sec(0.1) || w.To != historytest.Sec(1.9) {
			t.Errorf("%s window: %s %v %d–%d, want c1, c2 from 0.1s (c1's acquire) to 1.9s (its release)", w.Property, w.Key, w.Clients, w.From, w.To)
		}
		if len(w.Beliefs) != 2 || w.Beliefs[0].Client != "c1" || w.Beliefs[1].Client != "c2" || w.Beliefs[0].OKIndex != 2 {
			t.Errorf("%s window beliefs: %+v", w.Property, w.Beliefs)
		}
		// Every event from 0.1 s to 1.9 s is on the key or a fault.
		var want []int64
		for _, e := range events {
			if e.Time >= historytest.Sec(0.1) && e.Time <= historytest.Sec(1.9) {
				want = append(want, e.Index)
			}
		}
		var got []int64
		for _, e := range w.Events {
			got = append(got, e.Index)
		}
		if !equalInts(got, want) || w.MoreEvents != 0 {
			t.Errorf("%s window events %v (+%d), want %v", w.Property, got, w.MoreEvents, want)
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A long history's result.json stays small: nothing in it grows with the
// number of operations (the clients' continuation processes are folded
// into the clients).
func TestResultOfALongHistoryIsSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 40 000-operation history")
	}
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := (histgen.Mutex{Clients: 8, Ops: 40_000, Seed: 3, ViolateAt: 30_000}).Write(&buf); err != nil {
		t.Fatal(err)
	}
	events, err := history.Parse(&buf, "gen")
	if err != nil {
		t.Fatal(err)
	}
	res := checker.Check(events)
	if res.Verdict != checker.Invalid || len(res.Clients) <= 8 {
		t.Fatalf("fixture: %s with %d processes: %s", res.Verdict, len(res.Clients), res.Reason)
	}
	if err := Write(dir, meta("histgen", "violation"), events, res); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, runstore.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := runstore.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 32<<10 || len(rec.Result.Clients) != 8 {
		t.Errorf("result.json of 40 000 operations is %d bytes, lists %d clients %v", fi.Size(), len(rec.Result.Clients), rec.Result.Clients)
	}
}

// A result.json of before the summary, listing every belief, still reads:
// check takes its meta, the index its verdict.
func TestOldResultStillReads(t *testing.T) {
	store := t.TempDir()
	dir := filepath.Join(store, "clock-jump", "20260101T000000.000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	events := clockJump()
	res := checker.Check(events)
	old := runstore.Record{Meta: meta("clock-jump", "violation"), Result: res, AsExpected: true, Files: map[string]string{"report": runstore.ReportFile}}
	b, err := json.MarshalIndent(old, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"beliefs"`)) {
		t.Fatal("fixture: the old record lists no beliefs")
	}
	if err := os.WriteFile(filepath.Join(dir, runstore.ResultFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := runstore.ReadRecord(dir)
	if err != nil || len(rec.Result.Keys) != 1 || len(rec.Result.Keys[0].Beliefs) != 2 || rec.Result.Verdict != checker.Invalid {
		t.Errorf("ReadRecord: %v, %+v", err, rec.Result.Keys)
	}
	m, err := runstore.ReadMeta(dir)
	if err != nil || m.Scenario != "clock-jump" || m.Seed != 42 {
		t.Errorf("ReadMeta: %v, %+v", err, m)
	}
	idx, err := runstore.BuildIndex(store)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Runs) != 1 || idx.Runs[0].Verdict != string(checker.Invalid) || idx.Runs[0].Violations != 1 {
		t.Errorf("index: %+v", idx.Runs)
	}
	if _, err := runstore.ReadMeta(t.TempDir()); err == nil || !strings.Contains(err.Error(), runstore.ResultFile) {
		t.Errorf("runstore.ReadMeta of a folder without %s: %v", runstore.ResultFile, err)
	}
}
