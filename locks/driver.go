package locks

// Driver is a lock driven through a child process of the user's
// (lock.command), over every node: not a column of the matrix, since what
// it runs is the file's.
var Driver = &Kind{
	Name:        "driver",
	About:       "a lock driver of yours (lock.command): the lock its ready claims (protocol 1: over every node)",
	Server:      "redis",
	Shape:       Masters,
	Belief:      DriverBelief,
	Driver:      true,
	Command:     true,
	Adapter:     "driver",
	NotInMatrix: true,
}

// DriverBelief is where a driver's user's belief ends, as the harness
// reads it off the replies.
const DriverBelief = "where the driver's reply says: its remaining validity at the reply, converted to the harness's clock " +
	"(late by at most the time since the request was sent); none given, at the release"
