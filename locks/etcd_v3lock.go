package locks

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
	Adapter: "etcd-v3lock",
}
