package fault

// Point is a place in a lock client's work where it can be paused. The
// hook points are those of the lock library (redlock.Hooks); a harness
// wires each hook to nemesis.ClientGate.At.
type Point string

const (
	// AfterReplies: every node answered (or timed out), the validity is
	// not yet computed. A pause here counts into the elapsed time.
	AfterReplies Point = "after-replies"
	// AfterAcquire: the lease is granted and its deadline fixed, the
	// caller has not got it yet — a pause inside the critical section.
	AfterAcquire Point = "after-acquire"
	// BeforeRelease: the caller asked to release, no node contacted yet.
	BeforeRelease Point = "before-release"
	// BeforeWrite: not the lock's but the workload's: the client has read
	// the protected resource under its lease and is about to write back
	// what it computed — Kleppmann's figure 1, the pause that turns an
	// expired lease into a lost update.
	BeforeWrite Point = "before-write"
	// AnyPoint: whichever hook point the client reaches next.
	AnyPoint Point = "any"
	// Background is not a place to arm a pause: it is where a lock's
	// background work (a watchdog renewing the lease) passes the gate. It
	// never sets a pause off, but it is held while the client is stopped,
	// as every thread of a stopped process is — a GC pause freezes the
	// watchdog with the code it serves.
	Background Point = "background"
)

// HookPoints are the lock's hook points, for drawing one at random.
var HookPoints = []Point{AfterReplies, AfterAcquire, BeforeRelease}

// ResourcePoints are the hook points of a client that also writes a
// protected resource: the lock's, and BeforeWrite.
var ResourcePoints = []Point{AfterReplies, AfterAcquire, BeforeWrite, BeforeRelease}

// ValidPoint reports whether p names a hook point or AnyPoint.
func ValidPoint(p Point) bool {
	switch p {
	case AfterReplies, AfterAcquire, BeforeWrite, BeforeRelease, AnyPoint:
		return true
	}
	return false
}
