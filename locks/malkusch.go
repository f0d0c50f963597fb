package locks

import "time"

// MalkuschRedlock is malkusch/lock's PHPRedisMutex (PHP, Debian's
// php-malkusch-lock on phpredis), a built-in driver: the Redlock the
// Redlock page lists for PHP ("PHPRedisMutex"), over every node.
var MalkuschRedlock = &Kind{
	Name:   "malkusch-redlock",
	About:  "malkusch/lock's PHPRedisMutex over every node (the Redlock page's PHPRedisMutex; PHP, phpredis), a built-in driver",
	Server: "redis",
	Shape:  Masters,
	Belief: "until the start of the granting attempt + the mutex's timeout (the TTL less 1 s), on the driver's wall clock (microtime), " +
		"no drift subtracted: the deadline unlock() checks (ExecutionOutsideLockException); synchronized() runs the user's code " +
		"without looking at it, and an attempt that took longer than the timeout is granted already past it",
	Driver: true,
	// SpinlockMutex names its key "lock_" + the lock's name.
	KeyPrefix: "lock_",
	// SET NX EX timeout + 1, the timeout an int of at least 1: the key
	// lives a whole number of seconds, 2 at the least.
	WholeSeconds: true,
	MinTTL:       2 * time.Second,
	// The mutex has no call to extend a lock.
	Unsupported: []string{"extend"},
	Adapter:     "driver",
}
