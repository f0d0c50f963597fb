package runstore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"splitbrain/checker"
)

// Files of a suite's safety matrix.
const (
	MatrixFile = "matrix.html"
	MatrixJSON = "matrix.json"
)

// MatrixPlay is one play of a cell: one run folder.
type MatrixPlay struct {
	Seed       int64           `json:"seed"`
	Verdict    checker.Verdict `json:"verdict"`
	Answers    checker.Answers `json:"answers"`
	AsExpected bool            `json:"as_expected"`
	Reason     string          `json:"reason,omitempty"`
	// Dir is the run folder. Prepare stores it relative to the
	// matrix's folder, so a store can be moved or served as a whole.
	Dir string `json:"dir"`
	// Report is the run's report.html relative to the matrix's folder;
	// Prepare fills it in.
	Report string `json:"report,omitempty"`
	// Command re-runs this play alone.
	Command string `json:"command,omitempty"`
	// Availability is the play's availability figures; nil for a play
	// judged before they were, or that recorded nothing.
	Availability *PlayAvailability `json:"availability,omitempty"`
	// Stalled is the longest the harness stood still during the play
	// (checker.Result.Stalls), in nanoseconds; 0 when it never did.
	Stalled int64 `json:"stalled,omitempty"`
	// Slowed says how much slower than written the story was played, for
	// a lock that cannot take its TTL (Meta.Slowed); empty: as written.
	Slowed string `json:"slowed,omitempty"`
	// First is the play this one replays, when it is a replay: the first
	// play of its seed missed its expectation while the harness or a
	// driver stood still (Stalled), a pause no story scripts, so the
	// suite played the seed again alone and this play decides the cell.
	// The first stays here, with its run folder, for anyone to open.
	First *MatrixPlay `json:"first,omitempty"`
}

// PlayAvailability is what a play's liveness cost its clients, as the
// matrix keeps it (checker.Availability without the per-client and
// per-heal detail, which the play's report shows).
type PlayAvailability struct {
	Attempts int `json:"attempts"`
	Granted  int `json:"granted"`
	// Longest is the longest stretch in which clients kept trying and
	// nothing was granted, in nanoseconds; 0 when none.
	Longest int64 `json:"longest_unavailable_ns,omitempty"`
	// MaxHealDelay is the longest time from a heal to the next grant;
	// NoGrantAfter counts the heals no grant followed.
	MaxHealDelay int64 `json:"max_heal_delay_ns,omitempty"`
	NoGrantAfter int   `json:"no_grant_after,omitempty"`
	// Expiry is the lock's expiry, what the figures are set against.
	Expiry int64 `json:"expiry_ns,omitempty"`
}

// Share is the share of attempts granted; 0 without attempts.
func (a PlayAvailability) Share() float64 {
	if a.Attempts == 0 {
		return 0
	}
	return float64(a.Granted) / float64(a.Attempts)
}

func availabilityOf(a *checker.Availability) *PlayAvailability {
	if a == nil {
		return nil
	}
	p := &PlayAvailability{Attempts: a.Attempts, Granted: a.Granted, MaxHealDelay: a.MaxHealDelay, NoGrantAfter: a.NoGrantAfter, Expiry: a.Expiry}
	if a.Longest != nil {
		p.Longest = a.Longest.Length()
	}
	return p
}

// PlayOf reads a play from its run folder's record.
func PlayOf(dir string, rec Record) MatrixPlay {
	return MatrixPlay{Seed: rec.Meta.Seed, Verdict: checker.Verdict(ShownVerdict(rec.Result.Verdict)),
		Answers: checker.AnswersOf(rec.Result), AsExpected: rec.AsExpected, Reason: rec.Result.Reason,
		Dir: dir, Command: rec.Meta.Command, Availability: availabilityOf(rec.Result.Availability),
		Stalled: checker.LongestStall(rec.Result.Stalls), Slowed: rec.Meta.Slowed}
}

// StalledMisses counts the plays that missed their expectation, those of
// them during which the harness stood still, and the longest such stall:
// a miss next to one may be the machine's pause, not the scenario's.
func (m Matrix) StalledMisses() (missed, stalled int, longest time.Duration) {
	for _, c := range m.Cells {
		for _, p := range c.Plays {
			if p.AsExpected {
				continue
			}
			missed++
			if p.Stalled > 0 {
				stalled++
				longest = max(longest, time.Duration(p.Stalled))
			}
		}
	}
	return missed, stalled, longest
}

// Replays counts the plays a suite replayed (MatrixPlay.First), those
// whose replay met the expectation the first play missed, and the
// longest the harness stood still in a first play.
func (m Matrix) Replays() (replayed, met int, longest time.Duration) {
	for _, c := range m.Cells {
		for _, p := range c.Plays {
			if p.First == nil {
				continue
			}
			replayed++
			if p.AsExpected {
				met++
			}
			longest = max(longest, time.Duration(p.First.Stalled))
		}
	}
	return replayed, met, longest
}

// MatrixCell is a story against one lock: its plays and their tally, or
// n/a and why.
type MatrixCell struct {
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	// Family is the story's fault family, the row group.
	Family string `json:"family,omitempty"`
	// Expect is the cell's expectation (Expectation's form).
	Expect string `json:"expect,omitempty"`
	// NA says why the story does not fit the lock; such a cell has no
	// plays.
	NA    string       `json:"na,omitempty"`
	Plays []MatrixPlay `json:"plays,omitempty"`

	// The tally, which Tally computes from Plays.
	Runs    int `json:"runs"`
	Invalid int `json:"invalid"`
	Unknown int `json:"unknown"`
	// LockBroken counts plays whose lock broke its promise (P1 invalid);
	// ResourceHarmed those whose resource checks failed, of
	// ResourceRuns plays that had a resource.
	LockBroken     int `json:"lock_broken"`
	ResourceHarmed int `json:"resource_harmed"`
	ResourceRuns   int `json:"resource_runs"`
	// LockUnknown and ResourceUnknown count the plays whose answer was
	// unknown: never a pass, never a break.
	LockUnknown     int `json:"lock_unknown,omitempty"`
	ResourceUnknown int `json:"resource_unknown,omitempty"`
	// The liveness promises: of DeadlockRuns plays that answered deadlock
	// freedom, DeadlockBroken broke it and DeadlockUnknown could not tell;
	// likewise fault tolerance; Liveness* fold the two (a play broke
	// liveness if it broke either). All zero in a matrix written before
	// plays were judged on liveness.
	DeadlockRuns    int `json:"deadlock_runs,omitempty"`
	DeadlockBroken  int `json:"deadlock_broken,omitempty"`
	DeadlockUnknown int `json:"deadlock_unknown,omitempty"`
	FaultRuns       int `json:"fault_tolerance_runs,omitempty"`
	FaultBroken     int `json:"fault_tolerance_broken,omitempty"`
	FaultUnknown    int `json:"fault_tolerance_unknown,omitempty"`
	LivenessRuns    int `json:"liveness_runs,omitempty"`
	LivenessBroken  int `json:"liveness_broken,omitempty"`
	LivenessUnknown int `json:"liveness_unknown,omitempty"`
	// The availability figures of AvailRuns plays that had them: the
	// median and the worst share of attempts granted (plays without
	// attempts left out), the longest stretch with nothing granted and
	// the longest time from a heal to the next grant (nanoseconds, the
	// longest of any play), the lock's expiry.
	AvailRuns          int     `json:"availability_runs,omitempty"`
	ShareRuns          int     `json:"share_runs,omitempty"` // plays with attempts: those the shares are of
	MedianShare        float64 `json:"median_share_granted,omitempty"`
	WorstShare         float64 `json:"worst_share_granted,omitempty"`
	LongestUnavailable int64   `json:"longest_unavailable_ns,omitempty"`
	MaxHealDelay       int64   `json:"max_heal_delay_ns,omitempty"`
	Expiry             int64   `json:"expiry_ns,omitempty"`
	// Met counts plays that met the expectation.
	Met int `json:"met"`
	// Rate is Invalid over the plays with a verdict (valid or invalid),
	// and Interval its 95 % Wilson score interval.
	Rate     float64    `json:"rate"`
	Interval [2]float64 `json:"interval_95"`
	// Flaky: the cell expects something (not any), yet its plays
	// disagree — some met the expectation, some did not. A scripted
	// story must be deterministic; a flaky cell is a defect of the story
	// or the harness.
	Flaky bool `json:"flaky,omitempty"`
	// Finding: a cell that expects any answer (a random schedule, a
	// race a story does not pin) and broke at least once; Rate says how
	// often.
	Finding bool `json:"finding,omitempty"`
	// FirstFailing is the report of the first invalid play (or, if none,
	// the first that missed its expectation), relative to the matrix.
	FirstFailing string `json:"first_failing,omitempty"`
	// FirstUnmet is the report of the first play that missed its
	// expectation: the one to open for a flaky cell.
	FirstUnmet string `json:"first_unmet,omitempty"`
	// Replayed counts the plays that are replays (MatrixPlay.First): each
	// decides its seed's answer, its first play is kept beside it.
	Replayed int `json:"replayed,omitempty"`
}

// Matrix is a suite's safety matrix: rows are stories grouped by fault
// family, columns lock kinds, each cell how often that lock broke under
// that story.
type Matrix struct {
	Title   string `json:"title,omitempty"`
	Command string `json:"command,omitempty"`
	Seed    int64  `json:"seed"`
	// Seeds are the plays' seeds, run by run (Seeds[i] is run i's).
	Seeds   []int64   `json:"seeds,omitempty"`
	Runs    int       `json:"runs,omitempty"`
	Started time.Time `json:"started"`
	Wall    Duration  `json:"wall,omitempty"`
	// Partial says the suite was cut short (Ctrl-C) and why; its cells
	// hold the plays that ended.
	Partial string `json:"partial,omitempty"`
	// Families order the row groups; Scenarios and Locks order the rows
	// and columns. Names only cells mention are appended.
	Families  []string     `json:"families,omitempty"`
	Scenarios []string     `json:"scenarios"`
	Locks     []string     `json:"locks"`
	Cells     []MatrixCell `json:"cells"`
}

// Duration is a time.Duration that reads as "1m23s" in JSON.
type Duration time.Duration

// String is how pages show it: 4m32s, not a count of nanoseconds.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Tally fills in a cell's counts, rate, interval and flags from its plays.
func (c *MatrixCell) Tally() {
	c.Runs, c.Invalid, c.Unknown, c.LockBroken, c.ResourceHarmed, c.ResourceRuns, c.Met = len(c.Plays), 0, 0, 0, 0, 0, 0
	c.FirstFailing, c.FirstUnmet, c.Replayed = "", "", 0
	c.tallyLiveness()
	for _, p := range c.Plays {
		if p.First != nil {
			c.Replayed++
		}
		switch p.Verdict {
		case checker.Invalid:
			c.Invalid++
			if c.FirstFailing == "" {
				c.FirstFailing = p.Report
			}
		case checker.Unknown:
			c.Unknown++
		}
		if p.lockAnswer() == checker.Invalid {
			c.LockBroken++
		}
		if p.Answers.Resource != "" {
			c.ResourceRuns++
			if p.Answers.Resource == checker.Invalid {
				c.ResourceHarmed++
			}
		}
		if p.AsExpected {
			c.Met++
		} else if c.FirstUnmet == "" {
			c.FirstUnmet = p.Report
		}
	}
	if c.FirstFailing == "" {
		c.FirstFailing = c.FirstUnmet
	}
	decided := c.Runs - c.Unknown
	c.Rate, c.Interval = 0, [2]float64{}
	if decided > 0 {
		c.Rate = float64(c.Invalid) / float64(decided)
		lo, hi := Wilson(c.Invalid, decided)
		c.Interval = [2]float64{lo, hi}
	}
	any := expectsNothing(c.Expect)
	// Flaky by the expectation, not the verdict: "lock safe" is met by a
	// play whose critical sections overlapped (P2) and by one whose did
	// not, and "lock any" by either answer of a race the story does not
	// pin — neither is a story that disagrees with itself.
	c.Flaky = !any && c.Met > 0 && c.Met < c.Runs
	c.Finding = any && c.Invalid > 0
}

// expectsNothing reports whether an expectation leaves every answer free:
// none at all, "any", or each part it states "any" ("lock any").
func expectsNothing(expect string) bool {
	e, err := checker.ParseExpectation(expect)
	if err != nil {
		return false
	}
	for _, w := range []string{e.Verdict, e.Lock, e.Resource, e.DeadlockFreedom, e.FaultTolerance} {
		if w != "" && w != checker.ExpectAny {
			return false
		}
	}
	return true
}

// lockAnswer is the play's answer for the lock's promise: its verdict
// when the play has no answers (a matrix.json written before they were
// kept), as checker.AnswersOf reads a result without properties.
func (p MatrixPlay) lockAnswer() checker.Verdict {
	if p.Answers.Lock == "" {
		return p.Verdict
	}
	return p.Answers.Lock
}

// tallyLiveness counts the answers beside P1's: the unknown lock and
// resource answers, the liveness promises, the availability figures.
func (c *MatrixCell) tallyLiveness() {
	c.LockUnknown, c.ResourceUnknown = 0, 0
	c.DeadlockRuns, c.DeadlockBroken, c.DeadlockUnknown = 0, 0, 0
	c.FaultRuns, c.FaultBroken, c.FaultUnknown = 0, 0, 0
	c.LivenessRuns, c.LivenessBroken, c.LivenessUnknown = 0, 0, 0
	c.AvailRuns, c.ShareRuns, c.MedianShare, c.WorstShare, c.LongestUnavailable, c.MaxHealDelay, c.Expiry = 0, 0, 0, 0, 0, 0, 0
	count := func(v checker.Verdict, runs, broken, unknown *int) {
		if v == "" {
			return
		}
		*runs++
		switch v {
		case checker.Invalid:
			*broken++
		case checker.Unknown:
			*unknown++
		}
	}
	var shares []float64
	for _, p := range c.Plays {
		var runs, broken int
		count(p.lockAnswer(), &runs, &broken, &c.LockUnknown)
		count(p.Answers.Resource, &runs, &broken, &c.ResourceUnknown)
		count(p.Answers.DeadlockFreedom, &c.DeadlockRuns, &c.DeadlockBroken, &c.DeadlockUnknown)
		count(p.Answers.FaultTolerance, &c.FaultRuns, &c.FaultBroken, &c.FaultUnknown)
		count(p.Answers.Liveness(), &c.LivenessRuns, &c.LivenessBroken, &c.LivenessUnknown)
		if a := p.Availability; a != nil {
			c.AvailRuns++
			if a.Attempts > 0 {
				shares = append(shares, a.Share())
			}
			c.LongestUnavailable = max(c.LongestUnavailable, a.Longest)
			c.MaxHealDelay = max(c.MaxHealDelay, a.MaxHealDelay)
			c.Expiry = max(c.Expiry, a.Expiry)
		}
	}
	if c.ShareRuns = len(shares); len(shares) > 0 {
		slices.Sort(shares)
		c.WorstShare = shares[0]
		if n := len(shares); n%2 == 1 {
			c.MedianShare = shares[n/2]
		} else {
			c.MedianShare = (shares[n/2-1] + shares[n/2]) / 2
		}
	}
}

// Wilson is the 95 % Wilson score interval of k successes in n trials:
// unlike the normal approximation it stays inside [0, 1] and says
// something at k = 0 or k = n (0/20 is [0, 0.16], not [0, 0]).
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return math.Max(0, mid-half), math.Min(1, mid+half)
}

// Prepare readies m to be written into dir, the suite's folder (usually
// the store): it makes each play's folder relative to dir, fills in its
// report, tallies each cell and appends the names only cells mention.
func (m *Matrix) Prepare(dir string) error {
	var scen, locks, fams []string
	for i := range m.Cells {
		c := &m.Cells[i]
		scen, locks = append(scen, c.Scenario), append(locks, c.Lock)
		if c.Family != "" {
			fams = append(fams, c.Family)
		}
		for j := range c.Plays {
			if err := c.Plays[j].prepare(dir, "matrix"); err != nil {
				return fmt.Errorf("runstore: matrix cell %s/%s: %w", c.Scenario, c.Lock, err)
			}
		}
		c.Tally()
	}
	m.Scenarios, m.Locks, m.Families = Union(m.Scenarios, scen), Union(m.Locks, locks), Union(m.Families, fams)
	return nil
}

// SaveMatrix writes m into dir as matrix.json and page, the matrix for
// people, as matrix.html; dir is made if missing and must be private.
func SaveMatrix(dir string, m Matrix, page []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("runstore: writing the matrix: %w", err)
	}
	if err := checkPrivate(dir, true); err != nil {
		return fmt.Errorf("runstore: writing the matrix: %w", err)
	}
	return errors.Join(writeJSON(dir, MatrixJSON, m), WriteFile(dir, MatrixFile, page))
}

// ReadMatrix reads dir/matrix.json.
func ReadMatrix(dir string) (Matrix, error) {
	var m Matrix
	err := readJSON(dir, MatrixJSON, &m)
	return m, err
}

// Union merges name lists, keeping the first list's order and appending new
// names in natural order.
func Union(first, more []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range first {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	var extra []string
	for _, n := range more {
		if !seen[n] {
			seen[n] = true
			extra = append(extra, n)
		}
	}
	checker.SortNatural(extra)
	return append(out, extra...)
}

// prepare makes a play's run folder relative to the folder of the page
// that lists it (what, a matrix or a sweep), so the store can be moved or
// served whole, and sets its report and its verdict as shown.
func (p *MatrixPlay) prepare(dir, what string) error {
	if p.Dir != "" && filepath.IsAbs(p.Dir) != filepath.IsAbs(dir) {
		return fmt.Errorf("run folder %s and %s folder %s must both be absolute or both relative", p.Dir, what, dir)
	}
	if p.Dir != "" && filepath.IsAbs(p.Dir) {
		rel, err := filepath.Rel(dir, p.Dir)
		if err != nil {
			return err
		}
		p.Dir = filepath.ToSlash(rel)
	}
	if p.Dir != "" {
		p.Report = p.Dir + "/" + ReportFile
	}
	p.Verdict = checker.Verdict(ShownVerdict(p.Verdict))
	if p.First != nil {
		return p.First.prepare(dir, what)
	}
	return nil
}
