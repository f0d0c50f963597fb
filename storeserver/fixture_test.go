package storeserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/history"
	"splitbrain/history/historytest"
	"splitbrain/pages"
	"splitbrain/runstore"
)

// clockJump is a clock-jump counterexample: c1 and c2 both believe they
// hold the lock from 1.1 s to 2.1 s.
func clockJump() []history.Event {
	const key = `<script>alert(1)</script>`
	b := &historytest.Builder{}
	b.Fault(0, historytest.Cut(1, history.PhaseStart, "c1", "n4", "n5"))
	b.Acquire("c1", key, 0.1, 0.2, 2.1)
	b.Fault(0.5, history.Fault{ID: 2, Kind: "clock-jump", Phase: history.PhaseStart, Nodes: []string{"n3"}, Offset: int64(5 * time.Second)})
	b.Fault(0.7, historytest.Cut(1, history.PhaseStop, "c1", "n4", "n5"))
	b.Acquire("c2", key, 1.0, 1.1, 3.0)
	b.Release("c1", key, 1.9, 1.95)
	b.Release("c2", key, 2.5, 2.6)
	return b.Events()
}

func meta(scenario, expect string) runstore.Meta {
	return runstore.Meta{Scenario: scenario, Lock: "redlock", Seed: 42, TTL: 2 * time.Second,
		Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Clients: []string{"c1", "c2"}, Expect: expect}
}

// writeRun makes a run folder in store the way the runner does: its
// history, then its record and report.
func writeRun(t *testing.T, store, scenario string, at time.Time, events []history.Event, m runstore.Meta) string {
	t.Helper()
	dir, err := runstore.NewRunDir(store, scenario, at)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		sb.Write(b)
		sb.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, runstore.HistoryFile), []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	m.Started = at
	if err := pages.Write(dir, m, events, checker.Check(events)); err != nil {
		t.Fatal(err)
	}
	return dir
}
