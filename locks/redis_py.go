package locks

// RedisPy is redis-py's redis.lock.Lock, a built-in driver, on n1.
var RedisPy = &Kind{
	Name:   "redis-py",
	About:  "redis-py's redis.lock.Lock, a built-in driver, on n1 (or the master its Sentinel client finds)",
	Server: "redis",
	Shape:  OneDeployment,
	Belief: "when acquire() returned + TTL, on the driver's monotonic clock, converted to the harness's at the reply: " +
		"redis-py's Lock returns True and no deadline and does not check how much of the TTL the acquire used (extend: from its return)",
	Driver: true,
	// redis-py's Sentinel client, its master's address routed through the
	// client's proxy (driver/builtin/redis_py.py).
	Sentinel: true,
	Adapter:  "driver",
}
