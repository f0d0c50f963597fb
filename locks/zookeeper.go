package locks

import "time"

// ZooKeeper is ZooKeeper's lock recipe on a 3.8 ensemble.
var ZooKeeper = &Kind{
	Name:   "zookeeper",
	About:  "ZooKeeper's lock recipe on a 3.8 ensemble",
	Server: "zookeeper",
	Shape:  Ensemble,
	Fenced: true,
	Belief: "until the session may have expired: when the acquire's last request (the read of the lock znode's zxid) was sent + " +
		"the session timeout, on the client's monotonic clock — the servers expire a session only after a whole timeout without a " +
		"word from it, and the client hears of the expiry only from a session event, late when it is cut off",
	// go-zookeeper sleeps a second each time it has tried every server
	// in vain.
	Liveness: zooKeeperSessions(time.Second),
	Adapter:  "zookeeper",
}

// zooKeeperSessions is the liveness of a lock held by a ZooKeeper
// session, whichever client library holds it: the session's pings keep
// the znode alive while the client runs (renewed in the background). Its
// timeout is the TTL within the servers' bounds (at most 200 ticks of
// 100 ms: cluster.ZooKeeperMaxSession); the servers expire a session at
// the tick after its timeout, and a new leader times every session again
// from its election, which the followers begin after a sync limit (10
// ticks) without the old leader. reconnect is the library's own.
func zooKeeperSessions(reconnect time.Duration) Liveness {
	return Liveness{Renewed: true, Max: 20 * time.Second, Slack: 1200 * time.Millisecond, Reconnect: reconnect}
}
