package history_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"splitbrain/history"
)

func i64(v int64) *int64 { return &v }

// sample is a short history covering every optional field.
func sample() []history.Event {
	fault := history.Fault{ID: 1, Kind: "cut", Phase: history.PhaseStart,
		Links:  []history.Link{{Client: "c1", Node: "n4"}, {Client: "c1", Node: "n5"}},
		Detail: "c1→n4, c1→n5"}
	return []history.Event{
		{Process: history.ProcessNemesis, Type: history.Info, F: history.Nemesis, Value: history.MustValue(fault)},
		{Process: "c1", Type: history.Invoke, F: history.Acquire, Key: "lock", Value: history.MustValue("v-\"1\"<é>")},
		{Process: "c1", Type: history.OK, F: history.Acquire, Key: "lock", Value: history.MustValue("v-\"1\"<é>"),
			Deadline: i64(1_999_000_000), Token: i64(7), Nodes: []string{"n1", "n2", "n3"}},
		{Process: "c2", Type: history.Invoke, F: history.Write, Key: "counter", Value: history.MustValue(41)},
		{Process: "c2", Type: history.Info, F: history.Write, Key: "counter", Err: "i/o timeout\nsecond line"},
		{Process: "c3", Type: history.Fail, F: history.Release, Key: "lock", Err: "not the holder", Nodes: []string{}},
		{Process: history.ProcessNemesis, Type: history.Info, F: history.Nemesis,
			Value: history.MustValue(history.Fault{ID: 1, Kind: "cut", Phase: history.PhaseStop})},
	}
}

// checkRoundTrip compares what was recorded with what was read back: the
// recorder's stamps (index, time) and every field the caller set.
func checkRoundTrip(t *testing.T, in, recorded, got []history.Event) {
	t.Helper()
	if len(got) != len(in) || len(recorded) != len(in) {
		t.Fatalf("read %d events, recorded %d, wrote %d", len(got), len(recorded), len(in))
	}
	var last int64
	for i, g := range got {
		if g.Index != int64(i) {
			t.Errorf("event %d: index %d", i, g.Index)
		}
		if g.Time < last {
			t.Errorf("event %d: time %d before %d", i, g.Time, last)
		}
		last = g.Time
		want := in[i]
		want.Index, want.Time = g.Index, g.Time
		if len(want.Nodes) == 0 {
			want.Nodes = nil // omitempty: an empty list reads back as none
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("event %d:\n got  %+v\n want %+v", i, g, want)
		}
		if !reflect.DeepEqual(g, normalize(recorded[i])) {
			t.Errorf("event %d: read %+v, Record returned %+v", i, g, recorded[i])
		}
	}
}

func normalize(e history.Event) history.Event {
	if len(e.Nodes) == 0 {
		e.Nodes = nil
	}
	return e
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		// record returns the events Record returned and the parsed history.
		record func(t *testing.T, in []history.Event) (recorded, got []history.Event)
	}{
		{"buffer", func(t *testing.T, in []history.Event) ([]history.Event, []history.Event) {
			var buf bytes.Buffer
			r := history.NewRecorder(&buf, time.Now())
			var recorded []history.Event
			for _, e := range in {
				recorded = append(recorded, r.Record(e))
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("Close of a writer recorder: %v", err)
			}
			if !reflect.DeepEqual(r.Events(), recorded) {
				t.Errorf("Events() differs from what Record returned")
			}
			if n := strings.Count(buf.String(), "\n"); n != len(in) {
				t.Errorf("%d lines for %d events", n, len(in))
			}
			got, err := history.Parse(&buf, "buf")
			if err != nil {
				t.Fatal(err)
			}
			return recorded, got
		}},
		{"file", func(t *testing.T, in []history.Event) ([]history.Event, []history.Event) {
			path := filepath.Join(t.TempDir(), "history.jsonl")
			before := time.Now()
			r, err := history.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if b := r.Base(); b.Before(before) || b.After(time.Now()) {
				t.Errorf("Base %v is not the creation instant", b)
			}
			var recorded []history.Event
			for _, e := range in {
				recorded = append(recorded, r.Record(e))
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			got, err := history.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return recorded, got
		}},
	}
	inputs := map[string][]history.Event{
		"empty":  nil,
		"one":    sample()[:1],
		"sample": sample(),
	}
	for _, tt := range tests {
		for iname, in := range inputs {
			t.Run(tt.name+"/"+iname, func(t *testing.T) {
				recorded, got := tt.record(t, in)
				checkRoundTrip(t, in, recorded, got)
			})
		}
	}
}

func TestRecorderClock(t *testing.T) {
	base := time.Now().Add(-time.Hour)
	r := history.NewRecorder(io.Discard, base)
	if r.Base() != base {
		t.Errorf("Base = %v, want %v", r.Base(), base)
	}
	if got := r.Since(base.Add(1500 * time.Millisecond)); got != int64(1500*time.Millisecond) {
		t.Errorf("Since = %d", got)
	}
	if now := r.Now(); now < int64(time.Hour) {
		t.Errorf("Now = %v, want at least an hour", time.Duration(now))
	}
	e := r.Record(history.Event{Process: "c1", Type: history.Invoke, F: history.Acquire, Index: 99, Time: -5})
	if e.Index != 0 || e.Time < int64(time.Hour) {
		t.Errorf("Record did not stamp index and time: %+v", e)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(b []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("disk full")
	}
	w.n--
	return len(b), nil
}

func TestRecorderWriteError(t *testing.T) {
	r := history.NewRecorder(&failWriter{n: 1}, time.Now())
	for range 3 {
		r.Record(history.Event{Process: "c1", Type: history.Invoke, F: history.Read})
	}
	err := r.Err()
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "event 1") {
		t.Errorf("Err = %v, want the first failed event (1) and the cause", err)
	}
	if n := len(r.Events()); n != 3 {
		t.Errorf("kept %d events in memory after a write error, want 3", n)
	}
	if cerr := r.Close(); cerr == nil || cerr.Error() != err.Error() {
		t.Errorf("Close = %v, want %v", cerr, err)
	}
}

func TestCreateRefusesExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := history.Create(path)
	if err == nil {
		r.Close()
		t.Fatal("Create overwrote an existing history")
	}
	if !errors.Is(err, os.ErrExist) {
		t.Errorf("err = %v, want os.ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious\n" {
		t.Errorf("existing file changed: %q", b)
	}
	if _, err := history.Create(filepath.Join(t.TempDir(), "missing", "h.jsonl")); err == nil {
		t.Error("Create in a missing folder succeeded")
	}
}

func TestReadFileMissing(t *testing.T) {
	_, err := history.ReadFile(filepath.Join(t.TempDir(), "nope.jsonl"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want os.ErrNotExist", err)
	}
}

// Lines of a valid history, for building broken ones.
const (
	l0 = `{"i":0,"p":"c1","type":"invoke","f":"acquire","key":"lock","value":"a","t":10}`
	l1 = `{"i":1,"p":"c1","type":"ok","f":"acquire","key":"lock","value":"a","t":20,"deadline":2000,"nodes":["n1","n2","n3"]}`
	l2 = `{"i":2,"p":"nemesis","type":"info","f":"nemesis","value":{"id":1,"kind":"cut","phase":"start"},"t":30}`
	l3 = `{"i":3,"p":"c1","type":"invoke","f":"release","key":"lock","value":"a","t":40}`
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name      string
		input     string
		line      int
		events    int      // events returned before the error
		want      []string // substrings of the message: what is wrong and what would be valid
		truncated bool
	}{
		{"non-JSON line", l0 + "\n" + l1 + "\nhello world\n" + l2 + "\n", 3, 2,
			[]string{"not a history event", "invalid character"}, false},
		{"unknown field", l0 + "\n" + `{"i":1,"p":"c1","type":"ok","f":"acquire","t":20,"colour":"red"}` + "\n", 2, 1,
			[]string{"not a history event", `unknown field "colour"`}, false},
		{"wrong index", l0 + "\n" + strings.Replace(l1, `"i":1`, `"i":5`, 1) + "\n", 2, 1,
			[]string{`field "i" is 5, want 1`, "count up from 0"}, false},
		{"first index not zero", strings.Replace(l0, `"i":0`, `"i":1`, 1) + "\n", 1, 0,
			[]string{`field "i" is 1, want 0`}, false},
		{"unknown type", l0 + "\n" + strings.Replace(l1, `"type":"ok"`, `"type":"done"`, 1) + "\n", 2, 1,
			[]string{`field "type" is "done"`, "invoke, ok, fail or info"}, false},
		{"unknown f", l0 + "\n" + strings.Replace(l1, `"f":"acquire"`, `"f":"lock"`, 1) + "\n", 2, 1,
			[]string{`field "f" is "lock"`, "acquire, release, extend, read, write, transfer, add, nemesis, setup, stall or end"}, false},
		{"missing p", l0 + "\n" + strings.Replace(l1, `"p":"c1",`, "", 1) + "\n", 2, 1,
			[]string{`field "p" is missing`, `"c1"`, `"nemesis"`}, false},
		{"empty p", strings.Replace(l0, `"p":"c1"`, `"p":""`, 1) + "\n", 1, 0,
			[]string{`field "p" is missing`}, false},
		{"markup in the process", strings.Replace(l0, `"p":"c1"`, `"p":"c1<img src=x onerror=alert(1)>"`, 1) + "\n", 1, 0,
			[]string{`field "p" is "c1<img src=x onerror=alert(1)>"`, "lower-case letters, digits and dashes", "c1.2"}, false},
		{"terminal escape in the process", l0 + "\n" + strings.Replace(l1, `"p":"c1"`, `"p":"c1\u001b[2J"`, 1) + "\n", 2, 1,
			[]string{`field "p" is "c1\x1b[2J"`}, false},
		{"negative ttl", strings.Replace(l0, `"t":`, `"ttl":-5,"t":`, 1) + "\n", 1, 0,
			[]string{`field "ttl" is -5`, "above 0"}, false},
		{"upper-case process", strings.Replace(l0, `"p":"c1"`, `"p":"C1"`, 1) + "\n", 1, 0, []string{`field "p" is "C1"`}, false},
		{"process with a space", strings.Replace(l0, `"p":"c1"`, `"p":"c 1"`, 1) + "\n", 1, 0, []string{`field "p" is "c 1"`}, false},
		{"continuation without a number", strings.Replace(l0, `"p":"c1"`, `"p":"c1."`, 1) + "\n", 1, 0, []string{`field "p" is "c1."`}, false},
		{"continuation of a continuation", strings.Replace(l0, `"p":"c1"`, `"p":"c1.2.3"`, 1) + "\n", 1, 0, []string{`field "p" is "c1.2.3"`}, false},
		{"long process cut in the message", strings.Replace(l0, `"p":"c1"`, `"p":"`+strings.Repeat("c", 65)+`"`, 1) + "\n", 1, 0,
			[]string{`field "p" is "` + strings.Repeat("c", 40) + `"…`, "at most 64"}, false},
		{"field given twice", l0 + "\n" + strings.Replace(l1, `"t":20`, `"t":20,"t":5`, 1) + "\n", 2, 1,
			[]string{"not a history event", `field "t" is given twice`, "each field once"}, false},
		{"second event on the line", l0 + " " + l1 + "\n", 1, 0, []string{"not a history event", "one event per line"}, false},
		{"time going backwards", l0 + "\n" + l1 + "\n" + strings.Replace(l2, `"t":30`, `"t":15`, 1) + "\n", 3, 2,
			[]string{`field "t" is 15, before the previous event's 20`, "never decrease"}, false},
		{"empty line in the middle", l0 + "\n\n" + l1 + "\n", 2, 1,
			[]string{"empty line"}, false},
		{"blank line in the middle", l0 + "\n \t\n" + l1 + "\n", 2, 1,
			[]string{"empty line"}, false},
		{"wrong JSON type", l0 + "\n" + `{"i":"one","p":"c1","type":"ok","f":"acquire","t":20}` + "\n", 2, 1,
			[]string{"not a history event"}, false},
		{"JSON array", "[1,2]\n", 1, 0, []string{"not a history event"}, false},
		{"torn last line", l0 + "\n" + l1 + "\n" + l2 + "\n" + `{"i":3,"p":`, 4, 3,
			[]string{"partial line"}, true},
		{"torn after a complete line without newline is still torn", l0 + "\n" + `{"i":1`, 2, 1,
			[]string{"partial line"}, true},
		{"invalid but complete last line is not torn", l0 + "\n" + `{"i":1,"p":` + "\n", 2, 1,
			[]string{"not a history event"}, false},
		{"valid JSON last line without newline is still validated",
			l0 + "\n" + strings.Replace(l1, `"i":1`, `"i":2`, 1), 2, 1,
			[]string{`field "i" is 2, want 1`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "store/x/history.jsonl"
			got, err := history.Parse(strings.NewReader(tt.input), name)
			if err == nil {
				t.Fatalf("no error; events %+v", got)
			}
			var le *history.LineError
			if !errors.As(err, &le) {
				t.Fatalf("err %T %v is not a *LineError", err, err)
			}
			if le.Name != name || le.Line != tt.line {
				t.Errorf("LineError at %s:%d, want %s:%d", le.Name, le.Line, name, tt.line)
			}
			msg := err.Error()
			if prefix := fmt.Sprintf("%s:%d: ", name, tt.line); !strings.HasPrefix(msg, prefix) {
				t.Errorf("message %q does not start with %q", msg, prefix)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if errors.Is(err, history.ErrTruncated) != tt.truncated {
				t.Errorf("errors.Is(err, ErrTruncated) = %v, want %v (%v)", !tt.truncated, tt.truncated, err)
			}
			if len(got) != tt.events {
				t.Fatalf("returned %d events with the error, want %d", len(got), tt.events)
			}
			for i, e := range got {
				if e.Index != int64(i) {
					t.Errorf("returned event %d has index %d", i, e.Index)
				}
			}
		})
	}
}

func TestParseErrorDefaultName(t *testing.T) {
	_, err := history.Parse(strings.NewReader("x\n"), "")
	if err == nil || !strings.HasPrefix(err.Error(), "history:1: ") {
		t.Errorf("err = %v, want it to start with history:1:", err)
	}
}

func TestParseFileErrorsNamePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(l0+"\n"+l1+"\n"+`{"i":2,"p":`), 0o644); err != nil {
		t.Fatal(err)
	}
	events, err := history.ReadFile(path)
	var le *history.LineError
	if !errors.As(err, &le) || le.Name != path || le.Line != 3 || !errors.Is(err, history.ErrTruncated) {
		t.Fatalf("err = %v, want a truncation at %s:3", err, path)
	}
	if len(events) != 2 {
		t.Errorf("got %d events of the prefix, want 2", len(events))
	}
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		events int
	}{
		{"empty", "", 0},
		{"one line", l0 + "\n", 1},
		{"no trailing newline", l0 + "\n" + l1 + "\n" + l2 + "\n" + l3, 4},
		{"CRLF line ends", l0 + "\r\n" + l1 + "\r\n", 2},
		{"equal times", l0 + "\n" + strings.Replace(l1, `"t":20`, `"t":10`, 1) + "\n", 2},
		{"spaces around", "  " + l0 + "  \n", 1},
		{"the harness's processes", strings.Join([]string{
			strings.Replace(l0, `"p":"c1"`, `"p":"c12"`, 1),
			strings.Replace(l1, `"p":"c1"`, `"p":"c12.3"`, 1),
			strings.Replace(l2, `"p":"nemesis"`, `"p":"init"`, 1),
			strings.Replace(l3, `"p":"c1"`, `"p":"final.1"`, 1),
			`{"i":4,"p":"harness","type":"info","f":"end","t":50}`,
			`{"i":5,"p":"nemesis","type":"info","f":"nemesis","t":50}`,
			`{"i":6,"p":"c-2","type":"invoke","f":"read","t":50,"lease":"v1"}`,
		}, "\n") + "\n", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := history.Parse(strings.NewReader(tt.input), "h")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.events {
				t.Fatalf("%d events, want %d", len(got), tt.events)
			}
		})
	}
	got, err := history.Parse(strings.NewReader(l0+"\n"+l1+"\n"+l2+"\n"+l3), "h")
	if err != nil {
		t.Fatal(err)
	}
	e := got[1]
	if e.Process != "c1" || e.Type != history.OK || e.F != history.Acquire || e.Key != "lock" ||
		e.StringValue() != "a" || e.Time != 20 || e.Deadline == nil || *e.Deadline != 2000 ||
		e.Token != nil || !reflect.DeepEqual(e.Nodes, []string{"n1", "n2", "n3"}) {
		t.Errorf("event 1 decoded as %+v", e)
	}
}

func TestFault(t *testing.T) {
	want := history.Fault{ID: 3, Kind: "clock-jump", Phase: history.PhaseStart, Nodes: []string{"n3"},
		Offset: int64(5 * time.Second), Detail: "n3 +5s"}
	var buf bytes.Buffer
	r := history.NewRecorder(&buf, time.Now())
	r.Record(history.Event{Process: history.ProcessNemesis, Type: history.Info, F: history.Nemesis, Value: history.MustValue(want)})
	r.Record(history.Event{Process: "c1", Type: history.Invoke, F: history.Acquire, Value: history.MustValue("v")})
	r.Record(history.Event{Process: history.ProcessNemesis, Type: history.Info, F: history.Nemesis, Value: json.RawMessage(`"oops"`)})
	events, err := history.Parse(&buf, "h")
	if err != nil {
		t.Fatal(err)
	}

	got, err := events[0].Fault()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fault = %+v, want %+v", got, want)
	}
	if _, err := events[1].Fault(); err == nil || !strings.Contains(err.Error(), "not a nemesis event") {
		t.Errorf("Fault of an acquire: err = %v, want 'not a nemesis event'", err)
	}
	if _, err := events[2].Fault(); err == nil || !strings.Contains(err.Error(), "fault value") {
		t.Errorf("Fault of a bad value: err = %v", err)
	}
	if s := events[1].StringValue(); s != "v" {
		t.Errorf("StringValue = %q", s)
	}
	if s := events[0].StringValue(); s != "" {
		t.Errorf("StringValue of a fault = %q, want empty", s)
	}
	if l := (history.Link{Client: "c1", Node: "n4"}).String(); l != "c1→n4" {
		t.Errorf("Link.String = %q", l)
	}
}

func TestValidEnums(t *testing.T) {
	for _, ty := range []history.Type{history.Invoke, history.OK, history.Fail, history.Info} {
		if !ty.Valid() {
			t.Errorf("%q not valid", ty)
		}
	}
	for _, f := range []history.Func{history.Acquire, history.Release, history.Extend, history.Read,
		history.Write, history.Transfer, history.Add, history.Nemesis, history.End, history.Setup, history.Stall} {
		if !f.Valid() {
			t.Errorf("%q not valid", f)
		}
	}
	if history.Type("").Valid() || history.Type("OK").Valid() || history.Func("").Valid() || history.Func("lock").Valid() {
		t.Error("an unknown type or func is valid")
	}
}

func TestMustValuePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustValue of a channel did not panic")
		}
	}()
	history.MustValue(make(chan int))
}

func TestConcurrentRecord(t *testing.T) {
	const goroutines, each = 8, 200
	path := filepath.Join(t.TempDir(), "history.jsonl")
	r, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			p := fmt.Sprintf("c%d", g)
			for i := range each {
				ty := history.Invoke
				if i%2 == 1 {
					ty = history.OK
				}
				r.Record(history.Event{Process: p, Type: ty, F: history.Write, Key: "k",
					Value: history.MustValue(i), Nodes: []string{p}})
				if i%50 == 0 {
					_ = r.Events()
					_ = r.Now()
				}
			}
		})
	}
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	events, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != goroutines*each {
		t.Fatalf("%d events, want %d", len(events), goroutines*each)
	}
	if !reflect.DeepEqual(events, r.Events()) {
		t.Error("file differs from the recorder's events")
	}
	// Each goroutine's own events appear in its order.
	next := map[string]int{}
	for _, e := range events {
		var v int
		if err := json.Unmarshal(e.Value, &v); err != nil {
			t.Fatal(err)
		}
		if v != next[e.Process] {
			t.Fatalf("event %d: %s wrote %d, want %d", e.Index, e.Process, v, next[e.Process])
		}
		next[e.Process]++
	}
}

func TestUnfinished(t *testing.T) {
	op := history.Event{Process: "c1", Type: history.Invoke, F: history.Acquire, Key: "k"}
	end := history.Event{Process: history.ProcessHarness, Type: history.Info, F: history.End}
	interrupted := end
	interrupted.Err = "the run was interrupted before its last step"
	for _, tc := range []struct {
		name   string
		events []history.Event
		want   string // substring; "" means finished
	}{
		{"empty", nil, "empty"},
		{"crashed", []history.Event{op}, "no end-of-run event"},
		{"finished", []history.Event{op, end}, ""},
		{"interrupted", []history.Event{op, interrupted}, "interrupted"},
		{"end not last", []history.Event{end, op}, "no end-of-run event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := history.Unfinished(tc.events)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Unfinished = %q, want %q", got, tc.want)
			}
		})
	}
}

// One formatter of link lists, for report labels and fault details alike.
func TestFormatLinks(t *testing.T) {
	l := func(c, n string) history.Link { return history.Link{Client: c, Node: n} }
	tests := []struct {
		name       string
		links      []history.Link
		arrow, sep string
		want       string
	}{
		{"none", nil, "→", " ", ""},
		{"one", []history.Link{l("c1", "n4")}, "→", " ", "c1→n4"},
		{"grouped by client", []history.Link{l("c1", "n4"), l("c1", "n5"), l("c2", "n1")}, "→", " ", "c1→n4,n5 c2→n1"},
		{"clients sorted, nodes in order", []history.Link{l("c2", "n2"), l("c1", "n5"), l("c2", "n1"), l("c1", "n4")},
			" ✂ ", "; ", "c1 ✂ n5,n4; c2 ✂ n2,n1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := history.FormatLinks(tt.links, tt.arrow, tt.sep); got != tt.want {
				t.Errorf("FormatLinks = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidProcess(t *testing.T) {
	for _, tc := range []struct {
		p    string
		want bool
	}{
		{"c1", true}, {"c64", true}, {"c1.1", true}, {"c1.10", true}, {"nemesis", true}, {"harness", true},
		{"init", true}, {"final", true}, {"init.2", true}, {"a-b-0", true}, {strings.Repeat("c", 64), true},
		{"", false}, {strings.Repeat("c", 65), false}, {"C1", false}, {"c_1", false}, {"-c1", false}, {".1", false},
		{"c1.", false}, {"c1.01", false}, {"c1.x", false}, {"c1.2.3", false}, {"c1 ", false}, {"c1\n", false},
		{"c1<b>", false}, {"c1&amp;", false}, {"é", false},
	} {
		if got := history.ValidProcess(tc.p); got != tc.want {
			t.Errorf("ValidProcess(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

// TakeEvents hands the events over without a copy and keeps no more:
// the end of a long run must not hold its history twice.
func TestTakeEvents(t *testing.T) {
	var buf bytes.Buffer
	r := history.NewRecorder(&buf, time.Now())
	r.Record(history.Event{Process: "c1", Type: history.Invoke, F: history.Acquire, Key: "k"})
	r.Record(history.Event{Process: "c1", Type: history.OK, F: history.Acquire, Key: "k"})
	got := r.TakeEvents()
	if len(got) != 2 || got[1].Index != 1 {
		t.Fatalf("TakeEvents = %+v", got)
	}
	r.Record(history.Event{Process: history.ProcessHarness, Type: history.Info, F: history.End})
	if n := len(r.Events()); n != 0 {
		t.Errorf("the recorder kept %d event(s) after TakeEvents", n)
	}
	events, err := history.Parse(&buf, "h")
	if err != nil || len(events) != 3 {
		t.Errorf("the file has %d events (%v), want all 3 written", len(events), err)
	}
}

func TestEventsFrom(t *testing.T) {
	var buf bytes.Buffer
	r := history.NewRecorder(&buf, time.Now())
	for range 5 {
		r.Record(history.Event{Process: "c1", Type: history.Invoke, F: history.Read, Key: "k"})
	}
	for _, tc := range []struct{ from, n int }{{-1, 5}, {0, 5}, {3, 2}, {5, 0}, {9, 0}} {
		got := r.EventsFrom(tc.from)
		if len(got) != tc.n || tc.n > 0 && got[0].Index != int64(max(tc.from, 0)) {
			t.Errorf("EventsFrom(%d) = %d event(s) from %v, want %d", tc.from, len(got), got, tc.n)
		}
	}
}

// StringValue decodes plain lock values without the JSON decoder; every
// value must decode as json.Unmarshal decodes it.
func TestStringValueAsJSON(t *testing.T) {
	values := []string{`"v"`, `""`, `"c1-0000017"`, `"a b~"`, `"\u0041"`, `"a\"b"`, `"a\\b"`,
		"\"a\x01b\"", "\"a\x7fb\"", `"é"`, "\"\xff\"", `"`, `"a`, `a"`, `17`, `null`, `{"a":"b"}`,
		` "v"`, `"v" `, `["v"]`, `"a\nb"`, "\"a\tb\""}
	for _, v := range values {
		var want string
		if json.Unmarshal([]byte(v), &want) != nil {
			want = ""
		}
		if got := (history.Event{Value: json.RawMessage(v)}).StringValue(); got != want {
			t.Errorf("StringValue of %q = %q, want %q (as json.Unmarshal)", v, got, want)
		}
	}
}

func FuzzStringValue(f *testing.F) {
	for _, v := range []string{`"v"`, `"a\"b"`, "\"\x01\"", `"é"`} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		var want string
		if json.Unmarshal(v, &want) != nil {
			want = ""
		}
		if got := (history.Event{Value: v}).StringValue(); got != want {
			t.Errorf("StringValue of %q = %q, want %q (as json.Unmarshal)", v, got, want)
		}
	})
}

// Stood reads a stall's length, and says what is wrong with one it cannot.
func TestStood(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		e    history.Event
		want int64
		err  string
	}{
		{"a stall", history.Event{F: history.Stall, Value: history.MustValue(history.StallValue{For: 450e6})}, 450e6, ""},
		{"no length", history.Event{F: history.Stall, Value: history.MustValue(history.StallValue{})}, 0, "a stall without its length (for 0 ns)"},
		{"a value of another shape", history.Event{F: history.Stall, Value: history.MustValue("x")}, 0, "a stall without its length: "},
		{"not a stall", history.Event{F: history.Setup}, 0, "is setup, not a stall"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.e.Stood()
			if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("Stood() = %d, %v; want %d, %q", got, err, tc.want, tc.err)
			}
		})
	}
}
