package locks

// symfonyBelief is the belief of Symfony's Lock, on either store.
const symfonyBelief = "at Lock::getRemainingLifetime()'s deadline: the start of acquire()'s second phase (putOffExpiration, after save) + TTL, " +
	"on the driver's wall clock (microtime), no drift subtracted, converted to the harness's clock at the reply"

// SymfonyRedis is Symfony's Lock on one RedisStore (PHP, Debian's
// php-symfony-lock on phpredis), a built-in driver, on n1: the store most
// PHP applications use.
var SymfonyRedis = &Kind{
	Name:   "symfony-redis",
	About:  "Symfony's Lock on a RedisStore (PHP, phpredis), a built-in driver, on n1 (or the master the sentinels name)",
	Server: "redis",
	Shape:  OneDeployment,
	Belief: symfonyBelief,
	Driver: true,
	// Each acquire asks the sentinels for the master, as a PHP request
	// connecting anew does (phpredis's RedisSentinel), and connects to
	// its route.
	Sentinel: true,
	// release() runs the store's delete script and ignores its answer.
	Unreported: []string{"release"},
	Adapter:    "driver",
}

// SymfonyRedlock is Symfony's Lock on a CombinedStore of one RedisStore
// per node with the ConsensusStrategy: Symfony's Redlock, written by
// people other than antirez.
var SymfonyRedlock = &Kind{
	Name:       "symfony-redlock",
	About:      "Symfony's Lock on a CombinedStore + ConsensusStrategy over every node (Symfony's Redlock; PHP, phpredis), a built-in driver",
	Server:     "redis",
	Shape:      Masters,
	Belief:     symfonyBelief,
	Driver:     true,
	Unreported: []string{"release"},
	Adapter:    "driver",
}
