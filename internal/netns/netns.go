// Package netns gives a process a network of its own: a new network
// namespace whose only interface is a loopback that no other process of the
// machine shares. The harness runs its local backend there (see
// cmd/splitbrain's worker), so that no other user of the machine can
// connect to a node, nor bind a stopped node's port and stand in for it:
// a port bound on the host's loopback is another loopback's port.
//
// Another user cannot enter the namespace either: joining one (setns)
// takes CAP_SYS_ADMIN over the user namespace that owns it, which is the
// machine's own for root and the harness user's private one otherwise.
package netns

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Isolate sets attr so that the child it starts gets a network namespace
// of its own, whose loopback the child must bring up (LoopbackUp). As
// root that is one clone flag. Another user cannot make a network
// namespace alone: the child then gets a user namespace too, in which
// this user is mapped to itself (files it writes are this user's, as
// without it) and keeps CAP_NET_ADMIN across its exec, over that
// namespace's network only, to bring its loopback up. A kernel that
// refuses unprivileged user namespaces refuses the start (EPERM, or
// ENOSPC when user.max_user_namespaces is 0): Explain words that.
func Isolate(attr *syscall.SysProcAttr) {
	attr.Cloneflags |= syscall.CLONE_NEWNET
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		return
	}
	attr.Cloneflags |= syscall.CLONE_NEWUSER
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_NET_ADMIN)
}

// Explain words why a child could not be started with Isolate's
// attributes (err is the start's error), with what would allow it.
func Explain(err error) string {
	switch {
	case os.Geteuid() == 0:
		return fmt.Sprintf("the kernel refused a network namespace (%v): a kernel without CONFIG_NET_NS, or a container that forbids unshare (seccomp; docker run --cap-add SYS_ADMIN or --privileged allows it)", err)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Sprintf("user namespaces are off (%v): sysctl user.max_user_namespaces is 0; raise it, or run as root", err)
	default:
		return fmt.Sprintf("this user may not make a user namespace (%v): run as root, or allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0)", err)
	}
}

// LoopbackUp brings up the loopback interface of this process's network
// namespace: a new namespace's lo is down, and 127.0.0.1 unreachable.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: reading lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: bringing lo up: %w", err)
	}
	return nil
}
