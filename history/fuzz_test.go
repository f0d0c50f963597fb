package history_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"splitbrain/history"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte(l0 + "\n"))
	f.Add([]byte(l0 + "\n" + l1 + "\n" + l2 + "\n" + l3 + "\n"))
	f.Add([]byte(l0 + "\n" + l1 + "\n" + l2 + "\n" + l3))
	f.Add([]byte(l0 + "\n" + l1 + "\n" + l2 + "\n" + `{"i":3,"p":`))
	f.Add([]byte(l0 + "\n\n" + l1 + "\n"))
	f.Add([]byte(`{"i":0,"p":"c1","type":"ok","f":"read","t":5,"token":3,"value":[1,{"a":null}],"err":"x"}` + "\n"))
	f.Add([]byte("\x00\xff garbage {{{\n]]"))
	f.Add([]byte(`{"i":0,"p":"c1","type":"invoke","f":"acquire","t":-1}` + "\r\n"))
	f.Add([]byte(`{"i":0,"p":"c1.2","type":"ok","f":"write","t":1,"lease":"v","deadline":4,"nodes":[]}` + "\n"))
	f.Add([]byte(`{"i":0,"p":"c1<b>","type":"ok","f":"write","t":1}` + "\n"))
	f.Add([]byte(`{"i":0,"p":"c1","type":"invoke","f":"acquire","key":"k","t":1,"ttl":2000000000}` + "\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := history.Parse(bytes.NewReader(data), "fuzz")
		for i, e := range events {
			if e.Index != int64(i) {
				t.Fatalf("event %d has index %d (err %v)", i, e.Index, err)
			}
			if i > 0 && e.Time < events[i-1].Time {
				t.Fatalf("event %d: time %d before %d", i, e.Time, events[i-1].Time)
			}
			if !history.ValidProcess(e.Process) || !e.Type.Valid() || !e.F.Valid() {
				t.Fatalf("event %d passed validation: %+v", i, e)
			}
		}
		if err != nil {
			var le *history.LineError
			if !errors.As(err, &le) || le.Name != "fuzz" || le.Line < 1 {
				t.Fatalf("error %v is not a located *LineError", err)
			}
			if le.Line != len(events)+1 {
				// Every line before the bad one held an event (a blank
				// line in the middle is itself the error).
				t.Fatalf("error at line %d after %d events: %v", le.Line, len(events), err)
			}
			return
		}

		// Re-encode and parse again: the same events.
		var buf bytes.Buffer
		for _, e := range events {
			b, merr := json.Marshal(e)
			if merr != nil {
				t.Fatalf("cannot re-encode event %d: %v", e.Index, merr)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		again, err := history.Parse(&buf, "again")
		if err != nil {
			t.Fatalf("re-encoded history does not parse: %v\n%s", err, buf.Bytes())
		}
		if len(again) != len(events) {
			t.Fatalf("%d events after re-encoding, want %d", len(again), len(events))
		}
		for i := range events {
			if !sameEvent(events[i], again[i]) {
				t.Fatalf("event %d changed:\n first  %+v\n second %+v", i, events[i], again[i])
			}
		}
	})
}

// sameEvent compares two events, taking values as JSON (re-encoding may
// compact whitespace or escape HTML characters in a raw value) and an empty
// node list as none.
func sameEvent(a, b history.Event) bool {
	va, vb := a.Value, b.Value
	a.Value, b.Value = nil, nil
	if len(a.Nodes) == 0 {
		a.Nodes = nil
	}
	if len(b.Nodes) == 0 {
		b.Nodes = nil
	}
	return reflect.DeepEqual(a, b) && jsonEqual(va, vb)
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	da, erra := decodeAny(a)
	db, errb := decodeAny(b)
	return erra == nil && errb == nil && reflect.DeepEqual(da, db)
}

func decodeAny(m json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(m))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
