package locks

import "splitbrain/fault"

// Rueidislock is rueidis' rueidislock v1.0, its keys on n1.
var Rueidislock = &Kind{
	Name:   "rueidislock",
	About:  "rueidis' rueidislock v1.0, its keys on n1",
	Server: "redis",
	Shape:  OneDeployment,
	Belief: "while the context TryWithContext handed out lives, ended at the release: rueidislock tells its user no " +
		"deadline, extends its keys every TTL/2 in the background and cancels the context once a majority of its keys are lost " +
		"(an extension refused, an invalidation, a closed connection); the client releases the moment the context is cancelled, " +
		"as a user who stops when told, so the release marks when it learned — keys that expire before the context knows are the lock's gap",
	Sentinel: true,
	Unhooked: map[fault.Point]string{
		fault.AfterReplies: "a point inside the acquire that rueidislock (its scripts run by rueidis, not go-redis) gives the harness no hook for",
	},
	// Its keys are extended every TTL/2 in the background while the
	// lock is held, and deleted in the background once its context is
	// cancelled (the release).
	Liveness: Liveness{Renewed: true, AsyncRelease: true},
	Adapter:  "rueidislock",
}
