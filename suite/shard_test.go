package suite

import (
	"path/filepath"
	"strings"
	"testing"

	"splitbrain/locks"
	"splitbrain/scenarios/spec"
)

func TestParseShard(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want Shard
		err  string
	}{
		{"0/4", Shard{0, 4}, ""},
		{"3/4", Shard{3, 4}, ""},
		{"0/1", Shard{0, 1}, ""},
		{" 2 / 5 ", Shard{2, 5}, ""},
		{"4/4", Shard{}, "want 0 to 3"},
		{"-1/4", Shard{}, "want 0 to 3"},
		{"1/0", Shard{}, "want 1 to"},
		{"1/20000", Shard{}, "want 1 to 10000"},
		{"1", Shard{}, "want I/N"},
		{"a/b", Shard{}, "want I/N"},
		{"", Shard{}, "want I/N"},
	} {
		got, err := ParseShard(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ParseShard(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseShard(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.err)
		}
	}
}

// N shares of a plan are disjoint and together the plan, each in the
// plan's order; their sizes differ by one at most, and so do their
// ensemble plays (the plan spreads those, and the deal keeps them
// spread). The plan itself is every cell that fits, Runs times, run by
// run.
func TestShardsCoverThePlanOnce(t *testing.T) {
	t.Parallel()
	var scs []*spec.Scenario
	for _, n := range []string{"clock-jump", "clock-jump-control", "failover", "restart-delayed", "pause-critical-section", "random-kill-set"} {
		sc, err := spec.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	cells := Cells(scs, locks.Matrix())
	fit := 0
	for _, c := range cells {
		if c.NA == "" {
			fit++
		}
	}
	const runs = 3
	plan := Jobs(cells, runs)
	if len(plan) != fit*runs {
		t.Fatalf("%d jobs, want %d cells that fit × %d runs", len(plan), fit, runs)
	}
	for k, j := range plan {
		if cells[j.Cell].NA != "" {
			t.Fatalf("job %d plays n/a cell %s/%s", k, cells[j.Cell].Scenario.Name, cells[j.Cell].Lock)
		}
		if want := k / fit; j.Run != want {
			t.Fatalf("job %d is run %d, want %d: a run's plays before the next run's", k, j.Run, want)
		}
	}
	for _, n := range []int{1, 2, 4, 7, len(plan) + 3} {
		seen := map[Job]int{}
		sizes, heavy := []int{}, []int{}
		for i := range n {
			share := Shard{I: i, N: n}.Share(plan)
			h := 0
			last := -1
			for _, j := range share {
				seen[j]++
				k := indexOf(plan, j)
				if k <= last {
					t.Fatalf("%d/%d: job %v out of the plan's order", i, n, j)
				}
				last = k
				if locks.Consensus(cells[j.Cell].Lock) {
					h++
				}
			}
			sizes, heavy = append(sizes, len(share)), append(heavy, h)
		}
		for _, j := range plan {
			if seen[j] != 1 {
				t.Errorf("N=%d: job %v played %d times, want once", n, j, seen[j])
			}
		}
		if spread(sizes) > 1 || spread(heavy) > 1 {
			t.Errorf("N=%d: share sizes %v, ensemble plays %v: want each within one of the others", n, sizes, heavy)
		}
	}
	if got := (Shard{}).Share(plan); len(got) != len(plan) {
		t.Errorf("the zero shard plays %d of %d", len(got), len(plan))
	}
}

func TestShardDir(t *testing.T) {
	t.Parallel()
	if got := (Shard{}).Dir("store"); got != "store" {
		t.Errorf("whole suite: %q", got)
	}
	if got := (Shard{I: 2, N: 4}).Dir("store"); got != filepath.Join("store", "shard-2-of-4") {
		t.Errorf("share 2/4: %q", got)
	}
}

func indexOf(plan []Job, j Job) int {
	for k, p := range plan {
		if p == j {
			return k
		}
	}
	return -1
}

func spread(xs []int) int {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi - lo
}
