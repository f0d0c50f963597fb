package pages

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sortItems gives the order of a plain stable sort by lane, kind and start.
func TestSortItemsIsAStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	kinds := []string{"belief", "attempt-fail", "attempt-info", "res-write res-ok"}
	for round := range 200 {
		n := r.IntN(300)
		items := make([]item, n)
		for i := range items {
			items[i] = item{lane: r.IntN(4), kind: kinds[r.IntN(len(kinds))], a: int64(r.IntN(50)), b: int64(i)}
			if round%2 == 0 {
				items[i].a = int64(i / 3) // mostly in order already, as a run's items are
			}
		}
		want := slices.Clone(items)
		slices.SortStableFunc(want, func(x, y item) int {
			if c := cmp.Compare(x.lane, y.lane); c != 0 {
				return c
			}
			if c := strings.Compare(x.kind, y.kind); c != 0 {
				return c
			}
			return cmp.Compare(x.a, y.a)
		})
		got := slices.Clone(items)
		sortItems(got)
		for i := range want {
			if got[i].lane != want[i].lane || got[i].kind != want[i].kind || got[i].a != want[i].a || got[i].b != want[i].b {
				t.Fatalf("round %d: item %d is %+v, want %+v", round, i, got[i], want[i])
			}
		}
	}
}

// mergeItems cuts the sorted items into runs of one lane and kind whose
// items start within res of the run's end so far, and copies nothing.
func TestMergeItemsCutsRuns(t *testing.T) {
	items := []item{
		{lane: 0, kind: "a", a: 0, b: 5}, {lane: 0, kind: "a", a: 7, b: 8}, // 7 <= 5+2: merged
		{lane: 0, kind: "a", a: 11, b: 12}, // 11 > 8+2: new group
		{lane: 0, kind: "b", a: 12, b: 13}, // another kind
		{lane: 1, kind: "b", a: 13, b: 14}, // another lane
		{lane: 1, kind: "b", a: 16, b: 17}, // 16 <= 14+2
	}
	groups := mergeItems(items, 2)
	var sizes []int
	for _, g := range groups {
		sizes = append(sizes, len(g))
	}
	if !slices.Equal(sizes, []int{2, 1, 1, 2}) {
		t.Fatalf("group sizes %v, want [2 1 1 2]", sizes)
	}
	if &groups[3][1] != &items[5] {
		t.Error("groups are copies of the items")
	}
	if len(mergeItems(nil, 2)) != 0 {
		t.Error("groups of no items")
	}
}
