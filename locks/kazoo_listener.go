package locks

// KazooListener is kazoo's Lock used as its documentation asks: with a
// state listener on the client, whose user stops believing the moment the
// connection goes SUSPENDED or LOST. The same driver as Kazoo, run with
// "listener"; beside it in the landscape, it shows what that remedy
// mends (a holder cut off: it hears of it before its session expires)
// and what it cannot (a holder paused: it hears of it only once it runs
// again, after another was granted — Kleppmann's point of 2016).
var KazooListener = listening(Kazoo, "kazoo-listener",
	"kazoo's Lock (Python) with a state listener, as its documentation asks, a built-in driver, on a ZooKeeper 3.8 ensemble",
	"until the release or the moment the connection goes SUSPENDED or LOST, whichever is first: a state listener "+
		"says the lock lost then (kazoo's KazooState: while SUSPENDED \"a client should not assume that locks are valid\", on LOST they \"can be considered lost\"), "+
		"and the user stops believing")
