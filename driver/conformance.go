package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/workload"
)

// CheckConfig is a conformance check of one driver.
type CheckConfig struct {
	// Command runs the driver.
	Command []string
	// Name names it in the output; empty: the command.
	Name string
	// Nodes is how many redis-server nodes it gets (a lock of one
	// deployment uses the first); zero means 3.
	Nodes int
	// TTL of the checks' leases; zero means 1s.
	TTL time.Duration
	// ReplyTimeout: see Config; zero means DefaultReplyTimeout.
	ReplyTimeout time.Duration
	// Dir receives the nodes' logs and the drivers' transcripts.
	Dir string
	// CacheDir holds the clock shim and the live-run registry.
	CacheDir string
}

// Finding is the outcome of one check.
type Finding struct {
	Name string
	// Status is "ok", "FAIL" or "skip".
	Status string
	Detail string
}

// Failed reports whether any finding failed.
func Failed(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Status == "FAIL" })
}

// Check runs the conformance suite against a driver on real nodes: start,
// acquire, refusal, extend, release, a lost lease's release, points, an
// unknown outcome (every node stopped), a kill in the middle of a request
// and the exit at the end of stdin. Each finding is written to out as it
// comes. The error is for the harness's own failures (no redis-server).
func Check(ctx context.Context, cfg CheckConfig, out io.Writer) ([]Finding, error) {
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Second
	}
	if cfg.ReplyTimeout <= 0 {
		cfg.ReplyTimeout = DefaultReplyTimeout
	}
	if cfg.Name == "" {
		cfg.Name = strings.Join(cfg.Command, " ")
	}
	cl, err := local.Start(ctx, cluster.Config{Nodes: cfg.Nodes, Dir: cfg.Dir, CacheDir: cfg.CacheDir})
	if err != nil {
		return nil, err
	}
	defer func() { _ = cl.Close(context.WithoutCancel(ctx)) }()
	cache := cfg.CacheDir
	if cache == "" {
		if cache, err = cluster.DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	live, _, err := cluster.RegisterLive(cache, "drvcheck-"+cluster.RandomHex(8))
	if err != nil {
		return nil, err
	}
	defer func() { _ = live.Remove() }()
	c := &checker{cfg: cfg, cl: cl, live: live, out: out, gates: map[string]*pointLog{}}
	defer c.stopAll(context.WithoutCancel(ctx))
	fmt.Fprintf(out, "driver check: %s on %d redis-server nodes, TTL %v\n", cfg.Name, cfg.Nodes, cfg.TTL)
	c.run(ctx)
	return c.findings, nil
}

type checker struct {
	cfg      CheckConfig
	cl       *local.Cluster
	live     *cluster.LiveRun
	out      io.Writer
	findings []Finding
	procs    []*Proc
	gates    map[string]*pointLog
	logs     []*os.File
	// broken: a check found the driver unusable; the rest are skipped.
	broken bool
}

// pointLog is a gate that lets every point through and remembers it.
type pointLog struct {
	mu     sync.Mutex
	points []string
}

func (g *pointLog) At(_ context.Context, p string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.Contains(g.points, p) {
		g.points = append(g.points, p)
	}
}

func (g *pointLog) seen() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.points)
}

func (c *checker) report(name, status, format string, args ...any) {
	f := Finding{Name: name, Status: status, Detail: fmt.Sprintf(format, args...)}
	c.findings = append(c.findings, f)
	fmt.Fprintf(c.out, "  %-5s %s: %s\n", f.Status, f.Name, strings.ReplaceAll(f.Detail, "\n", "\n          "))
}

func (c *checker) ok(name, format string, args ...any) { c.report(name, "ok", format, args...) }

func (c *checker) fail(name, format string, args ...any) { c.report(name, "FAIL", format, args...) }

// fatal fails a check the rest depend on, and any driver error with it.
func (c *checker) fatal(name string, err error, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	c.fail(name, "%s", msg)
	c.broken = true
}

func (c *checker) start(ctx context.Context, client string) (*Proc, *Lock, error) {
	var nodes []Node
	for _, n := range c.cl.Nodes() {
		nodes = append(nodes, Node{Name: n.Name(), Addr: n.Addr()})
	}
	logf, err := os.OpenFile(filepath.Join(c.cfg.Dir, "driver-"+client+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	c.logs = append(c.logs, logf)
	p, err := Start(ctx, Config{Command: c.cfg.Command, Name: c.cfg.Name, Client: client, Nodes: nodes,
		Password: c.cl.Password(), NodeTimeout: 250 * time.Millisecond, Live: c.live, Log: logf,
		ReplyTimeout: c.cfg.ReplyTimeout})
	if err != nil {
		return nil, nil, err
	}
	c.procs = append(c.procs, p)
	g := c.gates[client]
	if g == nil {
		g = &pointLog{}
		c.gates[client] = g
	}
	return p, &Lock{Proc: p, Gate: g}, nil
}

func (c *checker) stopAll(ctx context.Context) {
	for _, p := range c.procs {
		_ = p.Stop(ctx)
	}
	for _, f := range c.logs {
		_ = f.Close()
	}
}

// setNodes stops (SIGSTOP) or continues every node.
func (c *checker) setNodes(ctx context.Context, stop bool) error {
	for _, n := range c.cl.Processes() {
		var err error
		if stop {
			err = n.Pause(ctx)
		} else {
			err = n.Resume(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// validity checks a lease's deadline against the TTL asked for; the call
// that returned it was made between before and after. The deadline is the
// driver's validity added to the moment the harness read the reply, later
// than the driver wrote it by as long as the reply waited to be read (on
// a loaded machine, once 157 ms): too long a validity is judged from
// after, which can only shorten it, and an expired one from before.
func (c *checker) validity(l *workload.Lease, before, after time.Time) string {
	if l.Deadline.IsZero() {
		return "no validity_ms: the belief lasts until the release"
	}
	v, least := l.Deadline.Sub(before), l.Deadline.Sub(after)
	switch {
	case least > c.cfg.TTL+c.cfg.TTL/10:
		return fmt.Sprintf("BAD validity %v, more than the TTL %v asked for", least.Round(time.Millisecond), c.cfg.TTL)
	case v <= 0:
		return fmt.Sprintf("BAD validity %v: the lease came back expired", v.Round(time.Millisecond))
	}
	return fmt.Sprintf("validity %v of %v", v.Round(time.Millisecond), c.cfg.TTL)
}

func (c *checker) run(ctx context.Context) {
	ttl := c.cfg.TTL
	p1, l1, err := c.start(ctx, "c1")
	if err != nil {
		c.fatal("start", err, "c1's driver did not start")
		return
	}
	_, l2, err := c.start(ctx, "c2")
	if err != nil {
		c.fatal("start", err, "c2's driver did not start")
		return
	}
	c.ok("start", "ready as %q, announces points %v", p1.Name(), p1.Points())

	before := time.Now()
	lease, err := l1.Acquire(ctx, "check:a", ttl)
	after := time.Now()
	if err != nil {
		c.fatal("acquire", err, "c1's acquire of a free key was not granted")
		return
	}
	if v := c.validity(lease, before, after); strings.HasPrefix(v, "BAD") {
		c.fail("acquire", "granted, value %q, %s", lease.Value, v)
	} else {
		c.ok("acquire", "granted, value %q, %s", lease.Value, v)
	}

	switch _, err := l2.Acquire(ctx, "check:a", ttl); {
	case err == nil:
		c.fail("refusal", "c2 was granted the key c1 holds: the lock is not exclusive")
	case errors.Is(err, workload.ErrNotAcquired):
		c.ok("refusal", "c2 refused while c1 holds the key (%s)", firstLine(err))
	default:
		c.fatal("refusal", err, "c2's acquire of a held key should be a fail, was an unknown outcome")
		return
	}

	before = time.Now()
	ext, err := l1.Extend(ctx, lease, ttl)
	after = time.Now()
	if err != nil {
		c.fail("extend", "c1's extension of its live lease was not granted: %v", err)
		ext = lease
	} else if v := c.validity(ext, before, after); strings.HasPrefix(v, "BAD") {
		c.fail("extend", "%s", v)
	} else {
		c.ok("extend", "extended, %s", v)
	}

	if err := l1.Release(ctx, ext); err != nil {
		c.fatal("release", err, "c1's release of its live lease failed")
		return
	}
	l2lease, err := l2.Acquire(ctx, "check:a", ttl)
	if err != nil {
		c.fail("release", "released, but c2 could not take the key after it: %v", err)
	} else {
		c.ok("release", "released; c2 took the key after it")
		_ = l2.Release(ctx, l2lease)
	}

	switch err := l1.Release(ctx, ext); {
	case err == nil:
		c.fail("release of a lost lease", "c1's second release of the same lease said ok; want fail: the lease was gone")
	case errors.Is(err, workload.ErrNotHeld):
		c.ok("release of a lost lease", "fail, as it should (%s)", firstLine(err))
	default:
		c.fail("release of a lost lease", "an unknown outcome, want fail: %v", err)
	}
	if c.broken || p1.Broken() != nil {
		return
	}

	c.checkPoints(p1)

	// Every node stopped: the driver must answer, and not ok.
	if err := c.setNodes(ctx, true); err != nil {
		c.fatal("unknown outcome", err, "could not stop the nodes")
		return
	}
	started := time.Now()
	_, err = l1.Acquire(ctx, "check:b", ttl)
	took := time.Since(started).Round(time.Millisecond)
	switch {
	case err == nil:
		c.fail("unknown outcome", "granted while every node was stopped")
	case errors.Is(err, ErrNoAnswer):
		c.fail("unknown outcome", "no answer within %v while every node was stopped: the driver waits on its nodes without a timeout (harness: %v)", c.cfg.ReplyTimeout, err)
	case errors.Is(err, workload.ErrNotAcquired):
		c.ok("unknown outcome", "every node stopped: fail after %v (%s)", took, firstLine(err))
	default:
		var de *Error
		if errors.As(err, &de) {
			c.fatal("unknown outcome", err, "the driver broke while its nodes were stopped")
		} else {
			c.ok("unknown outcome", "every node stopped: unknown after %v (%s)", took, firstLine(err))
		}
	}

	if err := c.setNodes(ctx, false); err != nil {
		c.fatal("unknown outcome", err, "could not continue the nodes")
		return
	}

	// A kill in the middle of a request: the harness reports the exit; a
	// fresh driver can take the key once any lease the dead one left runs
	// out. A driver with points is killed at its first; one without, while
	// its nodes are stopped, or else its next request finds it dead.
	if len(p1.Points()) > 0 {
		l1.Gate = killGate{p1}
		_, err = l1.Acquire(ctx, "check:c", ttl)
	} else {
		if err := c.setNodes(ctx, true); err != nil {
			c.fatal("kill in the middle", err, "could not stop the nodes")
			return
		}
		done := make(chan error, 1)
		go func() {
			_, err := l1.Acquire(ctx, "check:c", ttl)
			done <- err
		}()
		time.Sleep(100 * time.Millisecond)
		_ = p1.Kill()
		err = <-done
		if rerr := c.setNodes(ctx, false); rerr != nil {
			c.fatal("kill in the middle", rerr, "could not continue the nodes")
			return
		}
		if var1 := (*Error)(nil); !errors.As(err, &var1) {
			_, err = l1.Acquire(ctx, "check:c", ttl)
		}
	}
	var de *Error
	if c.broken || !errors.As(err, &de) || de.Exit == "" {
		c.fail("kill in the middle", "the killed driver's request ended with %v, want its exit reported", err)
	} else {
		_, l3, err := c.start(ctx, "c3")
		if err != nil {
			c.fatal("kill in the middle", err, "a new driver after the kill did not start")
			return
		}
		deadline := time.Now().Add(ttl + c.cfg.ReplyTimeout)
		var got *workload.Lease
		for err = errors.New("not tried"); err != nil && time.Now().Before(deadline); {
			if got, err = l3.Acquire(ctx, "check:c", ttl); err != nil {
				time.Sleep(ttl / 10)
			}
		}
		if err != nil {
			c.fail("kill in the middle", "killed mid-acquire (%s); a new driver could not take the key within the TTL after: %v", de.Exit, err)
		} else {
			c.ok("kill in the middle", "killed mid-acquire: %s reported; a new driver took the key after", de.Exit)
			_ = l3.Release(ctx, got)
		}
	}

	// The end of stdin: the driver exits on its own.
	p2 := c.procs[1]
	_ = p2.Stop(ctx)
	switch st := p2.ExitStatus(); {
	case st == "exit status 0":
		c.ok("exit", "exits with status 0 when its stdin closes")
	default:
		c.fail("exit", "when its stdin closed: %s, want exit status 0 within %v", st, stopGrace)
	}
}

// checkPoints compares the points the driver announced in ready with
// those it reached during acquire, extend and release.
func (c *checker) checkPoints(p *Proc) {
	seen := c.gates["c1"].seen()
	announced := p.Points()
	if len(announced) == 0 && len(seen) == 0 {
		c.ok("points", "announces none: scripted pauses at a point cannot stop it (random SIGSTOPs still can)")
		return
	}
	var missing, extra []string
	for _, a := range announced {
		if !slices.Contains(seen, a) {
			missing = append(missing, a)
		}
	}
	for _, s := range seen {
		if !slices.Contains(announced, s) {
			extra = append(extra, s)
		}
	}
	switch {
	case len(extra) > 0:
		c.fail("points", "reached %v, which its ready did not announce", extra)
	case len(missing) > 0 && slices.ContainsFunc(missing, func(m string) bool {
		return m == "after-acquire" || m == "before-release" || m == "after-replies"
	}):
		c.fail("points", "announced %v but never reached them during acquire, extend and release", missing)
	default:
		c.ok("points", "reached %v, as announced", seen)
	}
}

// killGate kills the driver at the first point it announces.
type killGate struct{ p *Proc }

func (k killGate) At(context.Context, string) {
	_ = k.p.Kill()
	<-k.p.Exited()
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
