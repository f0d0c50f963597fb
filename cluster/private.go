package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"splitbrain/internal/private"
)

// PrivateDir makes dir, and its missing parents, for state no other user
// may read: node configs (they hold the run's password), data and clock
// offset files. dir must end up a real folder (not a symbolic link), owned
// by this user and closed to everyone else (mode 0700); one that exists
// with a looser mode is tightened, one that another user owns or that is a
// link is refused, since whoever planted it could read or redirect what
// the harness writes there.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("private folder: %w", err)
	}
	err := private.CheckAbove(dir)
	var pe *private.Error
	if errors.As(err, &pe) {
		return fmt.Errorf("private folder %s: %v; whoever can change it can swap the folder for a link and read or redirect what the harness writes there: point the cache dir (XDG_CACHE_HOME) under folders only you or root can change", dir, err)
	}
	if err != nil {
		return fmt.Errorf("private folder %s: %w", dir, err)
	}
	err = private.Check(dir, private.Rule{Secret: true})
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &pe):
		return fmt.Errorf("private folder %s: %w", dir, err)
	case pe.Problem == private.Link:
		return fmt.Errorf("private folder %s is a symbolic link; remove it (someone may have planted it to read the nodes' passwords)", dir)
	case pe.Problem == private.Owner:
		return fmt.Errorf("private folder %s is owned by uid %d, not by this user (uid %d); remove it or point the cache dir elsewhere",
			dir, pe.UID, os.Geteuid())
	}
	return fmt.Errorf("private folder %s is not a folder", dir)
}

// newPrivateDir makes dir, which must not exist yet, private as
// PrivateDir says; its parent must be private already.
func newPrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("private folder %s exists already", dir)
		}
		return fmt.Errorf("private folder: %w", err)
	}
	return PrivateDir(dir)
}
