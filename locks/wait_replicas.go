package locks

// WaitReplicas is Redisson's RLock scheme: n1, then WAIT for its replicas.
var WaitReplicas = &Kind{
	Name:   "wait-replicas",
	About:  "Redisson's RLock scheme: n1, then WAIT for its replicas",
	Server: "redis",
	Shape:  OneDeployment,
	Belief: "at the release: Redisson's lock() tells its user no deadline, its watchdog renews the key every TTL/3 " +
		"behind the user's back, so the user believes until unlock() whatever became of the key",
	Sentinel: true,
	// The watchdog renews the key every TTL/3 until unlock; WAIT
	// refuses a lock no connected replica acknowledged; go-redis probes a
	// node that was down once a second (goRedis).
	Liveness: Liveness{Renewed: true, Replicas: true, Reconnect: goRedis.Reconnect},
	Adapter:  "wait-replicas",
}
