package pages

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// countBins counts what the map of every bin counts, for places in time
// order (its fast path) and out of it (the map).
func TestCountBins(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for try := range 50 {
		n := rng.Intn(5000)
		places := make([]dotPlace, n)
		for i := range places {
			places[i] = dotPlace{x: plotLeft + rng.Float64()*plotWidth, y: 20 + rng.Float64()*chartPlotH, outcome: rng.Intn(3)}
		}
		if try%2 == 0 {
			slices.SortFunc(places, func(a, b dotPlace) int {
				return int(math.Copysign(1, a.x-b.x))
			})
		}
		for cell := 2.0; cell < 2*plotWidth; cell *= 1.5 {
			if got, want := countBins(places, 3, cell), countBinsMap(places, cell); got != want {
				t.Fatalf("try %d, %d places, cell %.1f: countBins %d, map %d", try, n, cell, got, want)
			}
		}
	}
}
