// Package fault names the faults splitbrain injects and plans random
// schedules of them, with no I/O: the fault kinds as the history records
// them, the capabilities a node needs to take them (which server kinds
// list and cluster's node interfaces provide), the points where a client
// can be paused, the directions of a link fault, the shapes of a
// partition (grudges), and Jepsen-style random schedules drawn from a
// seed. It is the one vocabulary of faults: scenario steps that inject a
// fault are named by its kind, the nemesis injects what this package
// names, and scenario files are parsed against it (scenarios/spec), so
// that the parser and its fuzzing need nothing of the harness's servers,
// proxies and clients.
package fault

import (
	"time"

	"splitbrain/history"
)

// Fault kinds, as recorded in the history.
const (
	KindCut         = "cut"
	KindReset       = "reset"
	KindRefuse      = "refuse"
	KindDelay       = "delay"
	KindPartition   = "partition"
	KindClockJump   = "clock-jump"
	KindClockStrobe = "clock-strobe"
	KindClockReset  = "clock-reset"
	KindPause       = "pause"
	KindKill        = "kill"
	KindStop        = "stop"
	KindClientPause = "client-pause"
	KindPromote     = "promote"
	// KindStarve: a node's server or a client's driver gets a small share
	// of one CPU.
	KindStarve = "starve"
	// KindLostReply: the next reply on a link is lost after its request
	// took effect.
	KindLostReply = "lost-reply"
	// KindFsyncDelay: a node's disk is slow, each fsync held back.
	KindFsyncDelay = "fsync-delay"
)

// The shares of one CPU a starvation may leave (package internal/cpulimit
// keeps the same): the kernel's smallest quota is 1 ms of a 100 ms period,
// and a whole CPU is no starvation.
const (
	MinCPUShare = 0.01
	MaxCPUShare = 0.99
)

// KindClientHeld is the stretch of a client pause in which the client was
// actually stopped: from reaching the pause's point to resuming.
const KindClientHeld = "client-pause-held"

// Direction says which bytes of a link a fault acts on.
type Direction string

const (
	// Both directions; also the zero value.
	Both Direction = "both"
	// ToNode is what the client sends: requests (upstream). On a
	// replication link, what the replica sends its master.
	ToNode Direction = "to-node"
	// ToClient is what the node sends back: replies (downstream). On a
	// replication link, the master's stream of writes.
	ToClient Direction = "to-client"
)

// Arrow draws a direction for fault details.
func (d Direction) Arrow() string {
	switch d {
	case ToNode:
		return " →"
	case ToClient:
		return " ←"
	}
	return ""
}

// MaxDelay bounds Delay.By: minutes, as in the incidents it models.
const MaxDelay = time.Hour

// DescribeLinks groups links by client for a fault's detail, sep between
// a client and its nodes: "c1 ✂ n4,n5; c2 ✂ n1".
func DescribeLinks(links []history.Link, sep string) string {
	return history.FormatLinks(links, " "+sep+" ", "; ")
}

// FormatOffset writes a clock offset with its sign: +2s, -500ms.
func FormatOffset(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}
