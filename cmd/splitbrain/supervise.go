package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"splitbrain/internal/netns"
)

// The harness runs as two processes: a supervisor, the one started, and
// the worker it starts from the same binary, which does everything. The Go
// runtime ends a crash (an out-of-memory error, a panic, a fatal error,
// SIGQUIT) with exit code 2, which here means an unknown verdict; the
// supervisor, told of the crash through a pipe the runtime copies it to
// (debug.SetCrashOutput), exits 255 instead: an internal failure.

// workerEnv marks the worker; its value is the descriptor of the crash
// pipe.
const workerEnv = "SPLITBRAIN_WORKER_CRASH_FD"

// crashFD is the worker's descriptor of the crash pipe.
const crashFD = 3

// supervised reports whether a command line runs under a supervisor: not
// the help and the listing, which judge nothing and could only crash at
// once — also a command's help asked for by flag ("run -h"), which run
// turns into "help run": a second process would only print the page.
func supervised(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "help", "-h", "--help", "list":
		return false
	}
	if _, known := commandUsage[args[0]]; known && wantsHelp(args[1:]) {
		return false
	}
	return true
}

// becomeWorker, in the worker, sends the runtime's crash report to the
// supervisor too. It reports whether this process is the worker.
func becomeWorker() bool {
	if os.Getenv(workerEnv) == "" {
		return false
	}
	os.Unsetenv(workerEnv)
	enterNetwork()
	// Before any exec: a redis-server holding the pipe open would keep
	// the supervisor waiting for its end.
	syscall.CloseOnExec(crashFD)
	f := os.NewFile(crashFD, "crash")
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		fmt.Fprintf(os.Stderr, "splitbrain: warning: a crash will exit 2, not 255: %v\n", err)
	}
	f.Close() // SetCrashOutput keeps its own copy
	return true
}

// supervise runs args in a worker and returns the exit code: the
// worker's, or 255 if it crashed or was killed. ok is false if no worker
// could be started; the caller then runs args itself.
func supervise(args []string) (code int, ok bool) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, false
	}
	defer r.Close()
	worker := func(net string, isolate bool) *exec.Cmd {
		cmd := exec.Command(selfPath(), args...)
		cmd.Args[0] = os.Args[0]
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.ExtraFiles = []*os.File{w} // fd 3 = crashFD
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", workerEnv, crashFD), networkEnv+"="+net)
		// Killed outright (SIGKILL), the supervisor takes the worker
		// along, as a killed harness always did.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if isolate {
			netns.Isolate(cmd.SysProcAttr)
		}
		return cmd
	}
	// Pdeathsig follows the thread that started the worker, so this
	// goroutine keeps its thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The worker handles the signals; the supervisor must not die of
	// them. A terminal's signals reach both (one process group); one sent
	// to the supervisor alone (kill PID, timeout) is passed on. SIGPIPE
	// is not: the supervisor writes nothing.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	var cmd *exec.Cmd
	switch {
	case os.Getenv(ownNetworkEnv) == "1":
		cmd = worker(netOwn, false)
	case wantsPrivateNetwork(args):
		cmd = worker(netPrivate, true)
		if err := cmd.Start(); err != nil {
			// The worker says so, and refuses the local backend, unless
			// told to run on the shared loopback.
			cmd = worker(netShared+": "+netns.Explain(err), false)
		}
	default:
		cmd = worker(netShared+": this command plays on the Docker backend", false)
	}
	if cmd.Process == nil {
		if err := cmd.Start(); err != nil {
			w.Close()
			return 0, false
		}
	}
	w.Close()
	crash := make(chan []byte, 1)
	go func() {
		// Read as the worker writes: a goroutine dump can fill the pipe.
		b, _ := io.ReadAll(io.LimitReader(r, 1<<20))
		_, _ = io.Copy(io.Discard, r)
		crash <- b
	}()
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	for waiting := true; waiting; {
		select {
		case s := <-sigs:
			if s != syscall.SIGPIPE {
				_ = cmd.Process.Signal(s)
			}
		case <-done:
			waiting = false
		}
	}
	// The pipe ends with the worker; a deadline in case something it
	// started holds it after all.
	_ = r.SetReadDeadline(time.Now().Add(2 * time.Second))
	report := <-crash
	st := cmd.ProcessState
	switch {
	case len(report) > 0:
		fmt.Fprintf(os.Stderr, "splitbrain: the harness crashed (above): an internal failure, exit 255, not a verdict; the next start removes the nodes it left\n")
		return exitInternal, true
	case st.ExitCode() < 0:
		fmt.Fprintf(os.Stderr, "splitbrain: the harness was killed (%v): an internal failure, exit 255, not a verdict; the next start removes the nodes it left\n", st)
		return exitInternal, true
	}
	return st.ExitCode(), true
}

// selfPath is this binary, to start the worker from: its path, under which
// ps and pgrep show the worker as splitbrain, unless the file there is no
// longer this binary (rebuilt or removed since), then /proc/self/exe,
// which always is.
func selfPath() string {
	const self = "/proc/self/exe"
	path, err := os.Executable()
	if err != nil {
		return self
	}
	a, err := os.Stat(path)
	if err != nil {
		return self
	}
	b, err := os.Stat(self)
	if err != nil || !os.SameFile(a, b) {
		return self
	}
	return path
}
