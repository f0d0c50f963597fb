package cluster

import (
	"path/filepath"
	"testing"
	"time"
)

// A rate makes the offset grow with real time from the offset it had; a
// Set moves the offset and keeps the rate; rate 0 ppb stops the growth.
func TestClockFileRate(t *testing.T) {
	c, err := NewClockFile(filepath.Join(t.TempDir(), "clock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.SetRate(100_000_000); err != nil { // 10 % fast
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	got := c.Get()
	elapsed := time.Since(start)
	if lo, hi := time.Second, time.Second+elapsed/10+time.Microsecond; got < lo || got > hi {
		t.Errorf("offset %v after %v at 10 %% fast from 1s, want %v..%v", got, elapsed, lo, hi)
	}
	if got := c.Rate(); got != 100_000_000 {
		t.Errorf("rate %d ppb, want 100000000", got)
	}
	if err := c.Set(-time.Second); err != nil {
		t.Fatal(err)
	}
	if got := c.Rate(); got != 100_000_000 {
		t.Errorf("a Set changed the rate to %d ppb", got)
	}
	if err := c.SetRate(0); err != nil {
		t.Fatal(err)
	}
	a := c.Get()
	time.Sleep(20 * time.Millisecond)
	if b := c.Get(); a != b || a < -time.Second || a > -time.Second+time.Second/10 {
		t.Errorf("offsets %v then %v at rate 0 after a Set to -1s, want one fixed value a little above -1s", a, b)
	}
}

// The offset is computed as the shim does, exactly, with a day of drift
// at ten times real time (a product past 64 bits).
func TestClockStateAt(t *testing.T) {
	day := int64(24 * time.Hour)
	s := clockState{off: 5, ratePPB: 9_000_000_000, anchor: 1000}
	if got, want := s.at(1000+day), time.Duration(5+9*day); got != want {
		t.Errorf("offset after a day at ×10: %v, want %v", got, want)
	}
	s = clockState{off: 0, ratePPB: -3, anchor: 0}
	if got := s.at(1_000_000_001); got != -3 {
		t.Errorf("at -3 ppb after 1.000000001 s: %v, want -3ns (rounded toward zero)", got)
	}
}
