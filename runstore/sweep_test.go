package runstore

import (
	"testing"

	"splitbrain/checker"
)

// A sweep's point counts a play by its lock answer, and a play whose
// verdict is unknown as unknown unless that answer is invalid: the prefix
// of a run that did not go as scripted decides nothing.
func TestSweepPointTally(t *testing.T) {
	play := func(v, lock checker.Verdict) MatrixPlay {
		return MatrixPlay{Verdict: v, Answers: checker.Answers{Lock: lock}}
	}
	for _, tc := range []struct {
		name             string
		plays            []MatrixPlay
		invalid, unknown int
		rate             float64
	}{
		{"kept", []MatrixPlay{play(checker.Valid, checker.Valid), play(checker.Invalid, checker.Valid)}, 0, 0, 0},
		{"broken", []MatrixPlay{play(checker.Invalid, checker.Invalid), play(checker.Valid, checker.Valid)}, 1, 0, 0.5},
		{"not as scripted, prefix valid", []MatrixPlay{play(checker.Unknown, checker.Valid), play(checker.Invalid, checker.Invalid)}, 1, 1, 1},
		{"not as scripted, prefix broken", []MatrixPlay{play(checker.Unknown, checker.Invalid)}, 1, 0, 1},
		{"lock unknown", []MatrixPlay{play(checker.Unknown, checker.Unknown), play(checker.Valid, checker.Valid)}, 0, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := SweepPoint{Plays: tc.plays}
			p.Tally()
			if p.Runs != len(tc.plays) || p.Invalid != tc.invalid || p.Unknown != tc.unknown || p.Rate != tc.rate {
				t.Errorf("tally %d runs, %d invalid, %d unknown, rate %v; want %d, %d, %d, %v",
					p.Runs, p.Invalid, p.Unknown, p.Rate, len(tc.plays), tc.invalid, tc.unknown, tc.rate)
			}
		})
	}
}
