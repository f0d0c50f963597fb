package locks

import "time"

// EtcdV3Lock is etcd 3.4's server-side Lock RPC.
var EtcdV3Lock = &Kind{
	Name:   "etcd-v3lock",
	About:  "etcd 3.4's server-side Lock RPC",
	Server: "etcd",
	Shape:  Ensemble,
	Fenced: true,
	Belief: "while the lease passed to the Lock RPC is alive as the client knows it: when its grant was sent + its TTL, " +
		"on the client's monotonic clock — the 3.4 server may hand back a lock whose lease expired while it waited, " +
		"a belief already over when it begins",
	// The lease lives its TTL, rounded up to whole seconds and at least
	// 1.5 election timeouts of 1 s (etcd's shortest lease); only the
	// leader expires leases, checking every 500 ms, and a new leader
	// renews every lease by an election timeout.
	Liveness: Liveness{Round: time.Second, Min: 2 * time.Second, Slack: 1500 * time.Millisecond},
	Adapter:  "etcd-v3lock",
}
