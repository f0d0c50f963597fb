// Package driver runs a lock under test as a child process — a "lock
// driver", in any language — and speaks to it in JSON lines on its stdin
// and stdout (docs/driver-protocol.md). Lock adapts one driver process to
// workload.Lock; each client of a run gets its own process, which the
// harness can pause for real with SIGSTOP/SIGCONT.
package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Version is the protocol version the harness speaks; hello carries it.
const Version = 1

// Operations the harness sends.
const (
	OpHello   = "hello"
	OpAcquire = "acquire"
	OpRelease = "release"
	OpExtend  = "extend"
	OpGo      = "go"
)

// Messages the driver sends.
const (
	OpReady = "ready"
	OpReply = "reply"
	OpPoint = "point"
)

// Results of a reply.
const (
	ResultOK      = "ok"
	ResultFail    = "fail"
	ResultUnknown = "unknown"
)

// Node is a server the driver's lock uses, as the driver reaches it.
type Node struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// Request is one line the harness writes to the driver.
type Request struct {
	Op string `json:"op"`
	ID int64  `json:"id,omitempty"`
	// hello
	Protocol      int     `json:"protocol,omitempty"`
	Client        string  `json:"client,omitempty"`
	Nodes         []Node  `json:"nodes,omitempty"`
	Password      string  `json:"password,omitempty"`
	NodeTimeoutMS float64 `json:"node_timeout_ms,omitempty"`
	Retries       int     `json:"retries,omitempty"`
	// acquire, release, extend
	Key   string  `json:"key,omitempty"`
	TTLMS float64 `json:"ttl_ms,omitempty"`
	Value string  `json:"value,omitempty"`
	// go
	Point string `json:"point,omitempty"`
}

// Message is one line the driver writes: ready (to hello), a point it
// waits at, or the reply to a request.
type Message struct {
	Op string `json:"op"`
	ID int64  `json:"id,omitempty"`
	// ready
	Name   string   `json:"name,omitempty"`
	Points []string `json:"points,omitempty"`
	// point
	Point string `json:"point,omitempty"`
	// reply
	Result string `json:"result,omitempty"`
	Value  string `json:"value,omitempty"`
	// ValidityMS is the lease's remaining validity when the reply was
	// written, in milliseconds; absent on an ok: the lock tells its user
	// no deadline, and the belief lasts until the release.
	ValidityMS *float64 `json:"validity_ms,omitempty"`
	Token      *int64   `json:"token,omitempty"`
	Detail     string   `json:"detail,omitempty"`
}

// MaxLine bounds one line from a driver; a longer one is garbage.
const MaxLine = 64 << 10

// ParseMessage reads one line from a driver. The error says what is wrong
// with it in words; the caller quotes the line.
func ParseMessage(line []byte) (Message, error) {
	var m Message
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("not a JSON object of the protocol: %v", err)
	}
	if dec.More() {
		return m, fmt.Errorf("more than one JSON value on the line")
	}
	switch m.Op {
	case OpReady:
		// The name and the points reach the terminal, the reports and the
		// matrix: text a terminal would act on (escape sequences) or a
		// name too long to read is refused.
		if err := checkLabel("name", m.Name); err != nil {
			return m, err
		}
		for _, p := range m.Points {
			if err := checkLabel("points", p); err != nil {
				return m, err
			}
		}
	case OpPoint:
		if m.ID <= 0 || m.Point == "" {
			return m, fmt.Errorf(`a point needs "id" (the request it is part of) and "point" (its name)`)
		}
		if err := checkLabel("point", m.Point); err != nil {
			return m, err
		}
	case OpReply:
		if m.ID <= 0 {
			return m, fmt.Errorf(`a reply needs "id", the request's`)
		}
		switch m.Result {
		case ResultOK, ResultFail, ResultUnknown:
		default:
			return m, fmt.Errorf(`"result" %q; want ok, fail or unknown`, m.Result)
		}
	case "":
		return m, fmt.Errorf(`no "op"; want ready, point or reply`)
	default:
		return m, fmt.Errorf(`"op" %q; want ready, point or reply`, m.Op)
	}
	return m, nil
}

// maxLabel bounds a name or point a driver gives.
const maxLabel = 100

// checkLabel refuses a name or point with a control character (an escape
// sequence among them) or longer than maxLabel.
func checkLabel(field, s string) error {
	if len(s) > maxLabel {
		return fmt.Errorf("%q is %d bytes long; want at most %d", field, len(s), maxLabel)
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' {
			return fmt.Errorf("%q %s holds a control or unprintable character; want printable text", field, Quote([]byte(s)))
		}
	}
	return nil
}

// Validity is the reply's validity as a duration.
func (m Message) Validity() (time.Duration, bool) {
	if m.ValidityMS == nil {
		return 0, false
	}
	return time.Duration(*m.ValidityMS * float64(time.Millisecond)), true
}

// Quote shows a line from a driver in an error: quoted, control characters
// escaped, cut to a readable length.
func Quote(line []byte) string {
	const max = 200
	s := string(line)
	cut := ""
	if len(s) > max {
		s, cut = s[:max], fmt.Sprintf("… (%d bytes in all)", len(line))
	}
	return fmt.Sprintf("%q%s", strings.ToValidUTF8(s, "\uFFFD"), cut)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
