package shrink

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/pages"
	"splitbrain/runner"
	"splitbrain/runstore"
	"splitbrain/scenarios/spec"
)

// runFolder makes a run folder as a run leaves it, without running:
// scenario.yaml (a built-in's text) and result.json with verdict and
// recorded faults.
func runFolder(t *testing.T, builtin string, verdict checker.Verdict, faults []checker.FaultWindow, meta runstore.Meta) string {
	t.Helper()
	dir := t.TempDir()
	if builtin != "" {
		sc, err := spec.Load(builtin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, runner.ScenarioFile), sc.Source, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := checker.Result{Verdict: verdict, Reason: "made up", Faults: faults, Properties: []checker.Property{
		{Name: checker.PropLeaseLock, Verdict: checker.Valid, Decides: true},
		{Name: checker.PropCounter, Verdict: verdict, Decides: true},
	}}
	if err := pages.Write(dir, meta, nil, res); err != nil {
		t.Fatal(err)
	}
	return dir
}

// recorded is what a run of builtin with seed and that many clients
// records as its faults.
func recorded(t *testing.T, builtin string, seed int64, clients int) []checker.FaultWindow {
	t.Helper()
	sc, err := spec.Load(builtin)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Override(spec.Overrides{Clients: clients}); err != nil {
		t.Fatal(err)
	}
	faults, _, err := sc.Unroll(seed)
	if err != nil {
		t.Fatal(err)
	}
	var out []checker.FaultWindow
	for _, f := range faults {
		for _, r := range f.Records {
			out = append(out, checker.FaultWindow{Fault: r, Start: int64(f.At), End: int64(f.At + f.Step.For.Min), Healed: true})
		}
	}
	return out
}

// A run folder is read as it was played — its lock, its clients, its
// --time — with the property to keep violating; what cannot be shrunk is
// refused, saying why.
func TestLoad(t *testing.T) {
	meta := runstore.Meta{Scenario: "random-pause-counter", Lock: "redsync", Seed: 39, Clients: []string{"c1", "c2", "c3", "c4"},
		Command: "splitbrain run random-pause-counter --seed 39 --lock redsync --clients 4 --time 3s"}
	faults := recorded(t, "random-pause-counter", 39, 4)
	good := runFolder(t, "random-pause-counter", checker.Invalid, faults[:4], meta)
	o, err := load(good)
	if err != nil {
		t.Fatal(err)
	}
	if o.prop != checker.PropCounter || o.sc.Lock.Kind != "redsync" || len(o.sc.Locks) != 1 || len(o.sc.Clients) != 4 ||
		o.sc.Workload.Duration != 3*time.Second || len(o.faults) == 0 {
		t.Errorf("loaded %s against %s (%v), %d clients, %v, %d faults, property %q", o.sc.Name, o.sc.Lock.Kind, o.sc.Locks,
			len(o.sc.Clients), o.sc.Workload.Duration, len(o.faults), o.prop)
	}

	wrong := append([]checker.FaultWindow(nil), faults...)
	wrong[1].Nodes = []string{"n9"}
	for _, tc := range []struct {
		name string
		dir  string
		is   error
		says []string
	}{
		{"no run", t.TempDir(), ErrNotShrinkable, []string{"not a finished run", "result.json"}},
		{"valid", runFolder(t, "random-pause-counter", checker.Valid, nil, meta), ErrNotInvalid, []string{"is valid, not invalid"}},
		{"scripted", runFolder(t, "clock-jump", checker.Invalid, nil, meta), ErrNotShrinkable, []string{"scripted", "clock-jump"}},
		{"no scenario", runFolder(t, "", checker.Invalid, nil, meta), ErrNotShrinkable, []string{"no scenario.yaml"}},
		{"other faults", runFolder(t, "random-pause-counter", checker.Invalid, wrong, meta), ErrNotShrinkable,
			[]string{"recorded fault 2", "n9", "seed 39 draws"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(tc.dir)
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v, want %v", err, tc.is)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}
