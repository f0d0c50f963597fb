package locks

// Redsync is go-redsync/redsync v4, the Go Redlock most users run.
var Redsync = &Kind{
	Name:     "redsync",
	About:    "go-redsync/redsync v4",
	Server:   "redis",
	Shape:    Masters,
	Belief:   "at redsync's Until(): start of the acquire + expiry − elapsed − drift (1%), on the client's monotonic clock",
	Liveness: goRedis,
	Adapter:  "redsync",
	// Over one Sentinel-managed master (N=1), through a failover client
	// (sentinelOverOne).
	Sentinel: sentinelOverOne,
}
