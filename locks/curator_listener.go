package locks

// CuratorListener is Curator's InterProcessMutex used as Curator's
// error-handling note asks: with a ConnectionStateListener whose user
// stops believing the moment the connection goes SUSPENDED or LOST. The
// same driver as Curator, run with "listener"; beside it in the
// landscape, it shows what that remedy mends (a holder cut off, a
// session Curator itself ends after SUSPENDED) and what it cannot (a
// holder paused hears only once it runs again — Kleppmann's point).
var CuratorListener = listening(Curator, "curator-listener",
	"Apache Curator's InterProcessMutex (Java) with a ConnectionStateListener, as Curator asks, a built-in driver, on a ZooKeeper 3.8 ensemble",
	"until the release or the moment the connection goes SUSPENDED or LOST, whichever is first: a ConnectionStateListener "+
		"says the lock lost then (Curator: \"If a SUSPENDED state is reported you cannot be certain that you still hold the lock\"), "+
		"and the user stops believing")
