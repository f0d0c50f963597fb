package spec

import (
	"strings"
	"testing"
)

// The built-in sweep reads, and each of its variants is the story with
// the value in its rate step, a name of its own, no expectation and no
// sweep, its file (what a play keeps) saying exactly that.
func TestSweepVariants(t *testing.T) {
	sc, err := Load("clock-rate-drift")
	if err != nil {
		t.Fatal(err)
	}
	sw := sc.Sweep
	if sw == nil || sw.Param != "rate" || len(sw.Values) != len(sw.X) || sw.Mark == nil || sw.Mark.X != 1 {
		t.Fatalf("sweep %+v, want rate values with a mark at 1 %%", sw)
	}
	if sw.X[0] != 0.05 || sw.X[len(sw.X)-1] != 8 {
		t.Errorf("axis %v, want 0.05 %% to 8 %%", sw.X)
	}
	v, err := sc.Variant("rate", "+1.25%")
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "clock-rate-drift--rate-p1-25pct" || v.Sweep != nil {
		t.Errorf("variant %q, sweep %+v", v.Name, v.Sweep)
	}
	var rates []float64
	for _, st := range v.Steps {
		if st.Kind == StepClock && st.Rate != 0 {
			rates = append(rates, st.Rate)
		}
	}
	if len(rates) != 1 || !nearRate(rates[0], 1.0125) {
		t.Errorf("variant's rates %v, want [1.0125]", rates)
	}
	for _, k := range []string{"redlock", "redsync", "fenced-simple"} {
		if e, _ := v.ExpectFor(k); e != ExpectAny {
			t.Errorf("variant expects %q of %s, want any", e, k)
		}
	}
	// A family's variant carries the value into every deployment's steps,
	// and expects any of every lock there.
	for _, tc := range []struct {
		lock  string
		rates int
	}{{"single", 1}, {"rueidislock", 1}, {"zookeeper", 3}} {
		fv := v.ForLock(tc.lock)
		if fv == nil {
			t.Fatalf("the variant has no deployment for %s", tc.lock)
		}
		var got []float64
		for _, st := range fv.Steps {
			if st.Kind == StepClock && st.Rate != 0 {
				got = append(got, st.Rate)
			}
		}
		if len(got) != tc.rates || !nearRate(got[0], 1.0125) {
			t.Errorf("variant's rates for %s %v, want %d of 1.0125", tc.lock, got, tc.rates)
		}
		if e, _ := fv.ExpectFor(tc.lock); e != ExpectAny {
			t.Errorf("variant expects %q of %s, want any", e, tc.lock)
		}
	}
	// The second client's acquires are what the value decides: left open
	// in every deployment; the first client's stay pinned.
	for _, lock := range []string{"redlock", "single", "zookeeper"} {
		fv := v.ForLock(lock)
		pinned := map[string]int{}
		for _, st := range fv.Steps {
			if st.Kind == StepAcquire && st.ExpectOf(lock) != "" {
				pinned[st.Client]++
			}
		}
		if pinned["c1"] == 0 || pinned["c2"] != 0 {
			t.Errorf("the variant's acquires against %s pinned per client %v, want c1's only", lock, pinned)
		}
		if orig := sc.ForLock(lock); orig != nil {
			n := 0
			for _, st := range orig.Steps {
				if st.Kind == StepAcquire && st.Client == "c2" && st.ExpectOf(lock) != "" {
					n++
				}
			}
			if n == 0 {
				t.Errorf("the story itself pins no acquire of c2 against %s: the check above proves nothing", lock)
			}
		}
	}
	again, err := Parse(v.Source, "kept.yaml")
	if err != nil || again.Name != v.Name || !strings.Contains(string(v.Source), "rate: +1.25%") || strings.Contains(string(v.Source), "sweep:") {
		t.Errorf("the variant's file does not read back as itself (%v):\n%s", err, v.Source)
	}
	ttl, err := sc.Variant("ttl", "3s")
	if err != nil || ttl.Lock.TTL.Seconds() != 3 || ttl.Name != "clock-rate-drift--ttl-3s" {
		t.Errorf("ttl variant: %v, ttl %v, name %q", err, ttl.Lock.TTL, ttl.Name)
	}
	if _, err := sc.Variant("cpu", "5%"); err == nil || !strings.Contains(err.Error(), "starve step") {
		t.Errorf("a cpu sweep of a story without starve steps: %v, want refused", err)
	}
}

func TestSweepErrors(t *testing.T) {
	const head = `name: t
expect: any
cluster: {nodes: 3}
lock: {ttl: 1s}
workload: {clients: 2}
steps:
  - clock: {node: n1, rate: 1.01}
`
	for _, tc := range []struct {
		name, sweep string
		want        []string
	}{
		{"unknown param", "sweep: {param: moon, values: [1]}", []string{"f.yaml:8", "sweep.param", "rate, ttl, cpu"}},
		{"no values", "sweep: {param: rate, values: []}", []string{"sweep.values", "list of values"}},
		{"bad value", "sweep: {param: rate, values: [+1%, fast]}", []string{"sweep", "fast"}},
		{"slow on a log axis", "sweep: {param: rate, values: [0.99, 1.01]}", []string{"logarithmic"}},
		{"unknown field", "sweep: {param: rate, values: [1.01], step: 2}", []string{"sweep.step", "param, values, mark"}},
		{"bad mark", "sweep: {param: rate, values: [1.01], mark: 5}", []string{"sweep.mark", "{at: VALUE"}},
		{"cpu without starve", "sweep: {param: cpu, values: [5%]}", []string{"sweep.param", "starve step"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head+tc.sweep+"\n"), "f.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestVariantName(t *testing.T) {
	for _, tc := range []struct{ story, param, value, want string }{
		{"clock-rate-drift", "rate", "+0.05%", "clock-rate-drift--rate-p0-05pct"},
		{"s", "rate", "0.995", "s--rate-0-995"},
		{"s", "rate", "500ppm", "s--rate-500ppm"},
		{"s", "ttl", "1.5s", "s--ttl-1-5s"},
	} {
		if got := VariantName(tc.story, tc.param, tc.value); got != tc.want || !namePattern.MatchString(got) {
			t.Errorf("VariantName(%q, %q, %q) = %q, want %q (a valid name)", tc.story, tc.param, tc.value, got, tc.want)
		}
	}
}
