package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// strictDecode is the reference: encoding/json with unknown fields refused,
// nothing after the event, and no field given twice.
func strictDecode(line []byte) (Event, error) {
	var e Event
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Event{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Event{}, errTrailing
	}
	if err := twice(line); err != nil {
		return Event{}, err
	}
	return e, nil
}

// twice is the reference's own finding of a field given twice: it takes
// the names from Event's tags and counts each key of the object under the
// name encoding/json would fill with it (case folded).
func twice(line []byte) error {
	var names []string
	typ := reflect.TypeFor[Event]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, _ := dec.Token(); t != json.Delim('{') {
		return nil
	}
	count := map[string]int{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		for _, n := range names {
			if strings.EqualFold(t.(string), n) {
				if count[n]++; count[n] == 2 {
					return errors.New("field " + strconv.Quote(n) + " is given twice")
				}
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
	}
	return nil
}

// recorded is a history as the recorder writes it, with every field and
// the shapes of value the workload records.
func recorded(t testing.TB) []byte {
	t.Helper()
	d := int64(2_000_000_000)
	tok := int64(7)
	var buf bytes.Buffer
	r := NewRecorder(&buf, time.Now())
	for _, e := range []Event{
		{Process: ProcessNemesis, Type: Info, F: Nemesis, Value: MustValue(Fault{ID: 1, Kind: "cut", Phase: PhaseStart,
			Links: []Link{{Client: "c1", Node: "n4"}}, Detail: "c1→n4 <cut> & \"quoted\""})},
		{Process: "c1", Type: Invoke, F: Acquire, Key: "lock", TTL: 2_000_000_000},
		{Process: "c1", Type: OK, F: Acquire, Key: "lock", Value: MustValue("v-1"), Deadline: &d, Token: &tok, Nodes: []string{"n1", "n2", "n3"}},
		{Process: "c1", Type: Invoke, F: Read, Key: "lock", Lease: "v-1"},
		{Process: "c1", Type: OK, F: Read, Key: "lock", Lease: "v-1", Value: MustValue(41)},
		{Process: "c1", Type: Invoke, F: Write, Key: "lock", Lease: "v-1", Value: MustValue(42), Token: &tok},
		{Process: "c1", Type: OK, F: Write, Key: "lock", Lease: "v-1", Value: MustValue(Ack{Seq: 3})},
		{Process: "c2", Type: Invoke, F: Transfer, Key: "bank", Value: MustValue(TransferValue{From: "a", To: "b", Amount: "1.50",
			Balances: Balances{"a": "8.50", "b": "11.50"}})},
		{Process: "c2", Type: Fail, F: Transfer, Key: "bank", Value: MustValue(Ack{Highest: &tok}), Err: "fenced off: token 6 < 7"},
		{Process: "c3", Type: Invoke, F: Add, Key: "set", Value: MustValue(12)},
		{Process: "c3", Type: Info, F: Add, Key: "set", Err: "i/o timeout"},
		{Process: "c3.1", Type: OK, F: Read, Key: "set", Value: MustValue(SetRead{Size: 2, Elements: []int64{1, 12}})},
		{Process: "c4", Type: Fail, F: Release, Key: "lock", Value: MustValue("v-é"), Nodes: []string{}, Err: "not the holder"},
		{Process: ProcessHarness, Type: Info, F: End},
	} {
		r.Record(e)
	}
	return buf.Bytes()
}

// The fast path takes every line the recorder writes: a history read back
// never goes through reflection.
func TestFastPathReadsWhatTheRecorderWrites(t *testing.T) {
	var d decoder
	sc := bufio.NewScanner(bytes.NewReader(recorded(t)))
	n := 0
	for sc.Scan() {
		n++
		var e Event
		if !d.fast(sc.Bytes(), &e) {
			t.Errorf("line %d went the slow way: %s", n, sc.Bytes())
			continue
		}
		want, err := strictDecode(sc.Bytes())
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if !reflect.DeepEqual(e, want) {
			t.Errorf("line %d:\n fast   %+v\n strict %+v", n, e, want)
		}
	}
}

// Lines outside the fast path's shape are decoded or refused exactly as
// encoding/json decodes or refuses them.
func TestSlowPathLines(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		fast       bool   // the fast path takes it
		err        string // "" when the line decodes
	}{
		{"plain", `{"i":0,"p":"c1","type":"ok","f":"acquire","t":5,"deadline":9,"nodes":["n1"]}`, true, ""},
		{"spaces", ` { "i" : 0 , "p" : "c1" , "nodes" : [ "n1" , "n2" ] , "value" : { "a" : [1, 2] } } `, true, ""},
		{"empty object", `{}`, true, ""},
		{"upper-case field name", `{"I":0,"P":"c1"}`, false, ""},
		{"repeated field", `{"i":0,"p":"c1","p":"c2"}`, false, `field "p" is given twice`},
		{"repeated in another case", `{"t":1,"i":0,"T":2}`, false, `field "t" is given twice (as "t" and "T")`},
		{"repeated, escaped", `{"\u0069":0,"p":"c1","i":1}`, false, `field "i" is given twice;`},
		{"repeated, folded", `{"lease":"a","lea\u017fe":"b"}`, false, `field "lease" is given twice`},
		{"repeated null", `{"deadline":null,"deadline":5}`, false, `field "deadline" is given twice`},
		{"repeated fencing", `{"fencing":true,"Fencing":false}`, false, `field "fencing" is given twice`},
		{"escaped string", `{"i":0,"p":"c\u0031","err":"a\nb \u003c"}`, true, ""},
		{"null pointer", `{"i":0,"deadline":null}`, false, ""},
		{"null value", `{"i":0,"value":null}`, false, ""},
		{"null nodes", `{"i":0,"nodes":null}`, false, ""},
		{"exponent", `{"i":1e0}`, false, "cannot unmarshal number 1e0"},
		{"fraction", `{"t":1.5}`, false, "cannot unmarshal number 1.5"},
		{"leading zero", `{"t":01}`, false, "invalid character"},
		{"huge number", `{"t":99999999999999999999}`, false, "cannot unmarshal number"},
		{"19 digits", `{"t":1234567890123456789}`, true, ""},
		{"negative", `{"t":-5}`, true, ""},
		{"unknown field", `{"i":0,"colour":"red"}`, false, `unknown field "colour"`},
		{"trailing comma", `{"i":0,}`, false, "invalid character"},
		{"second object", `{"i":0,"p":"c1"} {"i":1}`, false, "goes on after"},
		{"trailing garbage", `{"i":0,"p":"c1"}]`, false, "goes on after"},
		{"string for a number", `{"i":"0"}`, false, "cannot unmarshal string"},
		{"number for a string", `{"p":1}`, false, "cannot unmarshal number"},
		{"invalid value", `{"value":{"a":}}`, false, "invalid character"},
		{"unterminated value", `{"value":[1,2}`, false, "invalid character"},
		{"bad literal value", `{"value":tru}`, false, "invalid character"},
		{"invalid UTF-8", "{\"p\":\"c\xff\"}", true, ""},
		{"control character", "{\"err\":\"a\x01b\"}", false, "invalid character"},
		{"non-ASCII", `{"err":"délai dépassé → n4"}`, true, ""},
		{"array", `[1,2]`, false, "cannot unmarshal array"},
		{"torn", `{"i":3,"p":`, false, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d decoder
			var e Event
			if got := d.fast([]byte(tc.line), &e); got != tc.fast {
				t.Errorf("fast path took it: %v, want %v", got, tc.fast)
			}
			err := d.decode([]byte(tc.line), &e)
			want, werr := strictDecode([]byte(tc.line))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err = %v, want %q", err, tc.err)
			case (err == nil) != (werr == nil):
				t.Fatalf("err = %v, encoding/json's %v", err, werr)
			case err == nil && !reflect.DeepEqual(e, want):
				t.Errorf("decoded\n %+v\nencoding/json\n %+v", e, want)
			}
		})
	}
}

// The carved slices are the events' own: appending to one does not write
// into the next event's.
func TestCarvedSlicesAreCapped(t *testing.T) {
	var d decoder
	var a, b Event
	if !d.fast([]byte(`{"value":"x","nodes":["n1"],"deadline":1}`), &a) || !d.fast([]byte(`{"value":"y","nodes":["n2"],"deadline":2}`), &b) {
		t.Fatal("fast path refused")
	}
	_ = append(a.Value, 'z')
	_ = append(a.Nodes, "n9")
	if string(b.Value) != `"y"` || b.Nodes[0] != "n2" || *a.Deadline != 1 || *b.Deadline != 2 {
		t.Errorf("events share storage: %s %v %d, %s %v %d", a.Value, a.Nodes, *a.Deadline, b.Value, b.Nodes, *b.Deadline)
	}
}

// The reader's estimate of the number of events is only an estimate:
// histories whose lines grow or shrink past it still read whole, and a
// line longer than the reader's buffer reads too.
func TestParseSizeEstimateAndLongLines(t *testing.T) {
	var buf bytes.Buffer
	r := NewRecorder(&buf, time.Now())
	for i := range 20_000 {
		e := Event{Process: "c1", Type: Invoke, F: Add, Key: "k", Value: MustValue(i)}
		if i > 10_000 {
			e.Err = strings.Repeat("x", i%300)
		}
		if i == 15_000 {
			e.Err = strings.Repeat("long ", readBuffer/2)
		}
		r.Record(e)
	}
	for _, size := range []int64{0, int64(buf.Len()), int64(buf.Len()) / 10, int64(buf.Len()) * 10} {
		events, err := parse(bytes.NewReader(buf.Bytes()), "h", size, MaxLine)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(events, r.Events()) {
			t.Errorf("size hint %d: events differ from what was recorded", size)
		}
	}
}

// FuzzDecode: whatever the fast path accepts, encoding/json accepts and
// decodes to the same event; whatever encoding/json refuses, decode
// refuses.
func FuzzDecode(f *testing.F) {
	sc := bufio.NewScanner(bytes.NewReader(recorded(f)))
	for sc.Scan() {
		f.Add(append([]byte(nil), sc.Bytes()...))
	}
	for _, s := range []string{`{}`, `{"i":0,"p":"c1","p":"c2"}`, `{"t":-0}`, `{"value":"a\"b"}`, `{"value":[{"x":"]"}]}`,
		`{"nodes":[]}`, `{"I":1}`, `{"I":1,"i":2}`, `{"\u0074":1,"t":2}`, `{"i":0} x`, `{"value":1e5}`, `{"value":-}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var d decoder
		var fast, got Event
		took := d.fast(line, &fast)
		err := d.decode(line, &got)
		want, werr := strictDecode(line)
		if (err == nil) != (werr == nil) {
			t.Fatalf("decode err %v, encoding/json's %v", err, werr)
		}
		if took && werr != nil {
			t.Fatalf("fast path took a line encoding/json refuses (%v): %q", werr, line)
		}
		if took && !reflect.DeepEqual(fast, want) {
			t.Fatalf("fast path decoded %q as\n %+v\nencoding/json as\n %+v", line, fast, want)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %q as\n %+v\nencoding/json as\n %+v", line, got, want)
		}
	})
}

// A line is read up to the bound it may have, and no further: a line of
// exactly the bound reads, one byte more is refused with the line, the
// bound and the events before it, whether the line is shorter or longer
// than the reader's buffer.
func TestParseLineBound(t *testing.T) {
	head := `{"i":0,"p":"c1","type":"invoke","f":"add","key":"k","value":0,"t":1}` + "\n"
	line := func(n int) string {
		l := `{"i":1,"p":"c1","type":"info","f":"add","key":"k","t":2,"err":"`
		return l + strings.Repeat("x", n-len(l)-2) + `"}`
	}
	for _, max := range []int{200, readBuffer + readBuffer/2} {
		for _, tc := range []struct {
			n    int
			tail string
			ok   bool
		}{
			{max, "\n", true},
			{max, "\r\n", true},
			{max, "", true},
			{max + 1, "\n", false},
			{max + 1, "", false},
			{3 * max, "\n", false},
		} {
			events, err := parse(strings.NewReader(head+line(tc.n)+tc.tail), "h.jsonl", 0, max)
			var le *LineError
			switch {
			case tc.ok && err != nil:
				t.Errorf("bound %d, line of %d bytes: %v", max, tc.n, err)
			case tc.ok && len(events) != 2:
				t.Errorf("bound %d, line of %d bytes: %d events", max, tc.n, len(events))
			case tc.ok:
			case !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrLineTooLong) || errors.Is(err, ErrTruncated):
				t.Errorf("bound %d, line of %d bytes: err %v, want line 2 too long", max, tc.n, err)
			case !strings.Contains(err.Error(), "h.jsonl:2: ") || !strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes", max)):
				t.Errorf("the message names no file, line or bound: %v", err)
			case len(events) != 1:
				t.Errorf("bound %d: %d events before the long line, want 1", max, len(events))
			}
		}
	}
}

// endless is a history whose second line never ends: it counts what is
// read of it, and nothing is held but what the reader keeps.
type endless struct {
	head string
	read int64
}

func (r *endless) Read(p []byte) (int, error) {
	n := copy(p, r.head)
	r.head = r.head[n:]
	for i := n; i < len(p); i++ {
		p[i] = 'x'
	}
	r.read += int64(len(p))
	return len(p), nil
}

// At the real bound: a line that never ends (a 2 GiB file without a
// newline took 5 GB to refuse) is refused after MaxLine bytes and a
// buffer's worth more at most.
func TestParseEndlessLine(t *testing.T) {
	r := &endless{head: `{"i":0,"p":"c1","type":"invoke","f":"add","key":"k","value":0,"t":1}` + "\n" + `{"i":1,"p":"c1","err":"`}
	events, err := Parse(r, "history.jsonl")
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrLineTooLong) || len(events) != 1 {
		t.Fatalf("%d events, err %v; want 1 event and line 2 too long", len(events), err)
	}
	if r.read > MaxLine+2*readBuffer {
		t.Errorf("read %d bytes of the endless line, more than the bound %d and the buffer", r.read, MaxLine)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("%d bytes", MaxLine)) {
		t.Errorf("the message names no bound: %v", err)
	}
}
