package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/history/historytest"
	"splitbrain/results"
)

// syncBuffer is written by the server goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeFlags(t *testing.T) {
	store := t.TempDir()
	f, err := parseServeFlags([]string{"--store", store})
	if err != nil {
		t.Fatal(err)
	}
	if host, _, _ := net.SplitHostPort(f.addr); host != "127.0.0.1" {
		t.Errorf("default address %s, want 127.0.0.1", f.addr)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", filepath.Join(store, "missing")}, "is not a folder of runs"},
		{[]string{"--store", store, "--addr", "8040"}, "want host:port"},
		{[]string{"--store", store, "extra"}, "serve takes no arguments"},
		{[]string{"--bogus"}, "flags of serve: --addr, --store"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"serve"}, tt.args...), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("serve %q: exit %d, stderr %q; want 254 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}

// serve serves a store with one run on a free loopback port; it answers
// the index and the run's files and nothing outside the store, also to a
// raw request that no client library would clean up first.
func TestServe(t *testing.T) {
	parent := t.TempDir()
	store := filepath.Join(parent, "store")
	if err := os.WriteFile(filepath.Join(parent, "secret.txt"), []byte("do not serve"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := results.NewRunDir(store, "clock-jump", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	events := (&historytest.Builder{}).Acquire("c1", "lock", 0.1, 0.2, 1).Release("c1", "lock", 0.5, 0.6).Events()
	if err := results.Write(dir, results.Meta{Scenario: "clock-jump"}, events, checker.Check(events)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- serveStore(ctx, serveFlags{store: store, addr: "127.0.0.1:0"}, &stdout, &stderr) }()
	var base string
	for deadline := time.Now().Add(30 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		cancel()
		t.Fatalf("server did not say where it listens: %q %q", stdout.String(), stderr.String())
	}

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/"); code != 200 || !strings.Contains(body, "splitbrain runs") || !strings.Contains(body, "clock-jump") {
		t.Errorf("GET /: %d %.200q", code, body)
	}
	rel, _ := filepath.Rel(store, dir)
	if code, body := get("/" + filepath.ToSlash(rel) + "/report.html"); code != 200 || !strings.Contains(body, `id="verdict"`) {
		t.Errorf("GET the report: %d", code)
	}
	// A raw request line, sent as is.
	for _, target := range []string{"/../secret.txt", "/clock-jump/../../secret.txt", "/%2e%2e/secret.txt"} {
		conn, err := net.Dial("tcp", base)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, base)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(b), "do not serve") {
			t.Errorf("raw GET %s: %d %.80q, want 404", target, resp.StatusCode, b)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v after Ctrl-C, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if stderr.String() != "" {
		t.Errorf("stderr %q: a loopback server warns about nothing", stderr.String())
	}
}
