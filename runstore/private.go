package runstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"splitbrain/internal/private"
)

// ErrSharedStore marks a folder of the store that another user could
// change under the harness: a symbolic link (planted, it sends a run
// wherever it points), a folder another user owns, or one others may write
// to (where they may plant a link, or swap a run folder for one, at any
// time). The store's help suggests no shared folder; this refuses one.
var ErrSharedStore = errors.New("the store is not private")

// CheckStore says why store, or the folders in it of the given scenarios,
// could be changed by another user: an error wrapping ErrSharedStore. It
// is nil when they are private, and when they do not exist yet or are not
// folders, which are for NewRunDir to make (private, and checked again)
// or to fail on.
func CheckStore(store string, scenarios ...string) error {
	if err := checkPrivate(store, true); err != nil {
		if errors.Is(err, ErrSharedStore) {
			return err
		}
		return nil
	}
	for _, s := range scenarios {
		if err := checkPrivate(filepath.Join(store, s), false); errors.Is(err, ErrSharedStore) {
			return err
		}
	}
	return nil
}

// checkPrivate says why the folder at path could be changed by a user
// other than this one (or root, who can change anything anyway). The
// store itself may be a link the user made (store -> /big/disk/store),
// which is followed; a link of another user, or any link inside the
// store, is refused.
func checkPrivate(path string, linkOK bool) error {
	if linkOK {
		// The store itself: the folders above it decide whether it stays
		// what was checked.
		if err := checkAbove(path); err != nil {
			return err
		}
	}
	err := private.Check(path, private.Rule{FollowLink: linkOK})
	var pe *private.Error
	if !errors.As(err, &pe) {
		if err != nil {
			return fmt.Errorf("runstore: %w", err)
		}
		return nil
	}
	switch pe.Problem {
	case private.Link:
		return fmt.Errorf("%w: %s is a symbolic link; a link in the store's own folders sends runs wherever it points (another user may have planted it): remove it, the next run makes a folder there", ErrSharedStore, path)
	case private.LinkOfOther:
		return fmt.Errorf("%w: %s is a symbolic link of another user (uid %d), who chooses where runs would be written; give a folder of your own, such as ./store", ErrSharedStore, path, pe.UID)
	case private.NotFolder:
		return fmt.Errorf("runstore: %s is not a folder", path)
	case private.Owner:
		return fmt.Errorf("%w: %s belongs to another user (uid %d), who could plant a link in it and have a run written where it points; give a folder of your own, such as ./store", ErrSharedStore, path, pe.UID)
	}
	who := "every user"
	if pe.Mode.Perm()&0o002 == 0 {
		who = "group " + strconv.Itoa(pe.GID)
	}
	return fmt.Errorf("%w: %s can be written by other users (%s: %s may write), who could plant a link in it and have a run written where it points; give a folder only you can write, such as ./store, or chmod go-w it", ErrSharedStore, path, private.LsMode(pe.Mode), who)
}

// mkdirPrivate makes the folder path of the store, or finds it there, and
// checks that no other user can change it. Mkdir does not follow a link
// at path: one found there (planted before or while the folder was made)
// is refused by checkPrivate, never written through.
func mkdirPrivate(path string, linkOK bool) error {
	if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("runstore: creating run folder: %w", err)
	}
	return checkPrivate(path, linkOK)
}

// checkAbove says why a folder above the store could be changed by
// another user, who could then swap the store, or a folder on the way to
// it, for a link after it was checked, and have what the harness writes
// into the store (as root, perhaps) written where the link points.
func checkAbove(store string) error {
	err := private.CheckAbove(store)
	var pe *private.Error
	if errors.As(err, &pe) && pe.Problem == private.NotFolder {
		// A file on the way: making the store fails, in its own words.
		return nil
	}
	if !errors.As(err, &pe) {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("runstore: %w", err)
		}
		return nil
	}
	var why string
	switch pe.Problem {
	case private.LinkOfOther:
		why = fmt.Sprintf("%s, on the way to it, is a symbolic link of another user (uid %d), who chooses where it leads", pe.Path, pe.UID)
	case private.Owner:
		why = fmt.Sprintf("%s, a folder above it, belongs to another user (uid %d)", pe.Path, pe.UID)
	case private.Writable:
		why = fmt.Sprintf("%s, a folder above it, can be written by other users (%s) and is not sticky", pe.Path, private.LsMode(pe.Mode))
	default:
		why = pe.Error()
	}
	return fmt.Errorf("%w: the store %s: %s; they could swap the store for a link at any time and have the runs, and the nodes' logs, written wherever it points: give a store under folders only you (or root) can change, such as ./store", ErrSharedStore, store, why)
}
