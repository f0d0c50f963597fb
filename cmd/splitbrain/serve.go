package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"splitbrain/storeserver"
)

// defaultServeAddr keeps the store on this machine unless asked otherwise:
// run folders hold histories and node logs.
const defaultServeAddr = "127.0.0.1:8040"

type serveFlags struct {
	store    string
	addr     string
	timeouts serveTimeouts
}

// serveTimeouts bound how long a connection is held: without them a
// client that sends half a request, stops reading, or just keeps its
// keep-alive connection open holds a connection (and its goroutine)
// forever, and a few hundred of them hold the server.
type serveTimeouts struct {
	header time.Duration // to read a request's headers
	read   time.Duration // to read a whole request (GET has no body)
	write  time.Duration // to write a response: a history of a million operations is some 200 MB
	idle   time.Duration // a keep-alive connection between requests
}

// defaultServeTimeouts are serve's; zero serveFlags.timeouts means these.
var defaultServeTimeouts = serveTimeouts{
	header: 10 * time.Second,
	read:   30 * time.Second,
	write:  5 * time.Minute,
	idle:   time.Minute,
}

func parseServeFlags(args []string) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.store, "store", "store", "a folder of runs, such as store")
	fs.StringVar(&f.addr, "addr", defaultServeAddr, "host:port such as "+defaultServeAddr)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return f, err
	}
	if len(pos) > 0 {
		return f, &usageError{fmt.Sprintf("serve takes no arguments, got %q; use --store DIR", strings.Join(pos, " "))}
	}
	if _, _, err := net.SplitHostPort(f.addr); err != nil {
		return f, &usageError{fmt.Sprintf("--addr %q: want host:port, e.g. %s", f.addr, defaultServeAddr)}
	}
	fi, err := os.Stat(f.store)
	if err != nil || !fi.IsDir() {
		return f, &usageError{fmt.Sprintf("--store %q is not a folder of runs; run a scenario first (splitbrain run clock-jump)", f.store)}
	}
	return f, nil
}

// cmdServe serves the store over HTTP until Ctrl-C.
func cmdServe(args []string, stdout, stderr io.Writer) (int, error) {
	f, err := parseServeFlags(args)
	if err != nil {
		return exitUsage, err
	}
	ctx, stdout, stderr, stop := stopContext(stdout, stderr)
	defer stop()
	if err := serveStore(ctx, f, stdout, stderr); err != nil {
		return exitInternal, err
	}
	return exitValid, nil
}

// serveStore listens on f.addr and serves f.store read-only until ctx ends.
func serveStore(ctx context.Context, f serveFlags, stdout, stderr io.Writer) error {
	h, err := storeserver.New(f.store)
	if err != nil {
		return err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if host, _, _ := net.SplitHostPort(f.addr); !isLoopback(host) {
		fmt.Fprintf(stderr, "splitbrain: warning: serving %s on %s, reachable from other machines\n", f.store, ln.Addr())
	}
	t := f.timeouts
	if t == (serveTimeouts{}) {
		t = defaultServeTimeouts
	}
	srv := &http.Server{
		Handler:           hostGuard(h, f.addr, ln.Addr()),
		ReadHeaderTimeout: t.header,
		ReadTimeout:       t.read,
		WriteTimeout:      t.write,
		IdleTimeout:       t.idle,
		MaxHeaderBytes:    64 << 10,
	}
	fmt.Fprintf(stdout, "splitbrain: serving %s at http://%s/ (Ctrl-C stops)\n", f.store, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostGuard answers only requests whose Host names this server: the
// address it was asked to listen on, or localhost, 127.0.0.1 or [::1],
// each with its port. A page on another site can make its own name
// resolve to 127.0.0.1 (DNS rebinding) and then read what answers there as
// if it were its own; its requests carry its name as Host, and are refused
// here. Listening on every address (0.0.0.0, [::]), any IP address of the
// machine is accepted too: a rebinding needs a name, never an address.
func hostGuard(next http.Handler, addr string, ln net.Addr) http.Handler {
	asked, _, _ := net.SplitHostPort(addr)
	_, port, _ := net.SplitHostPort(ln.String())
	names := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	if asked != "" {
		names[strings.ToLower(asked)] = true
	}
	anyIP := false
	if ip := net.ParseIP(asked); asked == "" || ip != nil && ip.IsUnspecified() {
		anyIP = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, p, err := net.SplitHostPort(r.Host)
		if err != nil {
			// No port: the scheme's default.
			host, p = strings.Trim(r.Host, "[]"), "80"
		}
		host = strings.ToLower(host)
		if p != port || !names[host] && !(anyIP && net.ParseIP(host) != nil) {
			http.Error(w, "this server answers to localhost:"+port+", 127.0.0.1:"+port+" or the address it listens on, not to "+r.Host,
				http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
