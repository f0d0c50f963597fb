package locks

// deadlineBelief is the belief of our lock and its variants that check
// the elapsed time.
const deadlineBelief = "at the validity deadline: start of the acquire + TTL − elapsed − drift (1% + 2ms), on the client's monotonic clock"

// Redlock is our Redlock (package redlock) over every node.
var Redlock = &Kind{
	Name:     "redlock",
	About:    "our Redlock over every node",
	Server:   "redis",
	Shape:    Masters,
	Belief:   deadlineBelief,
	Liveness: goRedis,
	Adapter:  "redlock",
	// Over one Sentinel-managed master (N=1), through a failover client
	// (sentinelOverOne).
	Sentinel: sentinelOverOne,
}
