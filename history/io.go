package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"splitbrain/internal/regular"
)

// Recorder appends events to a history file as the run goes. Each event is
// written with one write call, so a crash leaves a prefix of whole lines
// (and at worst one torn last line, which Parse reports).
type Recorder struct {
	base time.Time

	mu     sync.Mutex
	w      io.Writer
	file   *os.File
	next   int64
	events []Event
	// dropped: TakeEvents handed the events over; no more are kept.
	dropped bool
	err     error
}

// NewRecorder records to w; base is the instant times are measured from.
func NewRecorder(w io.Writer, base time.Time) *Recorder {
	return &Recorder{base: base, w: w}
}

// Create opens path for a new history and returns a recorder whose time base
// is now.
func Create(path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	r := NewRecorder(f, time.Now())
	r.file = f
	return r, nil
}

// Base is the instant event times are measured from.
func (r *Recorder) Base() time.Time { return r.base }

// Since converts a monotonic instant into the history's time base.
func (r *Recorder) Since(t time.Time) int64 { return int64(t.Sub(r.base)) }

// Now is the current time in the history's time base.
func (r *Recorder) Now() int64 { return int64(time.Since(r.base)) }

// Record stamps e with the next index and the current time, writes it and
// returns it. Stamping under the lock keeps times in file order. A write error is kept and returned by Err
// and Close; recording goes on in memory so the run can still be judged.
func (r *Recorder) Record(e Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Time = int64(time.Since(r.base))
	e.Index = r.next
	r.next++
	if !r.dropped {
		r.events = append(r.events, e)
	}
	if r.err == nil {
		b, err := json.Marshal(e)
		if err == nil {
			b = append(b, '\n')
			_, err = r.w.Write(b)
		}
		if err != nil {
			r.err = fmt.Errorf("history: writing event %d: %w", e.Index, err)
		}
	}
	return e
}

// Events returns a copy of everything recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// EventsFrom returns a copy of the events recorded from index i on: a
// caller that follows a run (its progress lines) copies what is new, not
// the whole history each time.
func (r *Recorder) EventsFrom(i int) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.events) {
		return nil
	}
	return append([]Event(nil), r.events[max(i, 0):]...)
}

// TakeEvents returns everything recorded so far and stops keeping events
// in memory: the caller owns them, and events recorded later are written
// but not kept. It is for the end of a run, where a copy (Events) would
// hold a long history twice while it is checked and reported.
func (r *Recorder) TakeEvents() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	events := r.events
	r.events, r.dropped = nil, true
	return events
}

// Err is the first write error, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close syncs and closes the file opened by Create.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return r.err
	}
	err := errors.Join(r.err, r.file.Sync(), r.file.Close())
	r.file = nil
	return err
}

// LineError is a history line that could not be read.
type LineError struct {
	Name string // file name, if known
	Line int
	Err  error
}

func (e *LineError) Error() string {
	name := e.Name
	if name == "" {
		name = "history"
	}
	return fmt.Sprintf("%s:%d: %v", name, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ErrTruncated marks a last line cut short, as a crash mid-write leaves it.
// Parse returns the events before it together with this error, so a caller
// can judge the prefix and say the history is incomplete.
var ErrTruncated = errors.New("history ends in a partial line")

// ErrUnreadable marks a history whose bytes could not be read (an I/O
// error), as opposed to a line that is not an event.
var ErrUnreadable = errors.New("cannot read the history")

// Parse parses a JSONL history. name is used in error messages. Events must
// carry consecutive indexes from 0, a known type and function, a process
// name as the harness writes them, and times that never decrease. A torn
// last line (no newline, invalid JSON) yields the events before it and a
// *LineError wrapping ErrTruncated.
func Parse(rd io.Reader, name string) ([]Event, error) {
	return parse(rd, name, 0, MaxLine)
}

// MaxLine bounds a history line, line end aside. The longest line the
// harness writes is a set's final read, which lists every element added:
// at most 9 bytes for each add of the run, and each add took six lines of
// some 600 bytes in all (acquire, add and release, invoked and completed),
// so a history of MaxFileSize holds a final read of some 30 MB. A line
// past the bound is not read to its end: without one (a 2 GiB file
// without a newline) it would be held whole to be refused.
const MaxLine = 64 << 20

// ErrLineTooLong marks a line longer than the bound the reader was given
// (MaxLine).
var ErrLineTooLong = errors.New("line too long")

// lineTooLong is the error of a line past maxLine.
func lineTooLong(maxLine int) error {
	return fmt.Errorf("%w: more than %d bytes (%d MiB), the most a history line may have; the longest the harness writes, a set's final read, stays far below it",
		ErrLineTooLong, maxLine, maxLine>>20)
}

func validate(e *Event, want, lastTime int64) error {
	switch {
	case e.Index != want:
		return fmt.Errorf(`field "i" is %d, want %d (indexes count up from 0)`, e.Index, want)
	case e.Process == "":
		return errors.New(`field "p" is missing (a process such as "c1" or "nemesis")`)
	case !ValidProcess(e.Process):
		return fmt.Errorf(`field "p" is %s: %s`, quoteShort(e.Process), processRule)
	case !e.Type.Valid():
		return fmt.Errorf(`field "type" is %q, want invoke, ok, fail or info`, e.Type)
	case !e.F.Valid():
		return fmt.Errorf(`field "f" is %q, want acquire, release, extend, read, write, transfer, add, nemesis, setup, stall or end`, e.F)
	case e.TTL < 0:
		return fmt.Errorf(`field "ttl" is %d, want a time to live in nanoseconds above 0 (or no field)`, e.TTL)
	case e.Time < lastTime:
		return fmt.Errorf(`field "t" is %d, before the previous event's %d (times never decrease)`, e.Time, lastTime)
	}
	return nil
}

// MaxFileSize bounds a history ReadFile reads: ten times a run of a
// million operations (207 MB), and past what a machine that reads it whole
// (some three bytes of memory per byte of history) is likely to have.
const MaxFileSize = 2 << 30

// ErrNotFile marks a history path that is not a regular file: a FIFO
// would wait for a writer, a device never ends.
var ErrNotFile = regular.ErrNotFile

// ErrTooLarge marks a history larger than MaxFileSize.
var ErrTooLarge = errors.New("history too large")

// ReadFile reads the history at path: a regular file of at most
// MaxFileSize bytes. It is opened without blocking, so that a FIFO is
// refused rather than waited on.
func ReadFile(path string) ([]Event, error) {
	f, fi, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return fmt.Errorf("%w: %s: %d bytes, more than the %d GiB a history may have", ErrTooLarge, path, size, MaxFileSize>>30)
	}
	if fi.Size() > MaxFileSize {
		return nil, tooLarge(fi.Size())
	}
	// A file still growing is read up to one byte past the limit, to tell.
	lr := &io.LimitedReader{R: f, N: MaxFileSize + 1}
	events, err := parse(lr, path, fi.Size(), MaxLine)
	if lr.N == 0 {
		return nil, tooLarge(MaxFileSize + 1)
	}
	return events, err
}
