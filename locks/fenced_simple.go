package locks

// FencedSimple is our Redlock with simple fencing tokens.
var FencedSimple = &Kind{
	Name:     "fenced-simple",
	About:    "ours with simple fencing tokens",
	Server:   "redis",
	Shape:    Masters,
	Fenced:   true,
	Belief:   deadlineBelief,
	Liveness: goRedis,
	Adapter:  "redlock",
	Redlock:  RedlockOptions{Fencing: FenceSimple},
	// Over one Sentinel-managed master (N=1), through a failover client
	// (sentinelOverOne).
	Sentinel: sentinelOverOne,
}
