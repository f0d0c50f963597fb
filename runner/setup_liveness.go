package runner

import (
	"fmt"

	"splitbrain/history"
	"splitbrain/locks"
	"splitbrain/workload"
)

// lockSetup is what the liveness checks need to know of the lock under
// test, recorded as the history's Setup event: the nodes its kind's shape
// needs and how many of them, how soon it frees itself (locks.Liveness
// and the story's TTL), and its retry interval — the servers' slack, and
// for a generated workload the longest wait of a refused client before
// it tries again.
func (r *runner) lockSetup() (history.LockSetup, error) {
	sc := r.sc
	// The scenario's kinds include the user's drivers (--lock-driver).
	k := sc.LockKind()
	if k == nil {
		return history.LockSetup{}, fmt.Errorf("lock kind %q: want one of %s", sc.Lock.Kind, locks.Or(locks.Names()))
	}
	s := history.LockSetup{Kind: k.Name, Nodes: r.nodeNames(), Renewed: k.Liveness.Renewed, AsyncRelease: k.Liveness.AsyncRelease,
		Reconnect: int64(k.Liveness.Reconnect),
		Expiry:    int64(k.Liveness.Expiry(sc.Lock.TTL)), Clients: sc.Clients}
	switch k.Shape {
	case locks.OneDeployment:
		s.Nodes = s.Nodes[:1]
	case locks.Ensemble:
		s.Peers = true
	}
	s.Quorum = len(s.Nodes)/2 + 1
	if k.Liveness.Replicas {
		s.Replicas = sc.ReplicasOf(s.Nodes[0])
	}
	retry := k.Liveness.Slack
	if sc.Workload.Generated() {
		backoff := workload.BackoffMax
		if sc.Workload.Backoff != nil {
			backoff = sc.Workload.Backoff.Max
		}
		retry += backoff
	}
	s.Retry = int64(retry)
	return s, s.Check()
}

// recordLockSetup records the lock's setup at the head of the history.
func (r *runner) recordLockSetup() error {
	s, err := r.lockSetup()
	if err != nil {
		return fmt.Errorf("the lock's setup: %w", err)
	}
	r.rec.Record(history.Event{Process: history.ProcessHarness, Type: history.Info, F: history.Setup, Value: history.MustValue(s)})
	return nil
}
