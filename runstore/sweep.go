package runstore

import (
	"errors"
	"fmt"
	"os"
	"time"

	"splitbrain/checker"
)

// A sweep's files in the store: sweep-STORY.json and sweep-STORY.html,
// beside the suite's matrix.
const sweepPrefix = "sweep-"

// SweepFiles are the names of story's sweep page and data.
func SweepFiles(story string) (page, data string) {
	return sweepPrefix + story + ".html", sweepPrefix + story + ".json"
}

// Sweep is one story played across the values of one parameter, against
// each of its locks, and how often each value broke each lock.
type Sweep struct {
	Story   string `json:"story"`
	Command string `json:"command,omitempty"`
	Seed    int64  `json:"seed"`
	// Seeds are the plays' seeds, run by run, the same for every value
	// and lock.
	Seeds   []int64   `json:"seeds,omitempty"`
	Runs    int       `json:"runs"`
	Started time.Time `json:"started"`
	Wall    Duration  `json:"wall,omitempty"`
	Partial string    `json:"partial,omitempty"`
	// Param is what was swept, Axis its axis's name; Log says the axis is
	// logarithmic.
	Param string `json:"param"`
	Axis  string `json:"axis"`
	Log   bool   `json:"log,omitempty"`
	// Values are the values as written, X their places on the axis.
	Values []string  `json:"values"`
	X      []float64 `json:"x"`
	// Mark is a value the story marks (the drift allowance), if any.
	Mark   *SweepMark   `json:"mark,omitempty"`
	Locks  []string     `json:"locks"`
	Points []SweepPoint `json:"points"`
}

// SweepMark is a marked value of a sweep.
type SweepMark struct {
	Value string  `json:"value"`
	X     float64 `json:"x"`
	Label string  `json:"label,omitempty"`
}

// SweepPoint is one value against one lock: its plays and their tally.
type SweepPoint struct {
	Lock  string  `json:"lock"`
	Value string  `json:"value"`
	X     float64 `json:"x"`
	// Variant names the story's variant for the value (its run folders'
	// scenario).
	Variant string `json:"variant"`
	// NA says why the variant does not fit the lock.
	NA    string       `json:"na,omitempty"`
	Plays []MatrixPlay `json:"plays,omitempty"`
	// The tally (Tally): plays, those that broke the lock's promise, those
	// whose lock answer is unknown, and the share of the decided ones
	// broken with its 95 % Wilson interval.
	Runs     int        `json:"runs"`
	Invalid  int        `json:"invalid"`
	Unknown  int        `json:"unknown"`
	Rate     float64    `json:"rate"`
	Interval [2]float64 `json:"interval"`
}

// Tally counts p's plays by their lock answer (the lock's promise: did
// two clients believe they held it at once?). A play whose verdict is
// unknown counts as unknown unless its lock answer is invalid: a run that
// did not go as scripted has a lock answer of valid for the prefix it
// played, which decides nothing (seen: clock-rate-drift's one-master
// variants, before a sweep left c2's outcome open, showed "0/10 broke"
// with 8 of 10 plays unknown).
func (p *SweepPoint) Tally() {
	p.Runs, p.Invalid, p.Unknown = len(p.Plays), 0, 0
	for _, pl := range p.Plays {
		switch {
		case pl.Answers.Lock == checker.Invalid:
			p.Invalid++
		case pl.Answers.Lock == checker.Valid && pl.Verdict != checker.Unknown:
		default:
			p.Unknown++
		}
	}
	p.Rate, p.Interval = 0, [2]float64{}
	if d := p.Runs - p.Unknown; d > 0 {
		p.Rate = float64(p.Invalid) / float64(d)
		lo, hi := Wilson(p.Invalid, d)
		p.Interval = [2]float64{lo, hi}
	}
}

// Prepare readies s to be written into dir: each play's folder relative
// to dir, its report filled in, each point tallied.
func (s *Sweep) Prepare(dir string) error {
	for i := range s.Points {
		pt := &s.Points[i]
		for j := range pt.Plays {
			if err := pt.Plays[j].prepare(dir, "sweep"); err != nil {
				return fmt.Errorf("runstore: sweep point %s/%s: %w", pt.Lock, pt.Value, err)
			}
		}
		pt.Tally()
	}
	return nil
}

// SaveSweep writes s into dir as its data and page, the plot for people;
// dir is made if missing and must be private.
func SaveSweep(dir string, s Sweep, page []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("runstore: writing the sweep: %w", err)
	}
	if err := checkPrivate(dir, true); err != nil {
		return fmt.Errorf("runstore: writing the sweep: %w", err)
	}
	html, data := SweepFiles(s.Story)
	return errors.Join(writeJSON(dir, data, s), WriteFile(dir, html, page))
}

// ReadSweep reads story's sweep data from dir.
func ReadSweep(dir, story string) (Sweep, error) {
	var s Sweep
	_, data := SweepFiles(story)
	err := readJSON(dir, data, &s)
	return s, err
}
