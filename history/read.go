package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// readBuffer is the size of the blocks the reader reads: a line longer
// than one is still read, in a larger block.
const readBuffer = 1 << 20

// block is a run of whole lines of the history, decoded by one worker into
// its own part of the events.
type block struct {
	buf    []byte
	line   int     // the number of its first line
	first  int     // the index of its first event
	events []Event // its part of the history's events, one per line
	// last: its last line has no line end, and ends the history.
	last bool
	// Set by the worker: the events decoded and valid before the first
	// line that is not (good), and what is wrong with that line.
	good int
	err  error
}

// parse is Parse; size, when known, is the history's length in bytes, from
// which the number of events is estimated after the first block, so that
// the events are allocated once instead of grown by copying (a history of
// millions of events would otherwise hold up to three times its size while
// growing). A line longer than maxLine bytes is refused once that many
// have been read.
//
// The history is read in blocks of whole lines, decoded by a worker per
// CPU, each into its own part of the events: a history of millions of
// events reads in a fraction of the time one goroutine takes. What it
// returns is what reading line by line would: the events before the first
// line that is not an event, and what is wrong with that line.
func parse(rd io.Reader, name string, size int64, maxLine int) ([]Event, error) {
	return parseBlocks(rd, name, size, maxLine, readBuffer)
}

// parseBlocks is parse with blocks of blockSize bytes (tests make them
// small, to cut a short history into many).
func parseBlocks(rd io.Reader, name string, size int64, maxLine, blockSize int) ([]Event, error) {
	workers := min(runtime.GOMAXPROCS(0), 4)
	todo := make(chan *block, workers)
	free := make(chan []byte, 2*workers)
	var pending sync.WaitGroup
	var failed atomic.Bool
	var all sync.WaitGroup
	for range workers {
		all.Add(1)
		go func() {
			defer all.Done()
			var d decoder
			for b := range todo {
				b.decode(&d, maxLine)
				if b.err != nil {
					failed.Store(true)
				}
				select {
				case free <- b.buf[:0]:
				default:
				}
				b.buf = nil
				pending.Done()
			}
		}()
	}
	newBuf := func(n int) []byte {
		select {
		case b := <-free:
			if cap(b) >= n {
				return b
			}
		default:
		}
		return make([]byte, 0, max(n, blockSize))
	}

	var (
		blocks []*block
		events []Event
		line   = 1
		read   int64
		stop   error // what ends the reading before its end: a line too long, an I/O error
		buf    = newBuf(blockSize)
	)
	for !failed.Load() {
		// Fill the block; a read error ends the history where it is.
		var rerr error
		for empty := 0; len(buf) < cap(buf) && rerr == nil; {
			var n int
			n, rerr = rd.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			read += int64(n)
			if empty++; n > 0 {
				empty = 0
			} else if empty == 100 {
				rerr = io.ErrNoProgress
			}
		}
		eof := errors.Is(rerr, io.EOF)
		cut := bytes.LastIndexByte(buf, '\n') + 1
		tail := buf[cut:]
		n := bytes.Count(buf[:cut], []byte{'\n'})
		last := eof && len(bytes.TrimSpace(tail)) > 0
		if last {
			// A last line without its line end: an event, or a torn line.
			n++
			cut = len(buf)
		}
		switch {
		case rerr != nil && !eof:
			stop = &LineError{name, line + n, fmt.Errorf("%w: %w", ErrUnreadable, rerr)}
		case rerr == nil && len(tail) > maxLine+1:
			// The line the block ends in has no line end in sight,
			// nor any that could come in time (it may be \r\n): it is
			// not read on.
			stop = &LineError{name, line + n, lineTooLong(maxLine)}
		}
		var next []byte
		if rerr == nil && stop == nil {
			// The line the block ends in the middle of begins the next
			// one, which grows for a line longer than a block, up to
			// room for the longest line there may be.
			next = append(newBuf(max(blockSize, min(2*len(tail), maxLine+2+blockSize))), tail...)
		}
		if n > 0 {
			if len(events)+n > cap(events) {
				// The workers write into events: they finish first.
				pending.Wait()
				want := len(events) + n
				if size > read {
					// The lines so far tell the length of the rest; a
					// tenth more covers lines that grow longer, and
					// this grows again if they grow more.
					want = max(want, int(float64(want)*float64(size)/float64(read)*1.1))
				}
				grown := max(want, cap(events)*5/4)
				if size <= read {
					grown = max(want, 2*cap(events))
				}
				events = append(make([]Event, 0, grown), events...)
				for _, b := range blocks {
					// The old events are garbage now.
					b.events = events[b.first : b.first+len(b.events) : b.first+len(b.events)]
				}
			}
			first := len(events)
			events = events[:first+n]
			b := &block{buf: buf[:cut], line: line, first: first, events: events[first : first+n : first+n], last: last}
			blocks = append(blocks, b)
			pending.Add(1)
			todo <- b
			line += n
		}
		if rerr != nil || stop != nil {
			break
		}
		buf = next
	}
	close(todo)
	all.Wait()

	for k, b := range blocks {
		if k > 0 && b.good > 0 {
			// Each block checked its times from its first line on; the
			// first against the previous block's last is checked here.
			if err := validate(&b.events[0], int64(b.first), events[b.first-1].Time); err != nil {
				return events[:b.first:b.first], &LineError{name, b.line, err}
			}
		}
		if b.err != nil {
			end := b.first + b.good
			return events[:end:end], &LineError{name, b.line + b.good, b.err}
		}
	}
	return events, stop
}

// decode decodes and checks the block's lines into its events, up to the
// first line that is not a valid event.
func (b *block) decode(d *decoder, maxLine int) {
	// The first event of a history has no time before it but 0; the
	// first of a later block is checked against the one before it by
	// parse.
	lastTime := int64(math.MinInt64)
	if b.first == 0 {
		lastTime = 0
	}
	rest := b.buf
	for j := range b.events {
		l := rest
		complete := false
		if end := bytes.IndexByte(rest, '\n'); end >= 0 {
			l, rest, complete = rest[:end], rest[end+1:], true
		}
		if len(bytes.TrimRight(l, "\r")) > maxLine {
			b.err = lineTooLong(maxLine)
			return
		}
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			b.err = errors.New("empty line")
			return
		}
		e := &b.events[j]
		if err := d.decode(l, e); err != nil {
			*e = Event{}
			if !complete {
				b.err = fmt.Errorf("%w: %v", ErrTruncated, err)
			} else {
				b.err = fmt.Errorf("not a history event: %v", err)
			}
			return
		}
		if err := validate(e, int64(b.first+j), lastTime); err != nil {
			*e = Event{}
			b.err = err
			return
		}
		lastTime = e.Time
		b.good++
	}
}
