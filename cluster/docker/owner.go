package docker

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"splitbrain/cluster"
)

// Labels on everything splitbrain creates in the engine. A run's containers,
// volumes and network carry the run id and the identity of the harness
// process that made them, so the next start can tell leftovers of a dead
// harness from a run that is still going.
const (
	labelApp        = "splitbrain" // "1" on every object
	labelRun        = "splitbrain.run"
	labelNode       = "splitbrain.node"
	labelOwnerPID   = "splitbrain.owner-pid"
	labelOwnerStart = "splitbrain.owner-start"
	labelOwnerBoot  = "splitbrain.owner-boot"
	labelOwnerHost  = "splitbrain.owner-host"
	labelImageHash  = "splitbrain.image-hash"
)

// owner identifies a harness process across pid reuse and reboots.
type owner struct {
	PID   int
	Start uint64 // start time in clock ticks since boot
	Boot  string // the kernel's boot id
	Host  string
}

func currentOwner() (owner, error) {
	pid := os.Getpid()
	start, err := cluster.ProcStartTime(pid)
	if err != nil {
		return owner{}, fmt.Errorf("docker: own start time: %w", err)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return owner{}, fmt.Errorf("docker: boot id: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return owner{}, fmt.Errorf("docker: host name: %w", err)
	}
	return owner{PID: pid, Start: start, Boot: strings.TrimSpace(string(boot)), Host: host}, nil
}

func (o owner) labels() map[string]string {
	return map[string]string{
		labelOwnerPID:   strconv.Itoa(o.PID),
		labelOwnerStart: strconv.FormatUint(o.Start, 10),
		labelOwnerBoot:  o.Boot,
		labelOwnerHost:  o.Host,
	}
}

func ownerFromLabels(l map[string]string) (owner, bool) {
	pid, err1 := strconv.Atoi(l[labelOwnerPID])
	start, err2 := strconv.ParseUint(l[labelOwnerStart], 10, 64)
	o := owner{PID: pid, Start: start, Boot: l[labelOwnerBoot], Host: l[labelOwnerHost]}
	return o, err1 == nil && err2 == nil && o.Boot != "" && o.Host != ""
}

type liveness int

const (
	ownerAlive liveness = iota
	ownerDead
	// ownerElsewhere: made by a harness on another machine sharing the
	// engine; its liveness cannot be checked from here.
	ownerElsewhere
)

// liveness judges o from the point of view of self, the running harness.
func (o owner) liveness(self owner) liveness {
	switch {
	case o.Host != self.Host:
		return ownerElsewhere
	case o.Boot != self.Boot:
		return ownerDead // a harness of an earlier boot of this machine
	}
	if cluster.ProcAlive(o.PID, o.Start) {
		return ownerAlive
	}
	return ownerDead
}
