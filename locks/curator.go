package locks

import "time"

// Curator is Apache Curator's InterProcessMutex (Java, Debian's
// libcurator-recipes-java on libzookeeper-java), a built-in driver, on a
// ZooKeeper 3.8 ensemble: the lock Kleppmann recommends in place of
// Redlock ("ZooKeeper, probably via one of the Curator recipes").
var Curator = &Kind{
	Name:   "curator",
	About:  "Apache Curator's InterProcessMutex (Java), a built-in driver, on a ZooKeeper 3.8 ensemble",
	Server: "zookeeper",
	Shape:  Ensemble,
	// The lock znode's czxid, read once the lock is ours (not its
	// version, 0 for every holder: a lock znode is never written); Curator
	// hands out none itself (driver/builtin/CuratorDriver.java).
	Fenced: true,
	Belief: "until the release: acquire() returns true and nothing about time, and InterProcessMutex does not follow the session " +
		"(Curator's documentation asks the user to watch the connection's state, which the mutex itself does not)",
	Driver:     true,
	PauseStops: true,
	// ZooKeeper's Java client tries the servers in turn, sleeping up to a
	// second between them.
	Liveness:   zooKeeperSessions(time.Second),
	Adapter:    "driver",
	Unreported: []string{"release"},
}
