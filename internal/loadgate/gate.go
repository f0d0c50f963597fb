// Package loadgate holds back new work while the machine's CPUs are busy.
//
// A suite plays many stories side by side. They mostly wait — on TTLs,
// faults, think times — so many fit on a few cores; but a story's timing
// margins (a 150 ms node timeout, a lease extended 1 s before it ends)
// stretch once the CPUs are saturated, and then verdicts change. How many
// plays a machine carries depends on which plays run (a ZooKeeper
// ensemble costs more than five idle Redis nodes) and on what else the
// machine does, so a fixed number is either slow or unsafe. The gate
// admits a new play only while the CPUs, measured over the last moment,
// are below a bound.
package loadgate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"splitbrain/internal/private"
)

// Gate admits work one at a time while the CPUs are not too busy.
type Gate struct {
	busy    float64       // admit while the load is below this fraction
	floor   int           // always admit while fewer than this many run
	spacing time.Duration // at least this long between admissions
	read    func() (Sample, error)
	// shared, when set, holds the state of every gate of the machine
	// given the same file (Options.Shared); the state below then only
	// says what this gate last saw.
	shared *os.File

	mu sync.Mutex
	state
}

// state is what a gate decides from: the last reading, the smoothed load
// and the last admission.
type state struct {
	last     Sample
	load     float64 // smoothed busy fraction, -1 before two samples
	admitted time.Time
}

// Sample is a reading of the CPU time counters, in any unit.
type Sample struct {
	Busy, Total uint64
	// Nice is the part of Busy spent by processes of lowered priority.
	Nice uint64
}

// Options configure a Gate.
type Options struct {
	// Busy is the fraction of all CPU time in use (0..1) at or above
	// which new work waits.
	Busy float64
	// Floor is how much work may run whatever the load: below it Wait
	// returns at once (the machine may be busy with something else; the
	// work must still progress).
	Floor int
	// Spacing is the least time between two admissions, so that the load
	// a start causes shows before the next start is decided.
	Spacing time.Duration
	// Read reads the CPU counters; nil reads /proc/stat.
	Read func() (Sample, error)
	// Shared, when not empty, is a file through which the gates of
	// several processes on one machine decide as one gate: the load,
	// its last reading and the last admission are kept there, under a
	// lock (flock), so that the spacing holds between any two of their
	// admissions and each decides from the same smoothed load. The
	// tasks of a fanned-out suite on one node share one: each alone
	// would read the same CPUs, see the same moment of room and start
	// a play in it, four gates four starts. Floor stays each gate's own.
	Shared string
}

// New returns a gate. Busy must be in (0, 1].
func New(o Options) (*Gate, error) {
	if o.Busy <= 0 || o.Busy > 1 {
		return nil, fmt.Errorf("loadgate: busy bound %v: want a fraction in (0, 1]", o.Busy)
	}
	read := o.Read
	if read == nil {
		read = ReadProcStat
	}
	g := &Gate{busy: o.Busy, floor: o.Floor, spacing: o.Spacing, read: read, state: state{load: -1}}
	if s, err := read(); err == nil {
		g.last = s
	}
	if o.Shared != "" {
		f, err := openShared(o.Shared)
		if err != nil {
			return nil, err
		}
		g.shared = f
	}
	return g, nil
}

// openShared opens (making it if need be) the regular file a shared gate
// keeps its state in: this user's, in a folder no other user can write
// (private.CheckAbove, as for the store), never through a symbolic link.
// Another user's file could be held locked for ever, or its state chosen.
func openShared(name string) (*os.File, error) {
	if err := private.CheckAbove(name); err != nil {
		return nil, fmt.Errorf("loadgate: the shared gate's file %s: %w", name, err)
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("loadgate: the shared gate's file (a regular file, made if missing in a folder that exists): %w", err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("a %v, not a regular file", fi.Mode().Type())
	case fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()):
		err = fmt.Errorf("owned by uid %d, not by this user (uid %d)", fi.Sys().(*syscall.Stat_t).Uid, os.Geteuid())
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("loadgate: the shared gate's file %s: %w", name, err)
	}
	return f, nil
}

// CheckShared says whether name can be a shared gate's file: a regular
// file, or none yet in a folder that exists (which it makes).
func CheckShared(name string) error {
	f, err := openShared(name)
	if err != nil {
		return err
	}
	return f.Close()
}

// Close lets go of the shared gate's file, if any.
func (g *Gate) Close() error {
	if g.shared == nil {
		return nil
	}
	return g.shared.Close()
}

// poll is how often a waiting caller looks at the load again.
const poll = 100 * time.Millisecond

// Wait returns once running() — how much work runs now — is below the
// floor, or once the CPUs are below the busy bound and the spacing since
// the last admission has passed; or with ctx's error when ctx ends first.
// Callers are admitted one at a time. When the counters cannot be read,
// the load counts as low: the gate then only spaces the starts.
func (g *Gate) Wait(ctx context.Context, running func() int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if g.decide(running) {
			return nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// decide reads the load and admits one when running() is below the
// floor, or the load below the bound and the spacing past. With a shared
// file it decides on the file's state, under its lock, and writes it
// back; when the file cannot be locked, read or written it decides on
// this gate's own state, as an unshared gate does: a wrong decision costs
// the plays' timing, not their results, and waiting for ever would stop
// the suite. The lock is never waited for: while another gate holds it
// (for a decision's microseconds, or for ever if its process was stopped
// there) only the floor admits, and the caller looks again after a poll,
// its context heeded.
func (g *Gate) decide(running func() int) bool {
	st := &g.state
	if g.shared != nil {
		fd := int(g.shared.Fd())
		switch err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); {
		case errors.Is(err, syscall.EWOULDBLOCK):
			return running() < g.floor
		case err == nil:
			defer syscall.Flock(fd, syscall.LOCK_UN)
			if s, err := readState(g.shared); err == nil {
				*st = s
				defer func() { _ = writeState(g.shared, *st) }()
			}
		}
	}
	st.sample(g.read)
	now := time.Now()
	if running() < g.floor || (st.load < g.busy && now.Sub(st.admitted) >= g.spacing) {
		st.admitted = now
		return true
	}
	return false
}

// readState reads a shared gate's state; an empty or unreadable file is a
// gate that has read nothing yet.
func readState(f *os.File) (state, error) {
	b := make([]byte, 128)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return state{}, err
	}
	var (
		s        state
		admitted int64
	)
	if _, err := fmt.Sscan(string(b[:n]), &admitted, &s.last.Busy, &s.last.Total, &s.last.Nice, &s.load); err != nil {
		return state{load: -1}, nil
	}
	if admitted != 0 {
		s.admitted = time.Unix(0, admitted)
	}
	return s, nil
}

// writeState writes a shared gate's state as one line.
func writeState(f *os.File, s state) error {
	var admitted int64
	if !s.admitted.IsZero() {
		admitted = s.admitted.UnixNano()
	}
	line := fmt.Sprintf("%d %d %d %d %g\n", admitted, s.last.Busy, s.last.Total, s.last.Nice, s.load)
	if _, err := f.WriteAt([]byte(line), 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(line)))
}

// Load is the smoothed busy fraction this gate last measured (or read
// from the shared file), or -1 before there were two readings to compare.
func (g *Gate) Load() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.load
}

// sample reads the counters and folds the busy fraction since the last
// reading into the load. A reading less than minTicks after the last is
// too coarse (the kernel counts in ticks) and is skipped: the next one
// then spans both.
func (st *state) sample(read func() (Sample, error)) {
	s, err := read()
	if err != nil || s.Total <= st.last.Total {
		return
	}
	dt, db := s.Total-st.last.Total, s.Busy-min(s.Busy, st.last.Busy)
	if st.last.Total != 0 && dt < minTicks {
		return
	}
	first := st.last.Total == 0
	st.last = s
	if first {
		return
	}
	f := min(float64(db)/float64(dt), 1)
	if st.load < 0 {
		st.load = f
		return
	}
	// A third of the weight on the last moment (a time constant of about
	// a quarter second): a burst of starts shows within a few readings,
	// and one quiet moment inside a busy second does not open the gate.
	st.load += (f - st.load) / 3
}

// minTicks is the least CPU time, in the kernel's ticks (USER_HZ, 100 a
// second per CPU), between two readings that are compared.
const minTicks = 10

// ReadProcStat reads the first line of /proc/stat: the time all CPUs
// spent busy and in all, in USER_HZ ticks. Idle and iowait count as idle;
// guest time is already in user and nice.
func ReadProcStat() (Sample, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return Sample{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return Sample{}, fmt.Errorf("/proc/stat: %w", err)
	}
	return ParseCPULine(line)
}

// ReadProcStatNiceIdle is ReadProcStat with the time of processes of
// lowered priority counted as idle: work at nice > 0 gives way to any
// that starts at the normal priority, so it leaves that room free.
func ReadProcStatNiceIdle() (Sample, error) {
	s, err := ReadProcStat()
	s.Busy -= s.Nice
	return s, err
}

// ParseCPULine parses the "cpu" line of /proc/stat.
func ParseCPULine(line string) (Sample, error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return Sample{}, fmt.Errorf("/proc/stat: first line %q: want \"cpu\" and its counters", strings.TrimSpace(line))
	}
	var s Sample
	// user nice system idle iowait irq softirq steal guest guest_nice:
	// guest and guest_nice are counted in user and nice already.
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return Sample{}, fmt.Errorf("/proc/stat: counter %d of %q: %w", i+1, strings.TrimSpace(line), err)
		}
		s.Total += n
		if i != 3 && i != 4 { // idle, iowait
			s.Busy += n
		}
		if i == 1 {
			s.Nice = n
		}
	}
	if s.Total == 0 {
		return Sample{}, errors.New("/proc/stat: every CPU counter is zero")
	}
	return s, nil
}
