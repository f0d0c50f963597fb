package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"splitbrain/cluster"
)

// Each test's children have a cache of their own (see env), and what a
// cache holds besides the live registry is the same in every one: the
// clock shim (cc, 0.3 CPU-seconds), ZooKeeper's class-data archive (a
// member of the first run that finds none dumps it) and the Curator
// driver's classes and archive (javac and a training JVM: seconds of
// CPU). Made once per test process into seedCache and hard-linked into
// each test's cache, they are no longer made again by each of the some 50
// tests that run plays. What a test's runs make is adopted into seedCache
// when the test ends.
var (
	seedOnce  sync.Once
	seedCache string // <dir>/splitbrain, as a child's cache
	seedErr   error
	seedMu    sync.Mutex
)

// seedEnvCache fills a test's cache dir (XDG_CACHE_HOME/splitbrain) from
// seedCache and returns what it put there, by name.
func seedEnvCache(t testing.TB, cache string) map[string]os.FileInfo {
	t.Helper()
	seedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "splitbrain-cli-seed-")
		if err != nil {
			seedErr = err
			return
		}
		seedCache = filepath.Join(dir, "splitbrain")
		_, seedErr = cluster.BuildShim(context.Background(), seedCache)
	})
	if seedErr != nil {
		t.Logf("shared cache: %v", seedErr)
		return nil
	}
	seeded := map[string]os.FileInfo{}
	seedMu.Lock()
	defer seedMu.Unlock()
	if err := linkTree(seedCache, cache, seeded); err != nil {
		// A play then builds its own; no check depends on the seed.
		t.Logf("shared cache: %v", err)
	}
	return seeded
}

// linkTree hard-links the shareable entries of from into to, one level of
// folders deep, and records each in got.
func linkTree(from, to string, got map[string]os.FileInfo) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if !shareable(e.Name(), e.IsDir()) {
			continue
		}
		src, dst := filepath.Join(from, e.Name()), filepath.Join(to, e.Name())
		if e.IsDir() {
			if err := linkTree(src, dst, nil); err != nil {
				return err
			}
		} else if err := os.Link(src, dst); err != nil {
			return err
		}
		if got != nil {
			if info, err := os.Lstat(dst); err == nil {
				got[e.Name()] = info
			}
		}
	}
	return nil
}

// shareable names what no run changes once made: the shim and its sum,
// class archives, the Curator driver's compiled folder and what is in it;
// not the live registry, runs' state, or anything being made.
func shareable(name string, dir bool) bool {
	switch {
	case dir:
		return strings.HasPrefix(name, "curator-driver-") && !strings.HasPrefix(name, "curator-driver-tmp-")
	case strings.HasPrefix(name, "clockshim-"):
		return strings.HasSuffix(name, ".so") || strings.HasSuffix(name, ".so.sha256")
	}
	return strings.HasSuffix(name, ".jsa") || name == "curator-driver.jar"
}

// adoptEnvCache links into seedCache what a test's runs made that it
// lacks: class archives, the Curator driver's folder.
func adoptEnvCache(cache string) {
	if seedCache == "" {
		return
	}
	seedMu.Lock()
	defer seedMu.Unlock()
	entries, err := os.ReadDir(cache)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !shareable(e.Name(), e.IsDir()) {
			continue
		}
		src, dst := filepath.Join(cache, e.Name()), filepath.Join(seedCache, e.Name())
		if !e.IsDir() {
			_ = os.Link(src, dst)
			continue
		}
		// A folder only once it holds the driver's classes; its archive
		// may come later, from another test.
		if _, err := os.Stat(filepath.Join(src, "curator-driver.jar")); err != nil {
			continue
		}
		_ = os.MkdirAll(dst, 0o755)
		inner, err := os.ReadDir(src)
		if err != nil {
			continue
		}
		for _, f := range inner {
			if shareable(f.Name(), f.IsDir()) && !f.IsDir() {
				_ = os.Link(filepath.Join(src, f.Name()), filepath.Join(dst, f.Name()))
			}
		}
	}
}

// cacheTouched lists what a test's runs put in its cache or changed there:
// every entry but the seeded ones left as they were.
func (e *env) cacheTouched() []string {
	entries, _ := os.ReadDir(filepath.Join(e.cache, "splitbrain"))
	var out []string
	for _, d := range entries {
		if was, ok := e.seeded[d.Name()]; ok {
			if now, err := os.Lstat(filepath.Join(e.cache, "splitbrain", d.Name())); err == nil && os.SameFile(was, now) {
				continue
			}
		}
		out = append(out, d.Name())
	}
	return out
}

func removeSeed() {
	if seedCache != "" {
		_ = os.RemoveAll(filepath.Dir(seedCache))
	}
}
