package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SyncEnv names the environment variable through which the clock shim
// finds the node's sync log: what each fsync made durable (see the shim's
// "Power loss").
const SyncEnv = "SPLITBRAIN_SYNC_LOG"

// PowerCutter is a node that can lose what it wrote but had not fsynced,
// as a machine whose power fails does (its page cache gone with it).
type PowerCutter interface {
	// LoseUnsynced cuts the stopped node's files back to what was
	// fsynced: a power loss, after the node was killed and before it
	// starts again.
	LoseUnsynced(ctx context.Context) (PowerLoss, error)
}

// PowerLoss is what a power loss took: each file cut, from its size to
// what had been fsynced.
type PowerLoss struct {
	Files []CutFile
}

// CutFile is one file a power loss cut.
type CutFile struct {
	Path         string // relative to the data folder
	Size, Synced int64
}

// Lost is the bytes lost in all.
func (p PowerLoss) Lost() int64 {
	var n int64
	for _, f := range p.Files {
		n += f.Size - f.Synced
	}
	return n
}

func (p PowerLoss) String() string {
	if len(p.Files) == 0 {
		return "nothing lost: every byte written had been fsynced"
	}
	parts := make([]string, len(p.Files))
	for i, f := range p.Files {
		parts[i] = fmt.Sprintf("%s cut from %d to %d bytes", f.Path, f.Size, f.Synced)
	}
	return fmt.Sprintf("%d bytes lost: %s", p.Lost(), strings.Join(parts, ", "))
}

// fileID is a file as the sync log knows it: its device, inode and birth
// time (zero where the file system keeps none).
type fileID struct {
	major, minor, ino, bsec, bnsec uint64
}

func idOf(st *unix.Statx_t) fileID {
	id := fileID{major: uint64(st.Dev_major), minor: uint64(st.Dev_minor), ino: st.Ino}
	if st.Mask&unix.STATX_BTIME != 0 {
		id.bsec, id.bnsec = uint64(st.Btime.Sec), uint64(st.Btime.Nsec)
	}
	return id
}

func statx(path string) (*unix.Statx_t, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_SIZE|unix.STATX_BTIME, &st); err != nil {
		return nil, &fs.PathError{Op: "statx", Path: path, Err: err}
	}
	return &st, nil
}

// ResetSyncLog starts a node's sync log afresh, before the node starts:
// every file now in dataDir counts as durable (it survived the node's last
// run and the page cache's write-back since), at its size now.
func ResetSyncLog(logPath, dataDir string) error {
	var b strings.Builder
	err := walkFiles(dataDir, func(path string, st *unix.Statx_t) error {
		id := idOf(st)
		fmt.Fprintf(&b, "S %d %d %d %d %d %d\n", id.major, id.minor, id.ino, id.bsec, id.bnsec, st.Size)
		return nil
	})
	if err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	if err := os.WriteFile(logPath, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	return nil
}

// LoseUnsynced cuts every file in dataDir back to the size the sync log
// says was last made durable, a file the log does not know (created since
// the node started, never fsynced) to nothing. The node must not run.
func LoseUnsynced(logPath, dataDir string) (PowerLoss, error) {
	synced, err := readSyncLog(logPath)
	if err != nil {
		return PowerLoss{}, err
	}
	var loss PowerLoss
	err = walkFiles(dataDir, func(path string, st *unix.Statx_t) error {
		keep := synced[idOf(st)]
		if int64(st.Size) <= keep {
			return nil
		}
		if err := os.Truncate(path, keep); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dataDir, path)
		loss.Files = append(loss.Files, CutFile{Path: rel, Size: int64(st.Size), Synced: keep})
		return nil
	})
	if err != nil {
		return loss, fmt.Errorf("power loss: %w", err)
	}
	return loss, nil
}

// readSyncLog reads what was fsynced of each file: the largest size a
// sync made durable, less what a later truncation cut.
func readSyncLog(path string) (map[fileID]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sync log: %w", err)
	}
	defer f.Close()
	out := map[fileID]int64{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) != 7 || (fields[0] != "S" && fields[0] != "T") {
			return nil, fmt.Errorf("sync log %s:%d: %q is not a sync or truncation record", path, n, sc.Text())
		}
		var v [6]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(fields[i+1], 10, 64); err != nil {
				return nil, fmt.Errorf("sync log %s:%d: %w", path, n, err)
			}
		}
		id, size := fileID{v[0], v[1], v[2], v[3], v[4]}, int64(v[5])
		if fields[0] == "S" {
			out[id] = max(out[id], size)
		} else {
			out[id] = min(out[id], size)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sync log: %w", err)
	}
	return out, nil
}

// walkFiles calls f for each regular file under dir.
func walkFiles(dir string, f func(path string, st *unix.Statx_t) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil // removed meanwhile
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		st, err := statx(path)
		if err != nil {
			return err
		}
		return f(path, st)
	})
}
