package locks

import "time"

// Etcd is etcd's client mutex (client v3.5) on a 3.4 cluster.
var Etcd = &Kind{
	Name:   "etcd",
	About:  "etcd's client mutex (client v3.5) on a 3.4 cluster",
	Server: "etcd",
	Shape:  Ensemble,
	Fenced: true,
	Belief: "while the lock key's lease is alive as the client knows it: when the lease's grant was sent + the TTL the servers " +
		"answered (Extend: its keep-alive's), on the client's monotonic clock; the lease is not kept alive in the background " +
		"(with lock.session: client, one session per client kept alive in the background: until the release or the session's end)",
	// The lease lives its TTL, rounded up to whole seconds and at least
	// 1.5 election timeouts of 1 s (etcd's shortest lease); only the
	// leader expires leases, checking every 500 ms, and a new leader
	// renews every lease by an election timeout.
	Liveness: Liveness{Round: time.Second, Min: 2 * time.Second, Slack: 1500 * time.Millisecond},
	Adapter:  "etcd",
}
