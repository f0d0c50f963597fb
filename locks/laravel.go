package locks

// Laravel is Laravel's cache lock on Redis (Cache::lock with the redis
// store and phpredis: Illuminate\Cache\PhpRedisLock; PHP, Debian's
// php-illuminate-cache and php-illuminate-redis, built without the
// framework), a built-in driver, on n1.
var Laravel = &Kind{
	Name:   "laravel",
	About:  "Laravel's cache lock on Redis (PHP, phpredis), a built-in driver, on n1",
	Server: "redis",
	Shape:  OneDeployment,
	Belief: "when get() returned + the lock's seconds (the TTL rounded up to whole seconds, one at the least: SET NX EX), " +
		"on the driver's monotonic clock, converted to the harness's at the reply: get() returns true and nothing about time",
	Driver:       true,
	WholeSeconds: true,
	// Laravel's Lock has no call to extend a lock.
	Unsupported: []string{"extend"},
	// Checked in Debian's php-illuminate-redis 8.83: its PhpRedisConnector
	// knows no Sentinel. Laravel reaches Sentinel through Predis
	// (laravel/framework#18850), a client other than this column's, or
	// through a third-party phpredis driver (namoshek/laravel-redis-sentinel).
	NoSentinel: "Laravel 8's phpredis connector has no Sentinel support (Laravel's own is through Predis, another client)",
	Adapter:    "driver",
}
