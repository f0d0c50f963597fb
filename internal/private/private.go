// Package private checks that a folder the harness writes into is its
// user's alone: the store (runstore), where another user could plant a
// link and have a run written where it points, and the nodes' state
// (cluster), which holds the run's password. One check under two rules,
// so that what "private" means is decided in one place; the callers word
// the refusal for their folder.
package private

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// Rule is what a folder must be to count as private.
type Rule struct {
	// FollowLink: the folder may be a symbolic link this user (or root)
	// made, which is followed — the store itself (store -> /big/disk).
	// Any other link is refused: whoever planted it chooses where the
	// harness writes.
	FollowLink bool
	// Secret: no other user may read the folder either. It must be this
	// user's (not root's: the harness wrote it), mode 0700; a looser
	// mode is tightened. Without Secret, others may read but not write,
	// and root may own it.
	Secret bool
}

// Problem is why a folder is not private.
type Problem int

// The problems Check finds.
const (
	// Link: a symbolic link where none may be.
	Link Problem = iota + 1
	// LinkOfOther: a link another user made, under FollowLink.
	LinkOfOther
	// NotFolder: something else than a folder.
	NotFolder
	// Owner: the folder belongs to another user.
	Owner
	// Writable: other users may write in the folder.
	Writable
)

// Error says why the folder at Path is not private.
type Error struct {
	Path    string
	Problem Problem
	// UID owns the folder (or the link); GID is its group.
	UID, GID int
	// Mode is the folder's, for Writable.
	Mode fs.FileMode
}

func (e *Error) Error() string {
	switch e.Problem {
	case Link:
		return e.Path + " is a symbolic link"
	case LinkOfOther:
		return fmt.Sprintf("%s is a symbolic link of another user (uid %d)", e.Path, e.UID)
	case NotFolder:
		return e.Path + " is not a folder"
	case Owner:
		return fmt.Sprintf("%s is owned by uid %d, not by this user (uid %d)", e.Path, e.UID, os.Geteuid())
	case Writable:
		return fmt.Sprintf("%s can be written by other users (%s)", e.Path, LsMode(e.Mode))
	}
	return e.Path + " is not private"
}

// Check says why the folder at path could be changed by a user other than
// this one (or, under r.Secret, read by one): an *Error, or the error of
// reading or tightening it. It does not make the folder.
func Check(path string, r Rule) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if !r.FollowLink || r.Secret {
			return &Error{Path: path, Problem: Link}
		}
		if uid, _ := owner(fi); !trusted(uid) {
			return &Error{Path: path, Problem: LinkOfOther, UID: uid}
		}
		if fi, err = os.Stat(path); err != nil {
			return err
		}
	}
	if !fi.IsDir() {
		return &Error{Path: path, Problem: NotFolder}
	}
	uid, gid := owner(fi)
	if r.Secret {
		if uid != os.Geteuid() {
			return &Error{Path: path, Problem: Owner, UID: uid, GID: gid}
		}
		if fi.Mode().Perm() != 0o700 {
			return os.Chmod(path, 0o700)
		}
		return nil
	}
	if !trusted(uid) {
		return &Error{Path: path, Problem: Owner, UID: uid, GID: gid}
	}
	if perm := fi.Mode().Perm(); perm&0o002 != 0 || perm&0o020 != 0 && !ownGroup(gid) {
		return &Error{Path: path, Problem: Writable, UID: uid, GID: gid, Mode: fi.Mode()}
	}
	return nil
}

// owner is who owns fi and its group; this user's where the system does
// not say.
func owner(fi fs.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return os.Geteuid(), os.Getegid()
}

// trusted: this user, or root, who can write anywhere anyway.
func trusted(uid int) bool { return uid == os.Geteuid() || uid == 0 }

// ownGroup reports whether gid is this user's private group, which
// Debian and most distributions give each user (and a umask of 002 makes
// folders group-writable for): named as the user. A shared group (users,
// staff) is other users.
func ownGroup(gid int) bool {
	u, err := user.Current()
	if err != nil || strconv.Itoa(gid) != u.Gid {
		return false
	}
	g, err := user.LookupGroupId(u.Gid)
	return err == nil && g.Name == u.Username
}

// LsMode writes a folder's mode as ls -l does (drwxrwxrwt), which people
// know, rather than as Go does (dtrwxrwxrwx).
func LsMode(m fs.FileMode) string {
	b := []byte("d" + m.Perm().String()[1:])
	if m&fs.ModeSetgid != 0 {
		b[6] = map[byte]byte{'x': 's', '-': 'S'}[b[6]]
	}
	if m&fs.ModeSticky != 0 {
		b[9] = map[byte]byte{'x': 't', '-': 'T'}[b[9]]
	}
	return string(b)
}
