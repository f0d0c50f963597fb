// Package history holds the operation and fault events of one run and reads
// and writes them as JSON Lines.
//
// Times are nanoseconds since the run started, taken from one monotonic clock
// in the harness process (time.Since(base)). Wall clocks are never used: the
// nemesis moves them.
package history

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Type is the kind of an event, as in Jepsen.
type Type string

const (
	// Invoke starts an operation.
	Invoke Type = "invoke"
	// OK completes an operation that took effect.
	OK Type = "ok"
	// Fail completes an operation that certainly did not take effect.
	Fail Type = "fail"
	// Info completes an operation whose outcome is unknown (timeout,
	// connection error). The client continues under a new process id.
	// Nemesis events are info too: a fault is not an operation on the system.
	Info Type = "info"
)

// Valid reports whether t is one of the four types.
func (t Type) Valid() bool {
	switch t {
	case Invoke, OK, Fail, Info:
		return true
	}
	return false
}

// Func is the function an event applies.
type Func string

const (
	Acquire  Func = "acquire"
	Release  Func = "release"
	Extend   Func = "extend"
	Read     Func = "read"
	Write    Func = "write"
	Transfer Func = "transfer"
	Add      Func = "add"
	Nemesis  Func = "nemesis"
	// End is the last event of a run that finished cleaning up (faults
	// healed, nodes stopped), by ProcessHarness. A history without it was
	// cut short by a crash; an End with Err set records why the run stopped
	// early (Ctrl-C, a harness failure). Either way the history is a prefix
	// of the run, and a prefix without a violation proves nothing.
	End Func = "end"
	// Setup is the harness's account of the lock under test, by
	// ProcessHarness before the first operation: the nodes it needs and
	// how soon it frees itself (LockSetup), which the liveness checks
	// read. Like End, it is no operation.
	Setup Func = "setup"
	// Stall is the harness standing still, by ProcessHarness: the moment
	// it ran again after a gap in which none of its goroutines ran
	// (StallValue), starved of the CPU or stopped. Its in-process clients,
	// their timers and the nemesis stood still with it. By a client's
	// name: that client's lock driver, a process of its own, stood still
	// (starved of the CPU, the kernel's count of its waiting), the client
	// with it. Like End, it is no operation, and it is no fault the
	// scenario scripted.
	Stall Func = "stall"
)

var funcs = map[Func]bool{Acquire: true, Release: true, Extend: true, Read: true,
	Write: true, Transfer: true, Add: true, Nemesis: true, End: true, Setup: true, Stall: true}

// Harness reports whether e is one of the harness's own events (End,
// Setup, Stall): no operation and no fault.
func (e *Event) Harness() bool { return e.F == End || e.F == Setup || e.F == Stall }

// Valid reports whether f is a known function.
func (f Func) Valid() bool { return funcs[f] }

// ProcessNemesis is the process of every fault event.
const ProcessNemesis = "nemesis"

// ProcessHarness is the process of the End, Setup and Stall events.
const ProcessHarness = "harness"

// Event is one line of a history.
type Event struct {
	Index   int64  `json:"i"`
	Process string `json:"p"`
	Type    Type   `json:"type"`
	F       Func   `json:"f"`
	Key     string `json:"key,omitempty"`
	// Value is the operation's argument or result: the lock value for
	// acquire/release, a Fault for nemesis events, and for operations on
	// the protected resource the values described in values.go.
	Value json.RawMessage `json:"value,omitempty"`
	// Time is nanoseconds since the run started (harness monotonic clock).
	Time int64 `json:"t"`
	// Token is the fencing token of a fenced acquire or write.
	Token *int64 `json:"token,omitempty"`
	// Lease is, on an operation on the protected resource, the value of the
	// lease the client believed it held when it invoked the operation
	// (empty: it held none). It ties each read and write to one lease
	// exactly, where the process alone cannot (a client that re-acquires,
	// or writes after its release).
	Lease string `json:"lease,omitempty"`
	// Deadline is the validity deadline of a granted lease, in the same
	// time base as Time.
	Deadline *int64 `json:"deadline,omitempty"`
	// TTL is, on the invoke of an acquire or extend, the time to live the
	// client asked for, in nanoseconds (0: not recorded). The validity a
	// lock can grant is bounded by it, so the checker can tell a deadline
	// that no lock could have given from one that a fault made wrong.
	TTL int64 `json:"ttl,omitempty"`
	// Nodes are the nodes that granted an acquire (or that a release
	// reached), by name; on a refused acquire, those where its key may
	// remain until it expires (its rollback got no answer there).
	Nodes []string `json:"nodes,omitempty"`
	Err   string   `json:"err,omitempty"`
	// Fencing is, on the invoke of the harness's initial write of a
	// resource, whether the storage rejects writes with stale tokens.
	// Tokens reach the storage with every write of a lock that hands them
	// out, checked or not: only a storage that checks them is guarded by
	// them.
	Fencing bool `json:"fencing,omitempty"`
}

// Fault phases: a fault starts and later stops (is healed).
const (
	PhaseStart = "start"
	PhaseStop  = "stop"
)

// Link is one directed client↔node connection the network nemesis can cut.
type Link struct {
	Client string `json:"client"`
	Node   string `json:"node"`
}

func (l Link) String() string { return l.Client + "→" + l.Node }

// FormatLinks groups links by client so a cut of many links reads as one
// entry per client with the nodes it reaches: with arrow "→" and sep " ",
// "c1→n4,n5 c2→n1"; with " ✂ " and "; ", "c1 ✂ n4,n5; c2 ✂ n1". Clients
// are sorted, nodes keep the order they come in. Reports label faults
// with it and the nemesis writes fault details with it.
func FormatLinks(links []Link, arrow, sep string) string {
	byClient := map[string][]string{}
	var clients []string
	for _, l := range links {
		if _, ok := byClient[l.Client]; !ok {
			clients = append(clients, l.Client)
		}
		byClient[l.Client] = append(byClient[l.Client], l.Node)
	}
	sort.Strings(clients)
	parts := make([]string, len(clients))
	for i, c := range clients {
		parts[i] = c + arrow + strings.Join(byClient[c], ",")
	}
	return strings.Join(parts, sep)
}

// Fault is the value of a nemesis event.
type Fault struct {
	// ID pairs a fault's start with its stop.
	ID int `json:"id"`
	// Kind names the fault: "cut", "clock-jump", "kill", ...
	Kind  string `json:"kind"`
	Phase string `json:"phase"`
	// Nodes the fault acts on (clock, kill, pause).
	Nodes []string `json:"nodes,omitempty"`
	// Links the fault cuts (network).
	Links []Link `json:"links,omitempty"`
	// Offset is a node clock offset in nanoseconds (clock faults).
	Offset int64 `json:"offset,omitempty"`
	// Rate is a clock-rate fault's rate, a factor of real time (1.05: the
	// node's clock gains 50 ms a second); its offset grows from the
	// fault's start and steps back at its end.
	Rate float64 `json:"rate,omitempty"`
	// Detail is a human description of the fault, shown in reports.
	Detail string `json:"detail,omitempty"`
	// Point is the hook point a client-pause-held fault stopped its
	// client at (after-acquire, ...); empty for a stop anywhere.
	Point string `json:"point,omitempty"`
	// Began is when the nemesis began to inject the fault (0: not
	// recorded). The start event is written once the fault
	// is in place, but it acts from its first instant: a node killed
	// fails the requests in flight before the event says so.
	Began int64 `json:"began,omitempty"`
}

// Fault decodes the Fault carried by a nemesis event.
func (e Event) Fault() (Fault, error) {
	var f Fault
	if e.F != Nemesis {
		return f, fmt.Errorf("event %d is %s, not a nemesis event", e.Index, e.F)
	}
	if err := json.Unmarshal(e.Value, &f); err != nil {
		return f, fmt.Errorf("event %d: fault value: %w", e.Index, err)
	}
	return f, nil
}

// StringValue decodes a value that is a JSON string (a lock value), or
// returns "" for any other value.
func (e Event) StringValue() string {
	// A lock value needs no unquoting: decoded without the JSON decoder,
	// whose reflection and garbage were a large part of the checkers' time
	// on a long history (they ask for the value of every acquire, extend
	// and release). plainString takes only what json.Unmarshal decodes to
	// the same bytes.
	if s, end, ok := plainString(e.Value, 0); ok && end == len(e.Value) {
		return string(s)
	}
	var s string
	if json.Unmarshal(e.Value, &s) != nil {
		return ""
	}
	return s
}

// MustValue encodes v as an event value. It is for values whose encoding
// cannot fail (strings, numbers, Fault); anything else is a programming error.
func MustValue(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("history: cannot encode value %T: %v", v, err))
	}
	return b
}

// Unfinished says why a history is only a prefix of its run, or "" when it
// ends with the End event of a run that finished: a crashed harness leaves
// no End event, an interrupted one an End event carrying the reason.
func Unfinished(events []Event) string {
	if len(events) == 0 {
		return "the history is empty"
	}
	last := events[len(events)-1]
	switch {
	case last.F != End:
		return "the history has no end-of-run event: the harness stopped before it finished (a crash or SIGKILL)"
	case last.Err != "":
		return last.Err
	}
	return ""
}

// processRule says what ValidProcess accepts, for messages.
const processRule = `want a client name of lower-case letters, digits and dashes (such as c1), ` +
	`nemesis, harness, init or final, optionally followed by .N for a client that ` +
	`continued after an operation of unknown outcome (such as c1.2); at most 64 characters`

// ValidProcess reports whether p is a process name the harness writes: a
// client (the scenario's c1, c2, ...; the workload's init and final; in
// general lower-case letters, digits and dashes, as scenario names are),
// nemesis or harness, each optionally followed by ".N", the numbered
// process a client continues as after an operation of unknown outcome
// (c1.2). Names end up in terminals and pages; nothing else is let in.
func ValidProcess(p string) bool {
	if len(p) == 0 || len(p) > 64 {
		return false
	}
	base, cont, dotted := strings.Cut(p, ".")
	if dotted {
		if cont == "" || (cont[0] == '0' && len(cont) > 1) {
			return false
		}
		for i := 0; i < len(cont); i++ {
			if cont[i] < '0' || cont[i] > '9' {
				return false
			}
		}
	}
	if base == "" || base[0] == '-' {
		return false
	}
	for i := 0; i < len(base); i++ {
		c := base[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ClientOf is the client a process belongs to: c1 for c1 and for c1.2,
// the process c1 continues as after an operation of unknown outcome.
func ClientOf(process string) string {
	base, _, _ := strings.Cut(process, ".")
	return base
}

// quoteShort quotes s for a message (escaping whatever a terminal would
// act on), cut to a readable length.
func quoteShort(s string) string {
	const max = 40
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}
