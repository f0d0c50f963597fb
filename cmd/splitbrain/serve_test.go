package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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
	"splitbrain/pages"
	"splitbrain/runstore"
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
	dir, err := runstore.NewRunDir(store, "clock-jump", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	events := (&historytest.Builder{}).Acquire("c1", "lock", 0.1, 0.2, 1).Release("c1", "lock", 0.5, 0.6).Events()
	if err := pages.Write(dir, runstore.Meta{Scenario: "clock-jump"}, events, checker.Check(events)); err != nil {
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

// startServe serves f in the background and returns the address it
// listens on; the server stops at the end of the test.
func startServe(t *testing.T, f serveFlags) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- serveStore(ctx, f, &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	re := regexp.MustCompile(`http://([^/]+)/`)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("server did not say where it listens: %q %q", stdout.String(), stderr.String())
	return ""
}

// rawGet sends one request with the given Host header on a connection of
// its own and returns the status.
func rawGet(t *testing.T, addr, host, target string) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A page on another site can make its own name resolve to 127.0.0.1 (DNS
// rebinding) and read what answers there: the server answers only to the
// names it listens under.
func TestServeAnswersOnlyToItsOwnNames(t *testing.T) {
	store := t.TempDir()
	addr := startServe(t, serveFlags{store: store, addr: "127.0.0.1:0"})
	_, port, _ := net.SplitHostPort(addr)
	for _, tt := range []struct {
		host string
		code int
	}{
		{addr, 200},
		{"localhost:" + port, 200},
		{"LOCALHOST:" + port, 200},
		{"[::1]:" + port, 200},
		{"evil.example:" + port, http.StatusMisdirectedRequest},
		{"127.0.0.1.nip.io:" + port, http.StatusMisdirectedRequest},
		{"localhost.evil.example:" + port, http.StatusMisdirectedRequest},
		{"localhost:1", http.StatusMisdirectedRequest},
		{"localhost", http.StatusMisdirectedRequest},
		{"10.0.0.1:" + port, http.StatusMisdirectedRequest},
	} {
		if code := rawGet(t, addr, tt.host, "/"); code != tt.code {
			t.Errorf("Host %q: %d, want %d", tt.host, code, tt.code)
		}
	}
	// Bound to every address, it answers to an address of the machine
	// (which no rebinding name can be), still not to a name.
	addr = startServe(t, serveFlags{store: store, addr: "0.0.0.0:0"})
	_, port, _ = net.SplitHostPort(addr)
	for _, tt := range []struct {
		host string
		code int
	}{
		{"127.0.0.1:" + port, 200},
		{"192.0.2.7:" + port, 200},
		{"evil.example:" + port, http.StatusMisdirectedRequest},
	} {
		if code := rawGet(t, "127.0.0.1:"+port, tt.host, "/"); code != tt.code {
			t.Errorf("listening on 0.0.0.0, Host %q: %d, want %d", tt.host, code, tt.code)
		}
	}
}

// A connection is not held forever: not one that sends half a request,
// not an idle keep-alive one, not one that stops reading a large file.
func TestServeTimesOutConnections(t *testing.T) {
	store := t.TempDir()
	dir, err := runstore.NewRunDir(store, "clock-jump", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	big := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, size); err != nil { // sparse: no disk
		t.Fatal(err)
	}
	timeouts := serveTimeouts{header: 300 * time.Millisecond, read: 300 * time.Millisecond, write: 500 * time.Millisecond, idle: 300 * time.Millisecond}
	addr := startServe(t, serveFlags{store: store, addr: "127.0.0.1:0", timeouts: timeouts})

	// closedWithin reads what conn still gets and says whether the
	// server closed it within d.
	closedWithin := func(conn net.Conn, d time.Duration) (int64, bool) {
		conn.SetReadDeadline(time.Now().Add(d))
		n, err := io.Copy(io.Discard, conn)
		var ne net.Error
		return n, !(errors.As(err, &ne) && ne.Timeout())
	}
	t.Run("half a request", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\n", addr)
		if _, closed := closedWithin(conn, 5*time.Second); !closed {
			t.Error("a connection that never finished its request is still open after 5s")
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := br.ReadByte(); err == nil || isTimeout(err) {
			t.Errorf("an idle keep-alive connection is still open after 5s (%v)", err)
		}
	})
	t.Run("a reader that stops", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		rel, _ := filepath.Rel(store, big)
		fmt.Fprintf(conn, "GET /%s HTTP/1.1\r\nHost: %s\r\n\r\n", filepath.ToSlash(rel), addr)
		time.Sleep(2 * time.Second) // read nothing, well past the write timeout
		n, closed := closedWithin(conn, 5*time.Second)
		if !closed || n >= size {
			t.Errorf("a stalled reader got %d of %d bytes, connection closed %v: the write was not cut off", n, size, closed)
		}
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
