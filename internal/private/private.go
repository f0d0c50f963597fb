// Package private checks that a folder the harness writes into is its
// user's alone: the store (runstore), where another user could plant a
// link and have a run written where it points, and the nodes' state
// (cluster), which holds the run's password. One check under two rules,
// so that what "private" means is decided in one place; the callers word
// the refusal for their folder.
package private

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
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

// maxLinks bounds the links CheckAbove follows, as the kernel's 40.
const maxLinks = 40

// CheckAbove says why a folder above path (its parent, and every folder
// up to the root) could be changed by another user, who could then swap
// path, or a folder on the way to it, for a link of their own at any time
// after path itself was checked: an *Error naming the folder. A folder
// above is safe when it is this user's or root's and no other user may
// write in it, or when it is sticky (/tmp: others may add entries but not
// rename or remove this user's). A link on the way must be this user's or
// root's; it is followed and where it points checked the same way. The
// folders above that do not exist yet are not checked: they are this
// user's to make, in a folder checked.
func CheckAbove(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	links := 0
	_, err = checkChain(filepath.Dir(abs), &links)
	return err
}

// checkChain checks the folder dir and every one above it, following
// trusted links, and returns where dir really is.
func checkChain(dir string, links *int) (string, error) {
	cur := "/"
	if err := checkAbove(cur); err != nil {
		return "", err
	}
	for _, name := range strings.Split(strings.TrimPrefix(filepath.Clean(dir), "/"), "/") {
		if name == "" {
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// The rest is to be made, by this user.
			return cur, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if uid, _ := owner(fi); !trusted(uid) {
				return "", &Error{Path: next, Problem: LinkOfOther, UID: uid}
			}
			if *links++; *links > maxLinks {
				return "", &Error{Path: next, Problem: Link}
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			if cur, err = checkChain(target, links); err != nil {
				return "", err
			}
			continue
		}
		if err := checkAbove(next); err != nil {
			return "", err
		}
		cur = next
	}
	return cur, nil
}

// checkAbove checks one folder above the one that matters.
func checkAbove(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &Error{Path: dir, Problem: NotFolder}
	}
	uid, gid := owner(fi)
	if !trusted(uid) {
		return &Error{Path: dir, Problem: Owner, UID: uid, GID: gid}
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o002 != 0 || perm&0o020 != 0 && !ownGroup(gid) {
		return &Error{Path: dir, Problem: Writable, UID: uid, GID: gid, Mode: fi.Mode()}
	}
	return nil
}

// Append opens the file at path for appending, making it if need be, and
// never through a symbolic link: a link there (planted, or swapped in for
// the file) is refused with ELOOP, not written through.
func Append(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
	return f, linkRefused(path, err)
}

// linkRefused words O_NOFOLLOW's refusal.
func linkRefused(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%s is a symbolic link, which the harness never writes through (someone may have put it there to choose where it writes): %w", path, err)
	}
	return err
}

// WriteFile is os.WriteFile that never writes through a symbolic link at
// path.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return linkRefused(path, err)
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}
