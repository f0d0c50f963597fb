package history

import (
	"encoding/json"
	"fmt"
)

// LockSetup is the value of the Setup event: what the lock under test
// needs of its servers and how soon it frees itself, as the harness set
// it up. The liveness checks judge the history against it: whether a
// client could reach enough of the nodes (from the faults on them and on
// its links), and within what bound a lock whose holder went silent must
// be free again.
type LockSetup struct {
	// Kind is the lock kind's name.
	Kind string `json:"kind"`
	// Nodes are the nodes the lock needs, of which a client must reach
	// Quorum: every master of a Redlock (a majority), the one master of
	// a single-instance lock, an ensemble's members (a majority).
	Nodes  []string `json:"nodes"`
	Quorum int      `json:"quorum"`
	// Peers: the nodes serve only as a quorum that reaches itself (a
	// consensus ensemble), so a client's majority counts only members
	// whose links to each other hold.
	Peers bool `json:"peers,omitempty"`
	// Replicas must each run and reach the master (Nodes[0]) over its
	// replication link for an acquire to succeed (Redisson's scheme,
	// whose WAIT refuses a lock no replica acknowledged).
	Replicas []string `json:"replicas,omitempty"`
	// Expiry is how long, in nanoseconds, the lock stays taken after its
	// holder's last word: a key's TTL, a session or lease timeout.
	Expiry int64 `json:"expiry"`
	// Renewed: the holder's library keeps the lock alive behind its
	// user's back while it runs and reaches the servers (a watchdog,
	// session pings), so a silent holder's Expiry counts from when it
	// stopped or was cut off, not from its last grant or extension.
	Renewed bool `json:"renewed,omitempty"`
	// Reconnect is, in nanoseconds, how long the lock's client library
	// may take to reach a node again once it can: a client is promised
	// the lock only that long (and Retry) after it could reach the nodes
	// again.
	Reconnect int64 `json:"reconnect,omitempty"`
	// AsyncRelease: a release's ok says that the lock will be freed, not
	// that it is (rueidislock cancels a context, and its keys are deleted
	// in the background): the lock is free a retry interval later.
	AsyncRelease bool `json:"async_release,omitempty"`
	// Clients are the run's clients: a link fault's end that names none
	// of them is a server's (a link between members, a replica's
	// replication link, a sentinel's).
	Clients []string `json:"clients,omitempty"`
	// Retry is, in nanoseconds, the lock's retry interval: how soon a
	// client that tries tries again, plus what its servers take beyond
	// the expiry to free the lock.
	Retry int64 `json:"retry"`
}

// Bound is the bound of deadlock freedom: a client that can reach the
// nodes gets a lock whose holder went silent within Expiry + Retry, and
// once the faults on its way to them have healed within Bound.
func (s LockSetup) Bound() int64 { return s.Expiry + s.Retry + s.Reconnect }

// Check says what is wrong with s, or nil.
func (s LockSetup) Check() error {
	switch {
	case len(s.Nodes) == 0:
		return fmt.Errorf("the lock names no nodes")
	case s.Quorum < 1 || s.Quorum > len(s.Nodes):
		return fmt.Errorf("quorum %d of %d node(s), want 1 to %d", s.Quorum, len(s.Nodes), len(s.Nodes))
	case s.Expiry <= 0:
		return fmt.Errorf("expiry %d ns, want above 0", s.Expiry)
	case s.Retry < 0 || s.Reconnect < 0:
		return fmt.Errorf("retry %d ns, reconnect %d ns: want 0 or above", s.Retry, s.Reconnect)
	}
	return nil
}

// LockSetup decodes the LockSetup carried by a Setup event.
func (e Event) LockSetup() (LockSetup, error) {
	var s LockSetup
	if e.F != Setup {
		return s, fmt.Errorf("event %d is %s, not a setup event", e.Index, e.F)
	}
	if err := json.Unmarshal(e.Value, &s); err != nil {
		return s, fmt.Errorf("event %d: setup value: %w", e.Index, err)
	}
	if err := s.Check(); err != nil {
		return s, fmt.Errorf("event %d: setup: %w", e.Index, err)
	}
	return s, nil
}
