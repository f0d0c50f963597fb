package scenarios

import "splitbrain/scenarios/spec"

// Beliefs says, per lock kind, where a client's belief that it holds the
// lock ends (property P1): what the lock's API tells its user, since a
// lock that documents nothing is used as its API suggests. Each run's
// report and result.json carry the sentence of the lock it played.
var Beliefs = map[string]string{
	spec.LockRedlock: "at the validity deadline: start of the acquire + TTL − elapsed − drift (1% + 2ms), on the client's monotonic clock",
	spec.LockSingle:  "at the validity deadline: start of the acquire + TTL − elapsed − drift (1% + 2ms), on the client's monotonic clock",
	spec.LockNaive: "at the validity deadline as redlock computes it (start + TTL − elapsed − drift), but the lease is handed back " +
		"unchecked, so a slow or paused acquire returns one whose deadline has already passed",
	spec.LockFencedSimple:   "at the validity deadline: start of the acquire + TTL − elapsed − drift (1% + 2ms), on the client's monotonic clock",
	spec.LockFencedTwoRound: "at the validity deadline: start of the acquire + TTL − elapsed − drift (1% + 2ms), on the client's monotonic clock",
	spec.LockRedsync:        "at redsync's Until(): start of the acquire + expiry − elapsed − drift (1%), on the client's monotonic clock",
	spec.LockRedislock: "when Obtain returned + TTL, on the client's monotonic clock: redislock returns no deadline and does not " +
		"check how much of the TTL the obtain used, so its user counts the TTL from the grant (Refresh: from its return)",
	spec.LockWaitReplicas: "at the release: Redisson's lock() tells its user no deadline, its watchdog renews the key every TTL/3 " +
		"behind the user's back, so the user believes until unlock() whatever became of the key",
	spec.LockRueidislock: "while the context TryWithContext handed out lives, ended at the release: rueidislock tells its user no " +
		"deadline, extends its keys every TTL/2 in the background and cancels the context once a majority of its keys are lost " +
		"(an extension refused, an invalidation, a closed connection); the client releases the moment the context is cancelled, " +
		"as a user who stops when told, so the release marks when it learned — keys that expire before the context knows are the lock's gap",
	spec.LockZooKeeper: "until the session may have expired: when the acquire's last request (the read of the lock znode's zxid) was sent + " +
		"the session timeout, on the client's monotonic clock — the servers expire a session only after a whole timeout without a " +
		"word from it, and the client hears of the expiry only from a session event, late when it is cut off",
	spec.LockEtcd: "while the lock key's lease is alive as the client knows it: when the lease's grant was sent + the TTL the servers " +
		"answered (Extend: its keep-alive's), on the client's monotonic clock; the lease is not kept alive in the background",
	spec.LockEtcdV3Lock: "while the lease passed to the spec.Lock RPC is alive as the client knows it: when its grant was sent + its TTL, " +
		"on the client's monotonic clock — the 3.4 server may hand back a lock whose lease expired while it waited, " +
		"a belief already over when it begins",
	spec.LockRedisPy: "when acquire() returned + TTL, on the driver's monotonic clock, converted to the harness's at the reply: " +
		"redis-py's spec.Lock returns True and no deadline and does not check how much of the TTL the acquire used (extend: from its return)",
	spec.LockDriver: "where the driver's reply says: its remaining validity at the reply, converted to the harness's clock " +
		"(late by at most the time since the request was sent); none given, at the release",
}

// Belief is the sentence of lock kind k, or "" for a kind without one.
func Belief(k string) string { return Beliefs[k] }
