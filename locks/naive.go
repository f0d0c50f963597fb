package locks

// Naive is our Redlock without the elapsed-time check.
var Naive = &Kind{
	Name:   "naive",
	About:  "ours without the elapsed-time check",
	Server: "redis",
	Shape:  Masters,
	Belief: "at the validity deadline as redlock computes it (start + TTL − elapsed − drift), but the lease is handed back " +
		"unchecked, so a slow or paused acquire returns one whose deadline has already passed",
	Liveness: goRedis,
	Adapter:  "redlock",
	Redlock:  RedlockOptions{SkipElapsedCheck: true},
	// Over one Sentinel-managed master (N=1), through a failover client
	// (sentinelOverOne).
	Sentinel: sentinelOverOne,
}
