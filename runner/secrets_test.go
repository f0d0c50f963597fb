package runner_test

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"splitbrain/runner"
	"splitbrain/scenarios/spec"
)

// secretsIn reads the passwords of every node config under root: the
// requirepass lines of the redis.conf files, each with the folder it is in.
func secretsIn(t *testing.T, root string) map[string]string {
	t.Helper()
	found := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // a node's folder removed while we walk
			}
			return err
		}
		if d.Name() != "redis.conf" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "requirepass "); ok {
				if pw, err := strconv.Unquote(v); err == nil {
					found[pw] = filepath.Dir(path)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	return found
}

// While a run is live — the lock's nodes, a replica and the storage node
// up, a fault active — no file of the store (the tree serve publishes)
// holds a node's password, and every folder holding a node's config is
// private (mode 0700, its parent too), on either backend. After the run
// the store still holds none and the private state is gone.
// A case of TestDockerBackend: its Docker play would be counted by the
// others' assertNothingLeft.
func liveRunPublishesNoPassword(t *testing.T) {
	sc := parse(t, `name: secrets
expect: any
cluster: {nodes: 3, replicas: [n1]}
lock: {ttl: 1s, node_timeout: 250ms}
workload: {kind: counter, clients: 2, duration: 2s}
steps:
  - wait: 300ms
  - pause: {node: n2, for: 500ms}
`)
	for _, backend := range []string{spec.BackendLocal, spec.BackendDocker} {
		t.Run(backend, func(t *testing.T) {
			if backend == spec.BackendDocker {
				dockerEngine(t)
			}
			store, cache := t.TempDir(), playCache(t)
			var once sync.Once
			checked := false
			check := func() {
				checked = true
				secrets := secretsIn(t, cache)
				// Wherever a node's config is, its password counts.
				for pw, dir := range secretsIn(t, store) {
					secrets[pw] = dir
				}
				// The lock's nodes share one password, the storage
				// node has its own.
				if len(secrets) < 2 {
					t.Errorf("found %d node passwords, want the cluster's and the storage's", len(secrets))
				}
				for pw, dir := range secrets {
					for _, d := range []string{dir, filepath.Dir(dir)} {
						info, err := os.Lstat(d)
						if err != nil {
							t.Error(err)
							continue
						}
						if !info.IsDir() || info.Mode().Perm() != 0o700 {
							t.Errorf("%s holds a node config with mode %v, want a folder with 0700", d, info.Mode())
						}
					}
					if found := filesHolding(t, store, pw); len(found) != 0 {
						t.Errorf("the live run's store holds a node password in %v", found)
					}
				}
			}
			progress := &lockedBuffer{onWrite: func(s string) {
				if strings.Contains(s, "n2 paused") {
					once.Do(check)
				}
			}}
			out, err := runner.Run(context.Background(), sc, runner.RunOptions{
				Seed: 7, Store: store, CacheDir: cache, Backend: backend, Progress: progress,
			})
			if err != nil {
				t.Fatalf("%v\nprogress:\n%s", err, progress.String())
			}
			if !checked {
				t.Fatalf("the run never paused n2; nothing was checked\nprogress:\n%s", progress.String())
			}
			if _, err := os.Stat(filepath.Join(out.Dir, "logs", "n1.log")); err != nil && backend == spec.BackendLocal {
				t.Errorf("node log not in the run folder: %v", err)
			}
			if left := secretsIn(t, cache); len(left) != 0 {
				t.Errorf("node configs left after the run: %v", left)
			}
		})
	}
}

// filesHolding lists the files under root whose content holds secret.
func filesHolding(t *testing.T, root, secret string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // written and renamed while we walk
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(secret)) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	return found
}
