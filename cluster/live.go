package cluster

import (
	"fmt"
	"path/filepath"
	"strings"
)

// LiveRun is an entry of the live-run registry for processes a run starts
// beside its backend's nodes (lock drivers, one per client): they carry
// the entry's marker in their environment (RunEnv=ID) and their pid files
// sit in the entry, so that a harness killed with SIGKILL leaves nothing
// the next start does not reap, exactly as for nodes.
type LiveRun struct {
	r *liveRun
}

// RegisterLive reaps the leftovers of dead runs under cacheDir's registry
// (the local backend does the same at its start; a Docker run has no
// other occasion) and registers a new entry id owned by this process.
// reaped lists what was killed, for the log.
func RegisterLive(cacheDir, id string) (_ *LiveRun, reaped []string, err error) {
	if !runIDPattern.MatchString(id) {
		return nil, nil, fmt.Errorf("live registry: id %q, want 1 to 48 letters, digits, '_', '.' or '-'", id)
	}
	base := filepath.Join(cacheDir, "live")
	if err := PrivateDir(base); err != nil {
		return nil, nil, fmt.Errorf("live registry: %w", err)
	}
	reaped, err = Reap(base)
	if err != nil {
		return nil, reaped, fmt.Errorf("live registry: reaping leftovers: %w", err)
	}
	r, err := registerRun(base, id)
	if err != nil {
		return nil, reaped, err
	}
	return &LiveRun{r: r}, reaped, nil
}

// ID is the entry's marker: a process started for it carries RunEnv=ID.
func (l *LiveRun) ID() string { return l.r.id }

// Dir is the entry's private folder (mode 0700), removed with it.
func (l *LiveRun) Dir() string { return l.r.dir }

// AddPID records a child started for the entry under name.
func (l *LiveRun) AddPID(name string, pid int) error { return l.r.addPID(name, pid) }

// RemovePID forgets the child name once it has been waited for.
func (l *LiveRun) RemovePID(name string) { l.r.removePID(name) }

// Remove deletes the entry; its children must be gone.
func (l *LiveRun) Remove() error { return l.r.remove() }

// NewDir makes the private folder name in the entry (a node's state),
// which must not exist yet; it goes with the entry.
func (l *LiveRun) NewDir(name string) (string, error) {
	dir := l.r.path(name)
	if err := newPrivateDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// MarkedEnv returns env without any inherited marker, nor the variables
// drop names (which the caller sets itself), plus this entry's marker.
func (l *LiveRun) MarkedEnv(env []string, drop ...string) []string {
	return append(withoutEnv(env, append(drop, RunEnv)...), RunEnv+"="+l.r.id)
}

func withoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
next:
	for _, kv := range env {
		for _, name := range names {
			if strings.HasPrefix(kv, name+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
