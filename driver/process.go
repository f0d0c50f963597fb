package driver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"splitbrain/cluster"
)

// Config starts one driver process, for one client.
type Config struct {
	// Command is the program and its arguments.
	Command []string
	// Name names the driver in errors: the scenario's lock kind, or the
	// command as written.
	Name string
	// Client is the client the process serves (c1, c2, ...).
	Client string
	// Describe starts the driver to ask what it claims (Describe): its
	// hello carries nothing but the protocol, the client and describe.
	Describe bool
	// Server and Deployment are the kind of server the client talks to
	// and how the lock's nodes are deployed (hello's server and
	// deployment); empty: redis over every node, protocol 1's only lock.
	Server     string
	Deployment string
	// Nodes are the servers, as this client reaches them (its proxies).
	Nodes []Node
	// User is who the client authenticates as, where the kind has users.
	User string
	// Sentinel is how the client finds the master, for server sentinel.
	Sentinel *SentinelInfo
	// SessionTimeout is the ZooKeeper session timeout to ask for, and TTL
	// the story's lock.ttl.
	SessionTimeout time.Duration
	TTL            time.Duration
	// Password is the run's password, sent in hello (never on the command
	// line or in the environment, where other users could read it).
	Password    string
	NodeTimeout time.Duration
	Retries     int
	// Live, if set, registers the process so that the next start reaps
	// it if the harness dies; it also marks the process's environment.
	Live *cluster.LiveRun
	// Log receives the transcript (every line either way, the password
	// masked) and the driver's stderr; nil discards them.
	Log io.Writer
	// ReplyTimeout bounds the wait for each reply, not counting the time
	// the driver is held at a point or stopped by the harness; zero means
	// DefaultReplyTimeout. No reply in time is an unknown outcome.
	ReplyTimeout time.Duration
	// StartTimeout bounds the wait for ready; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultReplyTimeout = 10 * time.Second
	DefaultStartTimeout = 30 * time.Second
	// stopGrace is how long a driver has to exit once its stdin is
	// closed before it is killed.
	stopGrace  = 2 * time.Second
	stderrTail = 2000
	// maxStderrLog bounds what of a driver's stderr the log keeps.
	maxStderrLog = 1 << 20
)

// Error is a driver process that broke the protocol or died: every
// request from then on fails with it, an unknown outcome.
type Error struct {
	Client string
	Driver string
	// Problem says what happened, in words.
	Problem string
	// Line is the offending line, if one.
	Line []byte
	// Exit is how the process ended ("exit status 3", "signal: killed"),
	// if it did.
	Exit string
	// Stderr is the end of what it wrote to stderr.
	Stderr string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "driver %s of %s: %s", e.Driver, e.Client, e.Problem)
	if e.Line != nil {
		fmt.Fprintf(&b, ": %s", Quote(e.Line))
	}
	if e.Exit != "" {
		fmt.Fprintf(&b, " (%s)", e.Exit)
	}
	if e.Stderr != "" {
		fmt.Fprintf(&b, "; its stderr ended:\n%s", e.Stderr)
	}
	return b.String()
}

// ErrNoAnswer: the driver did not answer a request in time; its outcome
// is unknown.
var ErrNoAnswer = errors.New("no answer in time")

// Gate is where the harness holds a client that announced a point: the
// client's gate of client pauses. At returns when the client may go on.
type Gate interface {
	At(ctx context.Context, point string)
}

// Proc is one running driver process.
type Proc struct {
	cfg   Config
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan line
	// quit is closed by Stop: nobody reads lines any more.
	quit chan struct{}
	// waited is closed once the process has exited and been waited for;
	// exited once its stdout and stderr were read to the end too.
	waited chan struct{}
	// exited is closed once the process has been waited for.
	exited chan struct{}
	exit   string

	tail   tailBuffer
	logMu  sync.Mutex
	stdinM sync.Mutex

	ready Message

	mu        sync.Mutex
	broken    *Error
	nextID    int64
	abandoned map[int64]bool
	stopped   bool // SIGSTOPped by the harness
	stopOnce  sync.Once
	stopErr   error

	// lost holds, by lease value, what the driver said of loss: a
	// channel closed when it says lost, made by the first of the lease
	// (LostChan) or the lost message, whichever comes first — a lost
	// can follow its acquire's reply before the harness has read it.
	lost map[string]*lostNote

	// own is the cgroup every process the driver starts runs in; nil
	// where the machine gives none (the driver's session instead).
	own *owner
	// stderrLogged counts the bytes of stderr written to the log.
	stderrLogged int
}

// lostNote is one lease's loss: ch is closed once the driver said lost.
type lostNote struct {
	ch   chan struct{}
	said bool
}

type line struct {
	raw []byte
	msg Message
	err error // garbage; io.EOF: stdout closed
}

// Start starts the driver and says hello; it returns once the driver is
// ready. On error nothing is left running.
func Start(ctx context.Context, cfg Config) (_ *Proc, err error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("driver: empty command")
	}
	if cfg.Name == "" {
		cfg.Name = strings.Join(cfg.Command, " ")
	}
	if cfg.ReplyTimeout <= 0 {
		cfg.ReplyTimeout = DefaultReplyTimeout
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	env := os.Environ()
	if cfg.Live != nil {
		env = cfg.Live.MarkedEnv(env)
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own session and process group: a Ctrl-C in the terminal
		// reaches the harness only, which then stops its drivers in
		// order; a real pause stops the whole group.
		Setsid: true,
		// If the harness dies without cleaning up, take the driver along;
		// the live registry and the cgroups' reaping cover what this
		// misses.
		Pdeathsig: syscall.SIGKILL,
	}
	var tlsFiles *TLSFiles
	if cfg.Server == ServerEtcd && !cfg.Describe {
		var err error
		if tlsFiles, err = writeTLS(cfg); err != nil {
			return nil, fmt.Errorf("driver %s of %s: %w", cfg.Name, cfg.Client, err)
		}
	}
	// The process's waiter removes the files once it runs; until then, a
	// failed start does.
	tlsHandedOver := false
	defer func() {
		if !tlsHandedOver {
			removeTLS(tlsFiles)
		}
	}()
	own, ownErr := newOwner()
	if own != nil {
		own.attr(cmd.SysProcAttr)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", cfg.Name, err)
	}
	// Pipes of the harness's own, not exec's: Wait must not wait for
	// them, since a descendant of the driver can hold their write ends
	// open long after the driver exited.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", cfg.Name, err)
	}
	stderr, stderrW, err := os.Pipe()
	if err != nil {
		stdout.Close()
		stdoutW.Close()
		return nil, fmt.Errorf("driver %s: %w", cfg.Name, err)
	}
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdout.Close()
		stderr.Close()
		if own != nil {
			_ = own.remove()
		}
		return nil, fmt.Errorf("driver %s of %s: starting %s: %w", cfg.Name, cfg.Client, cfg.Command[0], err)
	}
	p := &Proc{cfg: cfg, cmd: cmd, stdin: stdin, lines: make(chan line, 16),
		quit: make(chan struct{}), waited: make(chan struct{}), exited: make(chan struct{}), abandoned: map[int64]bool{}, lost: map[string]*lostNote{}, own: own}
	defer func() {
		if err != nil {
			_ = p.Stop(context.WithoutCancel(ctx))
		}
	}()
	tlsHandedOver = true
	var streams sync.WaitGroup
	streams.Go(func() { p.readStdout(stdout) })
	streams.Go(func() { p.readStderr(stderr) })
	go func() {
		werr := cmd.Wait()
		p.exit = "exit status 0"
		if werr != nil {
			p.exit = werr.Error()
		}
		close(p.waited)
		// Read what it wrote to the end, unless a descendant keeps the
		// pipes open: then stop waiting for them.
		drained := make(chan struct{})
		go func() { streams.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(stopGrace):
			p.logf("# its stdout or stderr still open %v after it exited (a process it started holds them): no longer read", stopGrace)
		}
		// Closing them ends a read still blocked on a pipe a descendant
		// holds open.
		stdout.Close()
		stderr.Close()
		<-drained
		p.logf("# process exited: %s", p.exit)
		// Its TLS material goes with it (a kill of its client is a new
		// process, with material of its own).
		removeTLS(tlsFiles)
		close(p.exited)
	}()
	if own == nil {
		p.logf("# %v: the driver has a session of its own, which a process it starts can leave", ownErr)
	}
	if cfg.Live != nil {
		if err := cfg.Live.AddPID(p.pidName(), cmd.Process.Pid); err != nil {
			return nil, fmt.Errorf("driver %s of %s: %w", cfg.Name, cfg.Client, err)
		}
	}
	p.logf("# started %s (pid %d)", strings.Join(cfg.Command, " "), cmd.Process.Pid)
	hello := Request{Op: OpHello, Protocol: Version, Client: cfg.Client, Server: cfg.Server, Deployment: cfg.Deployment,
		Nodes: cfg.Nodes, User: cfg.User, Password: cfg.Password, Sentinel: cfg.Sentinel, TLS: tlsFiles,
		SessionTimeoutMS: ms(cfg.SessionTimeout), TTLMS: ms(cfg.TTL), NodeTimeoutMS: ms(cfg.NodeTimeout), Retries: cfg.Retries}
	if cfg.Describe {
		hello = Request{Op: OpHello, Protocol: Version, Client: cfg.Client, Describe: true}
	}
	if err := p.send(hello); err != nil {
		return nil, p.fail("could not be sent hello: " + err.Error())
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	for {
		select {
		case l := <-p.lines:
			switch {
			case l.err == io.EOF:
				return nil, p.died("closed its stdout before saying ready")
			case l.err != nil:
				return nil, p.garbage(l, "printed a line that is not the protocol instead of ready: "+l.err.Error())
			case l.msg.Op != OpReady:
				return nil, p.garbage(l, fmt.Sprintf("answered hello with %q, want ready", l.msg.Op))
			}
			p.mu.Lock()
			p.ready = l.msg
			p.mu.Unlock()
			if s := cfg.Server; s != "" && len(l.msg.Servers) > 0 && !slices.Contains(l.msg.Servers, s) {
				return nil, p.garbage(l, fmt.Sprintf("said ready for servers %v when hello asked for %s", l.msg.Servers, s))
			}
			return p, nil
		case <-sctx.Done():
			if ctx.Err() != nil {
				return nil, fmt.Errorf("driver %s of %s: start: %w", cfg.Name, cfg.Client, ctx.Err())
			}
			return nil, p.fail(fmt.Sprintf("did not say ready within %v of hello", cfg.StartTimeout))
		}
	}
}

func (p *Proc) pidName() string { return "driver-" + p.cfg.Client }

// Pid is the driver's process id (and process group).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// CPUWaited is how long, in all, the driver's processes had work and
// waited for a CPU since it started: the kernel's count of the driver
// starved (its cgroup's cpu.pressure), which the harness cannot see from
// its own scheduling. An error where the driver has no cgroup of its own
// (Owned) or the kernel keeps no such count.
func (p *Proc) CPUWaited() (time.Duration, error) {
	if p.own == nil {
		return 0, errors.New("the driver has no cgroup of its own, so no count of its waiting for a CPU")
	}
	return p.own.cpuWaited()
}

// Name is the driver's name as its ready said it, else as configured.
func (p *Proc) Name() string {
	if p.ready.Name != "" {
		return p.ready.Name
	}
	return p.cfg.Name
}

// Points are the points the driver said it announces.
func (p *Proc) Points() []string { return p.ready.Points }

// Ready is the driver's ready: what it claims.
func (p *Proc) Ready() Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready
}

// LostChan is closed when the driver says the lease of value is lost;
// nil for a driver whose ready does not claim lost (it tells nothing).
func (p *Proc) LostChan(value string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ready.Lost {
		return nil
	}
	return p.lostNote(value).ch
}

// ForgetLost drops what is kept of the lease of value, once released.
func (p *Proc) ForgetLost(value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.lost, value)
}

// lostNote is value's note, made if new; p.mu held.
func (p *Proc) lostNote(value string) *lostNote {
	n := p.lost[value]
	if n == nil {
		n = &lostNote{ch: make(chan struct{})}
		p.lost[value] = n
	}
	return n
}

// sayLost acts on a lost message; false when the driver did not claim
// lost in its ready, which makes the message a protocol error.
func (p *Proc) sayLost(value string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ready.Lost {
		return false
	}
	select {
	case <-p.quit:
		// Said after Stop closed the driver's stdin: the play is over,
		// and a library that ends its leases as it closes (kazoo's
		// client goes LOST at its stop) tells no one anything — a
		// client that acted on it would release through a closed pipe.
		p.logf("# a lost after the driver was told to stop: ignored")
		return true
	default:
	}
	if n := p.lostNote(value); !n.said {
		n.said = true
		close(n.ch)
	}
	return true
}

func (p *Proc) readStdout(r io.Reader) {
	br := bufio.NewReaderSize(r, 4096)
	for {
		raw, err := readLine(br)
		if len(raw) > 0 || (err == nil) {
			p.logf("< %s", raw)
			l := line{raw: raw}
			if err == errLong {
				l.err = fmt.Errorf("a line longer than %d bytes", MaxLine)
			} else {
				l.msg, l.err = ParseMessage(raw)
			}
			// A lost answers no request: it is acted on here, whatever
			// request is in progress, and never waits for one.
			if l.err == nil && l.msg.Op == OpLost {
				if p.sayLost(l.msg.Value) {
					continue
				}
				l.err = errors.New(`a lost from a driver whose ready did not claim "lost"`)
			}
			if !p.deliver(l) {
				_, _ = io.Copy(io.Discard, r)
				return
			}
			if err == errLong {
				_, _ = io.Copy(io.Discard, r)
				err = io.EOF
			}
		}
		if err != nil {
			p.deliver(line{err: io.EOF})
			return
		}
	}
}

// deliver hands l to the caller waiting for it; false once Stop was
// called and nobody will.
func (p *Proc) deliver(l line) bool {
	select {
	case p.lines <- l:
		return true
	case <-p.quit:
		return false
	}
}

var errLong = errors.New("line too long")

// readLine reads one line without its newline; errLong past MaxLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > MaxLine {
			return out[:MaxLine], errLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		out = []byte(strings.TrimRight(string(out), "\r\n"))
		if err != nil && len(out) == 0 {
			return nil, err
		}
		return out, err
	}
}

func (p *Proc) readStderr(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxLine)
	for sc.Scan() {
		p.tail.add(sc.Text())
		// The log keeps the first maxStderrLog bytes: a driver that
		// floods its stderr must not fill the disk (its tail is kept for
		// the errors all the same).
		// The log's line: time, client, "! ", the line, a newline.
		switch n := len("15:04:05.000000 ") + len(p.cfg.Client) + len(" ! ") + len(sc.Bytes()) + 1; {
		case p.stderrLogged+n <= maxStderrLog:
			p.stderrLogged += n
			p.logf("! %s", sc.Text())
		case p.stderrLogged <= maxStderrLog:
			p.stderrLogged = maxStderrLog + 1
			p.logf("# its stderr passed %d bytes: the rest is not logged (its last lines are kept for errors)", maxStderrLog)
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

func (p *Proc) logf(format string, args ...any) {
	if p.cfg.Log == nil {
		return
	}
	p.logMu.Lock()
	defer p.logMu.Unlock()
	fmt.Fprintf(p.cfg.Log, "%s %s "+format+"\n", append([]any{time.Now().Format("15:04:05.000000"), p.cfg.Client}, args...)...)
}

func (p *Proc) send(req Request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	shown := req
	if shown.Password != "" {
		shown.Password = "***"
	}
	sb, _ := json.Marshal(shown)
	p.logf("> %s", sb)
	p.stdinM.Lock()
	defer p.stdinM.Unlock()
	_, err = p.stdin.Write(append(b, '\n'))
	return err
}

// fail marks the driver broken with problem and returns the error.
func (p *Proc) fail(problem string) *Error {
	return p.breakWith(&Error{Client: p.cfg.Client, Driver: p.cfg.Name, Problem: problem})
}

func (p *Proc) garbage(l line, problem string) *Error {
	return p.breakWith(&Error{Client: p.cfg.Client, Driver: p.cfg.Name, Problem: problem, Line: l.raw})
}

// died waits a moment for the process's exit status and reports it with
// its stderr's tail.
func (p *Proc) died(problem string) *Error {
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
	}
	e := &Error{Client: p.cfg.Client, Driver: p.cfg.Name, Problem: problem, Stderr: p.tail.String()}
	select {
	case <-p.exited:
		e.Exit = p.exit
	default:
		e.Exit = "still running"
	}
	return p.breakWith(e)
}

func (p *Proc) breakWith(e *Error) *Error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken == nil {
		p.broken = e
		p.logf("# broken: %v", e)
	}
	return p.broken
}

// Broken is the error that broke the driver, or nil.
func (p *Proc) Broken() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken == nil {
		return nil
	}
	return p.broken
}

// Reply is a driver's answer to one request.
type Reply struct {
	Message
	// At is when the harness read it, on its monotonic clock.
	At time.Time
	// Slack is how much earlier the driver may have written it: the time
	// since the request (or the last go-ahead at a point) was sent. A
	// validity converted at At is late by at most Slack.
	Slack time.Duration
	// Written is when the driver wrote it, on the harness's clock: At
	// less the reply's age by its mono_ns, within Slack; At when it
	// says none.
	Written time.Time
}

// written is when a reply read at at, sent at most slack before, was
// written by a driver that stamped it mono (CLOCK_MONOTONIC) and read
// now on the same clock: the age is clamped to [0, slack], so that a
// stamp from a clock not the harness's (a driver on another machine)
// can move the moment no further than the request's own bounds.
func written(at time.Time, mono, now int64, slack time.Duration) time.Time {
	age := time.Duration(now - mono)
	return at.Add(-min(max(age, 0), slack))
}

// Call sends req (its id set here) and waits for its reply, holding the
// driver at gate whenever it announces a point. No reply within the
// reply timeout (the time held at points and stopped by the harness not
// counted) is ErrNoAnswer; a broken or dead driver is *Error. Either way
// the outcome is unknown.
func (p *Proc) Call(ctx context.Context, req Request, gate Gate) (Reply, error) {
	if err := p.Broken(); err != nil {
		return Reply{}, err
	}
	p.mu.Lock()
	p.nextID++
	req.ID = p.nextID
	p.mu.Unlock()
	if err := p.send(req); err != nil {
		return Reply{}, p.died(fmt.Sprintf("could not be sent %s #%d: %v", req.Op, req.ID, err))
	}
	sent := time.Now()
	timer := time.NewTimer(p.cfg.ReplyTimeout)
	defer timer.Stop()
	// A point is reached once per attempt: an acquire makes up to
	// retries of them, a release or an extension one. A point announced
	// more often is a driver's mistake (a two-phase acquire announcing
	// after-replies after each phase), which would hold the client at
	// the wrong moment.
	reached := map[string]int{}
	attempts := 1
	if req.Op == OpAcquire {
		attempts = max(1, p.cfg.Retries)
	}
	for {
		select {
		case l := <-p.lines:
			switch {
			case l.err == io.EOF:
				return Reply{}, p.died(fmt.Sprintf("exited before answering %s #%d", req.Op, req.ID))
			case l.err != nil:
				return Reply{}, p.garbage(l, fmt.Sprintf("printed a line that is not the protocol while %s #%d was asked (%v)", req.Op, req.ID, l.err))
			}
			m := l.msg
			if m.Op == OpReady {
				return Reply{}, p.garbage(l, "said ready again")
			}
			if m.ID != req.ID {
				if p.wasAbandoned(m.ID) {
					p.logf("# a late %s of #%d, which had no answer in time: ignored", m.Op, m.ID)
					if m.Op == OpPoint {
						_ = p.send(Request{Op: OpGo, ID: m.ID, Point: m.Point})
					}
					continue
				}
				return Reply{}, p.garbage(l, fmt.Sprintf("answered #%d, a request never sent or already answered, while %s #%d was asked", m.ID, req.Op, req.ID))
			}
			if m.Op == OpPoint {
				if reached[m.Point]++; reached[m.Point] > attempts {
					return Reply{}, p.garbage(l, fmt.Sprintf("announced point %s %d times in %s #%d, which makes %d attempt(s): a point is reached once per attempt",
						m.Point, reached[m.Point], req.Op, req.ID, attempts))
				}
				timer.Stop()
				if gate != nil {
					gate.At(ctx, m.Point)
				}
				if err := p.send(Request{Op: OpGo, ID: m.ID, Point: m.Point}); err != nil {
					return Reply{}, p.died(fmt.Sprintf("could not be sent the go-ahead at %s of #%d: %v", m.Point, req.ID, err))
				}
				sent = time.Now()
				timer.Reset(p.cfg.ReplyTimeout)
				continue
			}
			at, now := time.Now(), Monotonic()
			r := Reply{Message: m, At: at, Slack: at.Sub(sent), Written: at}
			if m.MonoNS != nil && now != 0 {
				r.Written = written(at, *m.MonoNS, now, r.Slack)
			}
			return r, nil
		case <-timer.C:
			if p.isStopped() {
				// Stopped by the harness: the time does not count.
				timer.Reset(p.cfg.ReplyTimeout)
				continue
			}
			p.abandon(req.ID)
			return Reply{}, fmt.Errorf("driver %s of %s: %s #%d: %w (%v)", p.cfg.Name, p.cfg.Client, req.Op, req.ID, ErrNoAnswer, p.cfg.ReplyTimeout)
		case <-ctx.Done():
			p.abandon(req.ID)
			return Reply{}, fmt.Errorf("driver %s of %s: %s #%d: %w", p.cfg.Name, p.cfg.Client, req.Op, req.ID, ctx.Err())
		}
	}
}

func (p *Proc) abandon(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.abandoned[id] = true
}

func (p *Proc) wasAbandoned(id int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.abandoned[id]
}

func (p *Proc) isStopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

// Pause stops the driver's process group with SIGSTOP: a real pause, at
// whatever instruction it is. It returns once every thread of the group
// has stopped: kill(2) only queues the signal, the stop begins when the
// thread the kernel chose to take it runs, and meanwhile the others run
// on. A pause at a point is followed at once by the point's "go", and
// under load (19 on 2 cores, a dense suite of 10 runs) Curator's reader
// thread took that "go" and answered its acquire 1 ms after the SIGSTOP
// was sent: the harness saw the grant, its client went on to release,
// and the pause froze nothing of the story.
func (p *Proc) Pause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pgid := p.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("driver %s of %s: SIGSTOP: %w", p.cfg.Name, p.cfg.Client, err)
	}
	p.stopped = true
	p.logf("# SIGSTOP")
	if err := waitGroupStopped(pgid, stopTimeout); err != nil {
		return fmt.Errorf("driver %s of %s: SIGSTOP: %w", p.cfg.Name, p.cfg.Client, err)
	}
	return nil
}

// stopResend is how often waitGroupStopped signals the group again while
// a thread of it runs: a process the group forks after the first signal
// (a shell starting its next command) never got it.
const stopResend = 100 * time.Millisecond

// stopTimeout bounds the wait for a SIGSTOP to take effect: the threads
// of a stopped group stop within a scheduling round, tens of
// milliseconds on a loaded machine.
const stopTimeout = 5 * time.Second

// waitGroupStopped waits until every thread of every process in process
// group pgid is stopped (state T, or t when traced), as /proc says.
func waitGroupStopped(pgid int, timeout time.Duration) error {
	start := time.Now()
	deadline, resend := start.Add(timeout), start.Add(stopResend)
	for {
		running, err := groupRunning(pgid)
		if err != nil || running == "" {
			return err
		}
		now := time.Now()
		if now.After(deadline) {
			return fmt.Errorf("thread %s of process group %d still runs %v after the signal", running, pgid, timeout)
		}
		if now.After(resend) {
			// Stopping a stopped process does nothing: only what runs
			// yet is concerned.
			_ = syscall.Kill(-pgid, syscall.SIGSTOP)
			resend = now.Add(stopResend)
		}
		time.Sleep(time.Millisecond)
	}
}

// groupRunning names a thread (pid/tid) of process group pgid that is
// not stopped, or "" when all are. A process or thread that exits
// meanwhile is skipped.
func groupRunning(pgid int) (string, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return "", fmt.Errorf("reading /proc: %w", err)
	}
	for _, pe := range procs {
		pid, err := strconv.Atoi(pe.Name())
		if err != nil {
			continue
		}
		_, group, ok := procStat(filepath.Join("/proc", pe.Name(), "stat"))
		if !ok || group != pgid {
			continue
		}
		tasks, err := os.ReadDir(filepath.Join("/proc", pe.Name(), "task"))
		if err != nil {
			continue // exited
		}
		for _, te := range tasks {
			state, _, ok := procStat(filepath.Join("/proc", pe.Name(), "task", te.Name(), "stat"))
			// D, uninterruptible sleep, counts as stopped: the thread
			// runs nothing of its own before it leaves the kernel, and
			// then stops at once, the SIGSTOP pending. A shell blocked
			// in vfork until its child execs stays in D while that
			// child is stopped too (seen: a driver's sh in D for 15 s).
			if ok && state != 'T' && state != 't' && state != 'Z' && state != 'X' && state != 'D' {
				return strconv.Itoa(pid) + "/" + te.Name(), nil
			}
		}
	}
	return "", nil
}

// procStat reads a /proc stat file's state and process group: the fields
// after the command name, which is in parentheses and may hold any byte
// (so the last ")" ends it).
func procStat(path string) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// state ppid pgrp ...
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], g, true
}

// Resume continues the driver's process group with SIGCONT.
func (p *Proc) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
	p.stopped = false
	p.logf("# SIGCONT")
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("driver %s of %s: SIGCONT: %w", p.cfg.Name, p.cfg.Client, err)
	}
	return nil
}

// Kill kills the driver's process group (SIGKILL), as a crash would.
func (p *Proc) Kill() error {
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// Exited is closed once the process has exited and been waited for.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// ExitStatus is how the process ended, once Exited is closed.
func (p *Proc) ExitStatus() string {
	select {
	case <-p.exited:
		return p.exit
	default:
		return ""
	}
}

// Stderr is the end of the driver's stderr.
func (p *Proc) Stderr() string { return p.tail.String() }

// Stop ends the driver: its stdin is closed, which tells it to exit; a
// driver still running after a grace period (or when ctx ends) is killed
// with its process group, and Stop says so. It is safe to call more than
// once.
func (p *Proc) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() {
		close(p.quit)
		_ = p.Resume() // a stopped driver cannot read its EOF
		p.stdinM.Lock()
		_ = p.stdin.Close()
		p.stdinM.Unlock()
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-p.waited:
		case <-t.C:
		case <-ctx.Done():
		}
		select {
		case <-p.waited:
		default:
			p.logf("# still running %v after its stdin closed: killed", stopGrace)
			p.stopErr = fmt.Errorf("driver %s of %s: still running %v after its stdin closed: killed", p.cfg.Name, p.cfg.Client, stopGrace)
			_ = p.Kill()
			<-p.waited
		}
		// The group too: whatever the driver started goes with it; and
		// its cgroup, whatever left the group.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		if p.own != nil {
			if err := p.own.killAll(); err != nil {
				p.stopErr = errors.Join(p.stopErr, fmt.Errorf("driver %s of %s: %w", p.cfg.Name, p.cfg.Client, err))
			} else if err := p.own.remove(); err != nil {
				p.stopErr = errors.Join(p.stopErr, fmt.Errorf("driver %s of %s: %w", p.cfg.Name, p.cfg.Client, err))
			}
		}
		// Its pipes, once whatever held them is gone (or the wait for
		// them is given up).
		<-p.exited
		if p.cfg.Live != nil {
			p.cfg.Live.RemovePID(p.pidName())
		}
	})
	return p.stopErr
}

// tailBuffer keeps the last lines of a stream, up to stderrTail bytes.
type tailBuffer struct {
	mu    sync.Mutex
	lines []string
	size  int
}

func (t *tailBuffer) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(s) > stderrTail {
		s = s[len(s)-stderrTail:]
	}
	t.lines = append(t.lines, s)
	t.size += len(s) + 1
	for t.size > stderrTail && len(t.lines) > 1 {
		t.size -= len(t.lines[0]) + 1
		t.lines = t.lines[1:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
