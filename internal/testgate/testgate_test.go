package testgate

import "testing"

// Enter counts a play as running until its test ends, so that the floor
// and the load decide the next admission; below the floor it admits
// whatever the load.
func TestEnterCountsUntilTheTestEnds(t *testing.T) {
	before := running.Load()
	t.Run("play", func(t *testing.T) {
		for i := 1; i <= floor; i++ {
			Enter(t)
			if got := running.Load() - before; got != int64(i) {
				t.Fatalf("after %d entries %d plays run", i, got)
			}
		}
	})
	if got := running.Load() - before; got != 0 {
		t.Errorf("%d plays still counted after their test ended", got)
	}
}
