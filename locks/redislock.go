package locks

// Redislock is bsm/redislock v0.9, on n1.
var Redislock = &Kind{
	Name:   "redislock",
	About:  "bsm/redislock v0.9, on n1",
	Server: "redis",
	Shape:  OneDeployment,
	Belief: "when Obtain returned + TTL, on the client's monotonic clock: redislock returns no deadline and does not " +
		"check how much of the TTL the obtain used, so its user counts the TTL from the grant (Refresh: from its return)",
	Sentinel: true,
	Liveness: goRedis,
	Adapter:  "redislock",
}
