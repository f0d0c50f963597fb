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

	"splitbrain/results"
)

// defaultServeAddr keeps the store on this machine unless asked otherwise:
// run folders hold histories and node logs.
const defaultServeAddr = "127.0.0.1:8040"

type serveFlags struct {
	store string
	addr  string
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
	h, err := results.NewStoreHandler(f.store)
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
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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
