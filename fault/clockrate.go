package fault

import (
	"fmt"
	"math"
	"strconv"
)

// KindClockRate is a node's wall clock running fast or slow: its offset
// grows with real time (an oscillator's error, or NTP slewing it).
const KindClockRate = "clock-rate"

// Clock rates a scenario may ask: a factor of real time. NTP slews by at
// most 500 ppm (1.0005); Redlock allows 1 % (1.01). Beyond a tenth or ten
// times real time the clock is broken rather than off.
const (
	MinClockRate = 0.1
	MaxClockRate = 10
)

// CheckRate says what is wrong with a clock rate, or nil.
func CheckRate(rate float64) error {
	if math.IsNaN(rate) || rate < MinClockRate || rate > MaxClockRate || rate == 1 {
		return fmt.Errorf("clock rate %v: want a factor of real time from %v to %v other than 1, such as 1.01 (1 %% fast) or 0.999 (0.1 %% slow)",
			rate, MinClockRate, MaxClockRate)
	}
	return nil
}

// RatePPB is rate's error in parts per 10^9: 1.05 is 50 000 000.
func RatePPB(rate float64) int64 { return int64(math.Round((rate - 1) * 1e9)) }

// FormatRate writes a clock rate as its error in percent: +5%, -0.05%.
func FormatRate(rate float64) string {
	pct := (rate - 1) * 100
	// 1.0005 - 1 is not 0.0005 in binary: round to what was written.
	s := strconv.FormatFloat(math.Round(pct*1e6)/1e6, 'f', -1, 64)
	if pct >= 0 {
		s = "+" + s
	}
	return s + "%"
}
