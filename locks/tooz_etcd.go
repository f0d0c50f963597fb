package locks

import "time"

// ToozEtcd is tooz's etcd lock (Python, OpenStack's coordination library,
// Debian's python3-tooz; its etcd3gw driver, over etcd's gRPC gateway), a
// built-in driver, on an etcd 3.4 cluster, reached at n1 (tooz's URL names
// one endpoint).
var ToozEtcd = &Kind{
	Name:   "tooz-etcd",
	About:  "tooz's etcd lock (Python, OpenStack's coordination library, etcd3gw driver), a built-in driver, on an etcd 3.4 cluster through n1",
	Server: "etcd",
	Shape:  Ensemble,
	// The lock key's create_revision, read once the lock is ours
	// (driver/builtin/tooz_etcd.py): tooz hands out none itself.
	Fenced: true,
	Belief: "until the release: tooz's acquire() returns True and nothing about time, and the lock stays acquired in tooz's eyes " +
		"when its heartbeat finds the lease expired (etcd's TTL -1 is not looked at)",
	Driver: true,
	// The heartbeat thread keeps the lease alive: a GC pause stops it
	// with the rest, a hold at a point would not.
	PauseStops: true,
	// tooz reads lock_timeout with int().
	WholeSeconds: true,
	// The lease lives lock_timeout (whole seconds, etcd's shortest lease
	// at the least: 1.5 election timeouts of 1 s), refreshed every half
	// of it by the heartbeat thread while the client runs and reaches
	// n1; only the leader expires leases, every 500 ms, and a new leader
	// renews every lease by an election timeout (Etcd's slack). A request
	// after a cut takes a new connection at once (requests' pool).
	Liveness: Liveness{Renewed: true, Round: time.Second, Min: 2 * time.Second, Slack: 1500 * time.Millisecond},
	Adapter:  "driver",
}
