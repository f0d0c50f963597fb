package locks

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
	Adapter: "zookeeper",
}
