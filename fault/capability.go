package fault

// Capability is what a node must be able to take for a fault to act on
// it: its server kind lists the capabilities it supports (cluster.Kind's
// Faults), its backend's nodes have the matching interface (cluster's
// Killer, Pauser, Clock, ...), and a fault the node cannot take is refused
// by naming the capability: "etcd nodes do not support clock offsets".
// Where a capability is one fault, it has that fault's name, as the
// history records it and a scenario's step says it: pause, kill, stop.
type Capability string

const (
	// Link: the client↔node and replication links go through proxies
	// that cut, delay and reset them (cut, reset, refuse, delay,
	// partition).
	Link Capability = "link faults"
	// PeerLink: the links between the members of an ensemble go through
	// proxies too, so that a partition can split the ensemble.
	PeerLink Capability = "peer-link faults"
	Pause    Capability = KindPause
	Kill     Capability = KindKill
	Stop     Capability = KindStop
	// Wipe: the data lost before a restart (amnesia).
	Wipe Capability = "wipe"
	// Clock: wall-clock offsets, through the LD_PRELOAD shim, which only
	// moves a server that reads its clock through libc (clock-jump,
	// clock-strobe, clock-reset).
	Clock Capability = "clock offsets"
	// Replica: replicas, their promotion (promote) and following a master.
	Replica Capability = "replicas"
	// Disconnect: a network disconnect of the node itself (isolation).
	Disconnect Capability = "isolation"
	// Power: a power loss, a kill that also loses what the server wrote
	// but had not fsynced; the shim records each fsync, which a server
	// that syncs through libc makes (Redis; not etcd, whose Go runtime
	// calls the kernel itself).
	Power Capability = "power loss"
	// Fsync: a slow disk, each fsync and fdatasync held back before it
	// starts, through the shim (a server that syncs through libc: Redis).
	Fsync Capability = "fsync delays"
	// CPU: a CPU limit on the node's processes (starvation), through
	// cgroups where the machine lets the harness set one.
	CPU Capability = "cpu limits"
)
