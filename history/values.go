package history

import (
	"encoding/json"
	"fmt"
)

// Operations on the protected resource (a storage node outside the lock
// quorum) use the lock's key as their key: the lock named k guards the
// resource named k. Their values:
//
//	process "init", write invoke: the resource's initial state — a number
//	    (counter), Balances (bank) or a list of numbers (set)
//	read ok: a number (counter), Balances (bank) or SetRead (set)
//	write invoke: the number written (counter)
//	transfer invoke: TransferValue (bank)
//	add invoke: the element added (set)
//	write, transfer or add completion: Ack
//	process "final": reads after every fault was healed
//
// A write, transfer or add carries the lease's fencing token in Token. Its
// completion is ok when the storage applied it, fail when the storage
// rejected it (fencing: a token below the highest it had accepted) and info
// when the outcome is unknown.

// Processes of the harness's own resource operations.
const (
	ProcessInit  = "init"
	ProcessFinal = "final"
)

// Balances maps bank accounts to balances, exact decimals written as
// strings ("12.50").
type Balances map[string]string

// TransferValue is a bank transfer: Amount moves From → To. Balances are the
// absolute new balances of From and To that the client writes, computed from
// the balances it read under the lock.
type TransferValue struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Amount   string   `json:"amount"`
	Balances Balances `json:"balances"`
}

// SetRead is the value of a set read. Reads inside a critical section record
// only the size, so a history stays linear in the run's length; final reads
// record the elements too.
type SetRead struct {
	Size     int     `json:"size"`
	Elements []int64 `json:"elements,omitempty"`
}

// Ack is the value of a completed write, transfer or add. Seq is the
// storage's count of writes it applied to the key, this one included (ok
// only): it orders the applied writes exactly. Highest is the token a
// rejected write's token was below (fail only).
type Ack struct {
	Seq     int64  `json:"seq,omitempty"`
	Highest *int64 `json:"highest,omitempty"`
}

// Decode decodes the event's value into v.
func (e Event) Decode(v any) error {
	if len(e.Value) == 0 {
		return fmt.Errorf("event %d (%s %s by %s) has no value", e.Index, e.F, e.Type, e.Process)
	}
	if err := json.Unmarshal(e.Value, v); err != nil {
		return fmt.Errorf("event %d (%s %s by %s): value %s: %w", e.Index, e.F, e.Type, e.Process, e.Value, err)
	}
	return nil
}

// StallValue is the value of a Stall event: the harness (or the event's
// client's driver) ran again at the event's Time after standing still for
// For nanoseconds.
type StallValue struct {
	For int64 `json:"for"`
}

// Stood is how long a Stall event says the harness stood still, in
// nanoseconds; an error for another event, or a stall without a length
// (none, or none above zero), which says so.
func (e Event) Stood() (int64, error) {
	if e.F != Stall {
		return 0, fmt.Errorf("event %d is %s, not a stall", e.Index, e.F)
	}
	var v StallValue
	if err := e.Decode(&v); err != nil {
		return 0, fmt.Errorf("event %d: a stall without its length: %w", e.Index, err)
	}
	if v.For <= 0 {
		return 0, fmt.Errorf("event %d: a stall without its length (for %d ns)", e.Index, v.For)
	}
	return v.For, nil
}
