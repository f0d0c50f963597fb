package locks

// FencedTwoRound is our Redlock with two-round fencing tokens.
var FencedTwoRound = &Kind{
	Name:     "fenced-two-round",
	About:    "ours with two-round fencing tokens",
	Server:   "redis",
	Shape:    Masters,
	Fenced:   true,
	Belief:   deadlineBelief,
	Liveness: goRedis,
	Adapter:  "redlock",
	Redlock:  RedlockOptions{Fencing: FenceTwoRound},
	// Over one Sentinel-managed master (N=1), through a failover client
	// (sentinelOverOne).
	Sentinel: sentinelOverOne,
}
