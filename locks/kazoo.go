package locks

import "time"

// Kazoo is kazoo's Lock (Python, Debian's python3-kazoo), a built-in
// driver, on a ZooKeeper 3.8 ensemble.
var Kazoo = &Kind{
	Name:   "kazoo",
	About:  "kazoo's Lock (Python), a built-in driver, on a ZooKeeper 3.8 ensemble",
	Server: "zookeeper",
	Shape:  Ensemble,
	// The lock znode's czxid, read once the lock is ours
	// (driver/builtin/kazoo_lock.py): kazoo hands out none itself.
	Fenced: true,
	Belief: "until the release: kazoo's acquire() returns True and nothing about time, and Lock does not follow the session " +
		"(its documentation asks the user to watch the connection's state, which Lock itself does not)",
	Driver:     true,
	PauseStops: true,
	// kazoo tries the next server at once when its server goes; only
	// after a round of every server in vain does it sleep, 0.1 s doubling
	// (with jitter): cut off from all of them for the 5-6 s of our
	// stories, its next round is up to about 3 s away, which the bound
	// (the session, the servers' slack and this second) still covers.
	Liveness:   zooKeeperSessions(time.Second),
	Adapter:    "driver",
	Unreported: []string{"release"},
}
