package locks

// Single is our lock on n1 alone (Redlock with N=1).
var Single = &Kind{
	Name:     "single",
	About:    "our lock on n1 alone (N=1)",
	Server:   "redis",
	Shape:    OneDeployment,
	Belief:   deadlineBelief,
	Sentinel: true,
	Liveness: goRedis,
	Adapter:  "redlock",
}
