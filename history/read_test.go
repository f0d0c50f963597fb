package history

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// parseLines is the reference reader: the history read line by line, each
// line decoded and checked in turn, as the reader did before it read
// blocks in parallel.
func parseLines(rd io.Reader, name string, maxLine int) ([]Event, error) {
	br := bufio.NewReader(rd)
	var d decoder
	var events []Event
	var lastTime int64
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return events, &LineError{name, line, fmt.Errorf("%w: %w", ErrUnreadable, err)}
		}
		if len(bytes.TrimRight(b, "\r\n")) > maxLine {
			return events, &LineError{name, line, lineTooLong(maxLine)}
		}
		complete := len(b) > 0 && b[len(b)-1] == '\n'
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if errors.Is(err, io.EOF) {
				return events, nil
			}
			return events, &LineError{name, line, errors.New("empty line")}
		}
		var e Event
		if jerr := d.decode(b, &e); jerr != nil {
			if !complete {
				return events, &LineError{name, line, fmt.Errorf("%w: %v", ErrTruncated, jerr)}
			}
			return events, &LineError{name, line, fmt.Errorf("not a history event: %v", jerr)}
		}
		if verr := validate(&e, int64(len(events)), lastTime); verr != nil {
			return events, &LineError{name, line, verr}
		}
		events = append(events, e)
		lastTime = e.Time
		if errors.Is(err, io.EOF) {
			return events, nil
		}
	}
}

// sameParse compares what the block reader returned with the reference.
func sameParse(t *testing.T, what string, got []Event, gerr error, want []Event, werr error) {
	t.Helper()
	if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("%s: %d events, the reference %d (errors %v; %v)", what, len(got), len(want), gerr, werr)
	}
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%s: error\n %v\nthe reference's\n %v", what, gerr, werr)
	}
	for _, sentinel := range []error{ErrTruncated, ErrUnreadable, ErrLineTooLong} {
		if errors.Is(gerr, sentinel) != errors.Is(werr, sentinel) {
			t.Fatalf("%s: errors.Is(%v, %v) differs from the reference's %v", what, gerr, sentinel, werr)
		}
	}
}

// A history cut into blocks of any size reads as it reads line by line:
// the same events, and the same error at the same line, whatever is
// wrong where (a bad line at a block's start or end, times going back
// across blocks, a torn or blank end, a line longer than the bound).
func TestBlocksReadAsLines(t *testing.T) {
	var clean bytes.Buffer
	r := NewRecorder(&clean, time.Now())
	for i := range 400 {
		e := Event{Process: fmt.Sprintf("c%d", i%5+1), Type: Invoke, F: Acquire, Key: "lock", TTL: 5}
		if i%3 == 1 {
			e = Event{Process: "c1", Type: Info, F: Add, Key: "set", Err: strings.Repeat("x", i%97)}
		}
		r.Record(e)
	}
	lines := strings.SplitAfter(clean.String(), "\n")
	lines = lines[:len(lines)-1]
	breaks := []func(r *rand.Rand, ls []string, i int) []string{
		func(r *rand.Rand, ls []string, i int) []string { ls[i] = "not json\n"; return ls },
		func(r *rand.Rand, ls []string, i int) []string { ls[i] = "\n"; return ls },
		func(r *rand.Rand, ls []string, i int) []string { ls[i] = " \t\r\n"; return ls },
		func(r *rand.Rand, ls []string, i int) []string {
			ls[i] = strings.Replace(ls[i], `"t":`, `"t":-1`, 1) // time back, or a bad number
			return ls
		},
		func(r *rand.Rand, ls []string, i int) []string {
			ls[i] = strings.Replace(ls[i], `"p":"c`, `"p":"C`, 1)
			return ls
		},
		func(r *rand.Rand, ls []string, i int) []string {
			ls[i] = strings.Replace(ls[i], `"i":`, `"i":1`, 1)
			return ls
		},
		func(r *rand.Rand, ls []string, i int) []string { // torn end
			return append(ls[:i], ls[i][:r.IntN(len(ls[i]))])
		},
		func(r *rand.Rand, ls []string, i int) []string { // end without a line end
			return append(ls[:i], strings.TrimSuffix(ls[i], "\n"))
		},
		func(r *rand.Rand, ls []string, i int) []string { // blank end
			return append(ls[:i], "  ")
		},
		func(r *rand.Rand, ls []string, i int) []string {
			ls[i] = strings.Replace(ls[i], "\n", "\r\n", 1)
			return ls
		},
		func(r *rand.Rand, ls []string, i int) []string { // a long line
			ls[i] = strings.Replace(ls[i], `"t":`, `"err":"`+strings.Repeat("y", 300)+`","t":`, 1)
			return ls
		},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 800 {
		ls := append([]string(nil), lines...)
		for range rng.IntN(3) {
			ls = breaks[rng.IntN(len(breaks))](rng, ls, rng.IntN(len(ls)))
		}
		data := []byte(strings.Join(ls, ""))
		maxLine := []int{100, 250, 1000, MaxLine}[rng.IntN(4)]
		block := []int{1, 7, 64, 333, 4096, readBuffer}[rng.IntN(6)]
		want, werr := parseLines(bytes.NewReader(data), "h", maxLine)
		got, gerr := parseBlocks(bytes.NewReader(data), "h", int64(len(data))*int64(rng.IntN(3)), maxLine, block)
		sameParse(t, fmt.Sprintf("round %d, blocks of %d, lines of at most %d", round, block, maxLine), got, gerr, want, werr)
	}
}

// failing reads some bytes, then fails.
type failing struct {
	data []byte
	err  error
}

func (f *failing) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data[:min(len(f.data), 50)])
	f.data = f.data[n:]
	return n, nil
}

// A read error ends the history at the line being read, whatever the
// block size.
func TestBlocksReadError(t *testing.T) {
	data := []byte(l0 + "\n" + l1 + "\n" + l1[:20])
	for _, block := range []int{1, 30, 4096} {
		boom := errors.New("boom")
		want, werr := parseLines(&failing{data, boom}, "h", MaxLine)
		got, gerr := parseBlocks(&failing{data, boom}, "h", 0, MaxLine, block)
		sameParse(t, fmt.Sprintf("blocks of %d", block), got, gerr, want, werr)
		if !errors.Is(gerr, boom) || !errors.Is(gerr, ErrUnreadable) {
			t.Errorf("blocks of %d: %v does not wrap the read error", block, gerr)
		}
	}
}

const (
	l0 = `{"i":0,"p":"c1","type":"invoke","f":"acquire","key":"lock","value":"a","t":10}`
	l1 = `{"i":1,"p":"c1","type":"ok","f":"acquire","key":"lock","value":"a","t":20,"deadline":2000}`
)

// FuzzBlocks: any input, cut into blocks of any size, reads as the
// reference reads it line by line.
func FuzzBlocks(f *testing.F) {
	f.Add([]byte(l0+"\n"+l1+"\n"), uint8(3), uint16(200))
	f.Add([]byte(l0+"\n\n"+l1), uint8(1), uint16(60))
	f.Add([]byte(l0+"\r\n"+l1+" \n  "), uint8(90), uint16(1000))
	f.Add([]byte(l0+"\n"+`{"i":1,"p":"c1","t":5}`+"\n"), uint8(80), uint16(100))
	f.Fuzz(func(t *testing.T, data []byte, block uint8, maxLine uint16) {
		want, werr := parseLines(bytes.NewReader(data), "f", int(maxLine))
		got, gerr := parseBlocks(bytes.NewReader(data), "f", int64(len(data)), int(maxLine), int(block)+1)
		sameParse(t, fmt.Sprintf("blocks of %d, lines of at most %d", int(block)+1, maxLine), got, gerr, want, werr)
	})
}
