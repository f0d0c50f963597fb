package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decoder turns history lines into events. The workload writes every line
// in one shape (Event's fields, as encoding/json writes them), so the
// common line is decoded by hand here, without reflection and with the
// repeated strings (processes, keys, node names, errors) shared, and the
// values and pointers of many events carved from a few large blocks. Any
// line the fast path is not certain to decode exactly as encoding/json
// would — an unknown or misspelt field, a repeated field, an escape in a
// string, a null, a number that is not a plain integer, anything after the
// object — goes to the strict encoding/json decoder, which decodes it or
// says what is wrong with it; the strict path also refuses a field given
// twice, which encoding/json would take as its last. So the fast path
// changes the speed and nothing else: it never accepts a line that the
// strict path refuses, and what it accepts it decodes to the same event.
type decoder struct {
	interned map[string]string
	// Blocks the decoded events' values, token and deadline pointers and
	// node lists are carved from; each carved slice has its length as
	// its capacity, so an append by a caller copies instead of writing
	// into the next event's part.
	bytes []byte
	ints  []int64
	names []string
	// slow counts the lines that went to encoding/json (for tests).
	slow int
}

const (
	// maxInterned bounds the shared strings: a history whose errors are
	// all different must not grow a map as large as itself.
	maxInterned = 1 << 14
	// maxInternLen: longer strings are rarely repeated.
	maxInternLen = 128
	blockBytes   = 64 << 10
	blockInts    = 4 << 10
	blockNames   = 4 << 10
)

// Fields of Event, as bits, to refuse a field given twice.
const (
	fieldI = 1 << iota
	fieldP
	fieldType
	fieldF
	fieldKey
	fieldValue
	fieldT
	fieldToken
	fieldLease
	fieldDeadline
	fieldTTL
	fieldNodes
	fieldErr
)

// decode decodes one line (without its line end) into e, which is zero
// (the reader's events are fresh: zeroing them again would cost a write
// barrier on each while the collector runs). A non-nil error is what
// encoding/json says is wrong with the line.
func (d *decoder) decode(line []byte, e *Event) error {
	if d.fast(line, e) {
		return nil
	}
	d.slow++
	*e = Event{}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(e); err != nil {
		return err
	}
	// One event per line: a second value after it would be dropped
	// without a word.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errTrailing
	}
	// encoding/json keeps the last of a field given twice: a line that
	// says two things about one event says nothing certain.
	return repeatedField(line)
}

// eventFields are Event's JSON names.
var eventFields = []string{"i", "p", "type", "f", "key", "value", "t", "token", "lease", "deadline", "ttl", "nodes", "err", "fencing"}

// repeatedField says which field a line encoding/json decoded gives twice,
// as encoding/json matches names to fields: exactly, else without regard
// to case (so "t" and "T" are one field). The line is a JSON object of
// Event's fields, each value valid: Decode took it.
func repeatedField(line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil // null: no fields
	}
	seen := make(map[string]string, len(eventFields))
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		field := name
		for _, f := range eventFields {
			if name == f || strings.EqualFold(name, f) {
				field = f
				break
			}
		}
		if first, ok := seen[field]; ok {
			if first == name {
				return fmt.Errorf("field %q is given twice; a line gives each field once", field)
			}
			return fmt.Errorf("field %q is given twice (as %q and %q); a line gives each field once", field, first, name)
		}
		seen[field] = name
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// fast decodes line into e, which is zero, when it is a JSON object of
// Event's own fields, each at most once, written as encoding/json writes
// them; it reports false for anything else, leaving e to be overwritten.
func (d *decoder) fast(b []byte, e *Event) bool {
	p := skipWS(b, 0)
	if p >= len(b) || b[p] != '{' {
		return false
	}
	p = skipWS(b, p+1)
	if p < len(b) && b[p] == '}' {
		return skipWS(b, p+1) == len(b)
	}
	seen := 0
	for {
		if p >= len(b) || b[p] != '"' {
			return false
		}
		kEnd := bytes.IndexByte(b[p+1:], '"')
		if kEnd < 0 {
			return false
		}
		key := b[p+1 : p+1+kEnd]
		p = skipWS(b, p+2+kEnd)
		if p >= len(b) || b[p] != ':' {
			return false
		}
		p = skipWS(b, p+1)
		var bit int
		var ok bool
		switch string(key) {
		case "i":
			bit = fieldI
			e.Index, p, ok = integer(b, p)
		case "p":
			bit = fieldP
			e.Process, p, ok = d.str(b, p, true)
		case "type":
			bit = fieldType
			var s string
			s, p, ok = d.str(b, p, true)
			e.Type = Type(s)
		case "f":
			bit = fieldF
			var s string
			s, p, ok = d.str(b, p, true)
			e.F = Func(s)
		case "key":
			bit = fieldKey
			e.Key, p, ok = d.str(b, p, true)
		case "value":
			bit = fieldValue
			e.Value, p, ok = d.raw(b, p)
		case "t":
			bit = fieldT
			e.Time, p, ok = integer(b, p)
		case "token":
			bit = fieldToken
			e.Token, p, ok = d.intPtr(b, p)
		case "lease":
			bit = fieldLease
			e.Lease, p, ok = d.str(b, p, true)
		case "deadline":
			bit = fieldDeadline
			e.Deadline, p, ok = d.intPtr(b, p)
		case "ttl":
			bit = fieldTTL
			e.TTL, p, ok = integer(b, p)
		case "nodes":
			bit = fieldNodes
			e.Nodes, p, ok = d.stringList(b, p)
		case "err":
			bit = fieldErr
			e.Err, p, ok = d.str(b, p, true)
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		p = skipWS(b, p)
		if p >= len(b) {
			return false
		}
		switch b[p] {
		case ',':
			p = skipWS(b, p+1)
		case '}':
			return skipWS(b, p+1) == len(b)
		default:
			return false
		}
	}
}

func skipWS(b []byte, p int) int {
	for p < len(b) && (b[p] == ' ' || b[p] == '\t' || b[p] == '\r' || b[p] == '\n') {
		p++
	}
	return p
}

// integer reads a JSON integer (no fraction, no exponent) that fits an
// int64.
func integer(b []byte, p int) (int64, int, bool) {
	start := p
	if p < len(b) && b[p] == '-' {
		p++
	}
	digits := p
	for p < len(b) && b[p] >= '0' && b[p] <= '9' {
		p++
	}
	switch {
	case p == digits, b[digits] == '0' && p-digits > 1:
		return 0, 0, false // no digits, or a leading zero: not JSON
	case p < len(b) && (b[p] == '.' || b[p] == 'e' || b[p] == 'E'):
		return 0, 0, false // not an integer: encoding/json says why
	}
	if p-digits <= 18 {
		var n int64
		for _, c := range b[digits:p] {
			n = n*10 + int64(c-'0')
		}
		if digits > start {
			n = -n
		}
		return n, p, true
	}
	n, err := strconv.ParseInt(string(b[start:p]), 10, 64)
	return n, p, err == nil
}

func (d *decoder) intPtr(b []byte, p int) (*int64, int, bool) {
	n, p, ok := integer(b, p)
	if !ok {
		return nil, 0, false
	}
	if len(d.ints) == 0 {
		d.ints = make([]int64, blockInts)
	}
	v := &d.ints[0]
	d.ints = d.ints[1:]
	*v = n
	return v, p, true
}

// plainString finds the end of a JSON string at p that needs no unquoting:
// no escapes, no control characters, valid UTF-8 (encoding/json replaces
// invalid bytes). It returns the contents and the position after the
// closing quote.
func plainString(b []byte, p int) ([]byte, int, bool) {
	if p >= len(b) || b[p] != '"' {
		return nil, 0, false
	}
	ascii := true
	for q := p + 1; q < len(b); q++ {
		switch c := b[q]; {
		case c == '"':
			s := b[p+1 : q]
			if !ascii && !utf8.Valid(s) {
				return nil, 0, false
			}
			return s, q + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, 0, false
}

// str reads a plain JSON string, shared with earlier equal ones when
// intern is set and the string is short.
func (d *decoder) str(b []byte, p int, intern bool) (string, int, bool) {
	s, q, ok := plainString(b, p)
	if !ok {
		// Escapes (json.Marshal writes < > & as \u003c ...) or bytes
		// that need replacing: encoding/json unquotes the string alone.
		end, ok := stringEnd(b, p)
		if !ok || p >= len(b) || b[p] != '"' {
			return "", 0, false
		}
		var v string
		if json.Unmarshal(b[p:end], &v) != nil {
			return "", 0, false
		}
		return v, end, true
	}
	p = q
	if !intern || len(s) > maxInternLen {
		return string(s), p, true
	}
	if v, ok := d.interned[string(s)]; ok {
		return v, p, true
	}
	v := string(s)
	if d.interned == nil {
		d.interned = make(map[string]string)
	}
	if len(d.interned) < maxInterned {
		d.interned[v] = v
	}
	return v, p, true
}

// stringList reads a JSON array of plain strings.
func (d *decoder) stringList(b []byte, p int) ([]string, int, bool) {
	if p >= len(b) || b[p] != '[' {
		return nil, 0, false
	}
	var tmp [16]string
	list := tmp[:0]
	p = skipWS(b, p+1)
	if p < len(b) && b[p] == ']' {
		return d.carveNames(list), p + 1, true
	}
	for {
		s, q, ok := d.str(b, p, true)
		if !ok {
			return nil, 0, false
		}
		list = append(list, s)
		p = skipWS(b, q)
		if p >= len(b) {
			return nil, 0, false
		}
		switch b[p] {
		case ',':
			p = skipWS(b, p+1)
		case ']':
			return d.carveNames(list), p + 1, true
		default:
			return nil, 0, false
		}
	}
}

// carveNames copies list into the current block; an empty list is an
// empty, non-nil slice, as encoding/json decodes [].
func (d *decoder) carveNames(list []string) []string {
	if len(list) > blockNames/8 {
		return append(make([]string, 0, len(list)), list...)
	}
	if len(d.names) < len(list) || d.names == nil {
		d.names = make([]string, blockNames)
	}
	out := d.names[:len(list):len(list)]
	copy(out, list)
	d.names = d.names[len(list):]
	return out
}

// raw reads any JSON value but null (encoding/json hands a RawMessage the
// literal null; the slow path keeps that case) and copies its bytes as
// they are.
func (d *decoder) raw(b []byte, p int) (json.RawMessage, int, bool) {
	if p >= len(b) {
		return nil, 0, false
	}
	var end int
	switch c := b[p]; {
	case c == '"':
		if _, q, ok := plainString(b, p); ok {
			return d.carveBytes(b[p:q]), q, true
		}
		var ok bool
		if end, ok = stringEnd(b, p); !ok {
			return nil, 0, false
		}
	case c == '{' || c == '[':
		var ok bool
		if end, ok = compositeEnd(b, p); !ok {
			return nil, 0, false
		}
	case c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f':
		end = p
		for end < len(b) && b[end] != ',' && b[end] != '}' && b[end] != ' ' && b[end] != '\t' && b[end] != '\r' && b[end] != '\n' {
			end++
		}
	default:
		return nil, 0, false
	}
	if !json.Valid(b[p:end]) {
		return nil, 0, false
	}
	return d.carveBytes(b[p:end]), end, true
}

// stringEnd finds the position after the JSON string starting at p,
// escapes included (their validity is json.Valid's to judge).
func stringEnd(b []byte, p int) (int, bool) {
	for q := p + 1; q < len(b); q++ {
		switch b[q] {
		case '\\':
			q++
		case '"':
			return q + 1, true
		}
	}
	return 0, false
}

// compositeEnd finds the position after the object or array starting at p,
// by counting brackets outside strings.
func compositeEnd(b []byte, p int) (int, bool) {
	depth := 0
	for q := p; q < len(b); q++ {
		switch b[q] {
		case '"':
			end, ok := stringEnd(b, q)
			if !ok {
				return 0, false
			}
			q = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return q + 1, true
			}
		}
	}
	return 0, false
}

func (d *decoder) carveBytes(v []byte) json.RawMessage {
	if len(v) > blockBytes/8 {
		return append(json.RawMessage(nil), v...)
	}
	if len(d.bytes) < len(v) {
		d.bytes = make([]byte, blockBytes)
	}
	out := d.bytes[:len(v):len(v)]
	copy(out, v)
	d.bytes = d.bytes[len(v):]
	return out
}

// errTrailing: a line holds more than the event.
var errTrailing = errors.New("the line goes on after the event's closing brace (one event per line)")
