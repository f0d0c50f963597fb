package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// stopSignals stop a run, a suite or serve as Ctrl-C does: the plays in
// flight heal, clean up and write their report and result. SIGHUP is a
// closed terminal (or ssh session): dying of it would lose the run and
// leave its cluster for the next start to reap.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// keepSIGPIPE keeps the process alive when its stdout or stderr is a pipe
// whose reader has gone (`splitbrain run … | head -1`): by default the Go
// runtime dies of SIGPIPE at the next write to fd 1 or 2. Once SIGPIPE is
// notified, that write fails with EPIPE instead, which stopWriter turns
// into a stop. The signal itself is not a stop: every write to a
// connection a killed node reset raises it too.
func keepSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// stopContext returns a context that ends at one of stopSignals or at
// the first write to stdout or stderr that finds the reader gone, with
// the writers to use in their place: they drop what no one reads.
func stopContext(stdout, stderr io.Writer) (context.Context, io.Writer, io.Writer, context.CancelFunc) {
	sctx, stopNotify := signal.NotifyContext(context.Background(), stopSignals...)
	ctx, cancel := context.WithCancel(sctx)
	return ctx, &stopWriter{w: stdout, stop: cancel}, &stopWriter{w: stderr, stop: cancel}, func() {
		cancel()
		stopNotify()
	}
}

// stopWriter writes to w until a write finds w a pipe without a reader:
// then it calls stop and drops the rest. A closed stdout is not a reason
// to lose a run, so the error is not passed on.
type stopWriter struct {
	w      io.Writer
	stop   func()
	closed atomic.Bool
}

func (s *stopWriter) Write(p []byte) (int, error) {
	if s.closed.Load() {
		return len(p), nil
	}
	n, err := s.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		s.closed.Store(true)
		s.stop()
		return len(p), nil
	}
	return n, err
}
