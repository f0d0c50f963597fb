package locks

// RedisPy is redis-py's redis.lock.Lock, a built-in driver, on n1.
var RedisPy = &Kind{
	Name:   "redis-py",
	About:  "redis-py's redis.lock.Lock, a built-in driver, on n1",
	Server: "redis",
	Shape:  OneDeployment,
	Belief: "when acquire() returned + TTL, on the driver's monotonic clock, converted to the harness's at the reply: " +
		"redis-py's Lock returns True and no deadline and does not check how much of the TTL the acquire used (extend: from its return)",
	Driver:  true,
	Adapter: "driver",
}
