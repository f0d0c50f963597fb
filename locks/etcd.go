package locks

// Etcd is etcd's client mutex (client v3.5) on a 3.4 cluster.
var Etcd = &Kind{
	Name:   "etcd",
	About:  "etcd's client mutex (client v3.5) on a 3.4 cluster",
	Server: "etcd",
	Shape:  Ensemble,
	Fenced: true,
	Belief: "while the lock key's lease is alive as the client knows it: when the lease's grant was sent + the TTL the servers " +
		"answered (Extend: its keep-alive's), on the client's monotonic clock; the lease is not kept alive in the background",
	Adapter: "etcd",
}
