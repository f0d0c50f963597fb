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
	"splitbrain/locks"
	"splitbrain/workload"
)

// CheckConfig is a conformance check of one driver.
type CheckConfig struct {
	// Command runs the driver.
	Command []string
	// Name names it in the output; empty: the command.
	Name string
	// Nodes is how many redis-server nodes a lock over every node gets;
	// zero means 3. A lock of one deployment gets one, an ensemble
	// locks.EnsembleNodes members.
	Nodes int
	// TTL of the checks' leases; zero means 1s.
	TTL time.Duration
	// ReplyTimeout: see Config; zero means DefaultReplyTimeout.
	ReplyTimeout time.Duration
	// Dir receives the nodes' logs and the drivers' transcripts.
	Dir string
	// CacheDir holds the clock shim and the live-run registry.
	CacheDir string
	// Kind is the lock kind a built-in driver plays: what its ready
	// claims must agree with the kind's data (its server, fencing, what
	// it cannot tell). Nil for a user's driver.
	Kind *locks.Kind
}

// Statuses of a Finding.
const (
	StatusOK   = "ok"
	StatusFail = "FAIL"
	// StatusCannotTell: the lock does not report what the check asks
	// (its ready's unreported), so the check cannot judge it: not a
	// failure, and not a pass either.
	StatusCannotTell = "cannot tell"
)

// Finding is the outcome of one check.
type Finding struct {
	Name string
	// Status is StatusOK, StatusFail or StatusCannotTell.
	Status string
	Detail string
}

// Failed reports whether any finding failed.
func Failed(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Status == StatusFail })
}

// Check runs the conformance suite against a driver on real servers: it
// asks the driver what it claims (a describe hello), then, for each lock
// it claims (Columns: Redis over every node, on one node, through
// Sentinel, a ZooKeeper ensemble, an etcd cluster), starts servers of that
// kind and checks start, acquire, refusal, extend, release, the release of
// a lease lost while its holder was stopped, points, an unknown outcome
// (every server stopped), a kill in the middle of a request and the exit
// at the end of stdin. Each finding is written to out as it comes. The
// error is for the harness's own failures (no server to start).
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
	cache := cfg.CacheDir
	if cache == "" {
		var err error
		if cache, err = cluster.DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	live, _, err := cluster.RegisterLive(cache, "drvcheck-"+cluster.RandomHex(8))
	if err != nil {
		return nil, err
	}
	defer func() { _ = live.Remove() }()
	all := &findings{out: out}
	ready, ok := describe(ctx, cfg, live, all)
	if !ok {
		return all.list, nil
	}
	for _, col := range Columns(ready) {
		passes := []bool{false}
		if col.Sentinel {
			passes = append(passes, true)
		}
		for _, sentinel := range passes {
			if ctx.Err() != nil {
				return all.list, nil
			}
			c := &checker{cfg: cfg, col: col, sentinel: sentinel, ready: ready, live: live, findings: all, gates: map[string]*pointLog{}}
			if err := c.startServers(ctx); err != nil {
				c.stopAll(context.WithoutCancel(ctx))
				return all.list, err
			}
			c.run(ctx)
			c.stopAll(context.WithoutCancel(ctx))
		}
	}
	return all.list, nil
}

// describe asks the driver what it claims and, for a built-in driver,
// checks that against its kind's data; false: nothing can be checked.
func describe(ctx context.Context, cfg CheckConfig, live *cluster.LiveRun, f *findings) (Message, bool) {
	logf, err := os.OpenFile(filepath.Join(cfg.Dir, "driver-describe.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		f.report("describe", StatusFail, "%v", err)
		return Message{}, false
	}
	defer logf.Close()
	ready, note, err := Describe(ctx, cfg.Command, cfg.Name, logf)
	if err != nil {
		f.report("describe", StatusFail, "%v", err)
		return Message{}, false
	}
	var cols []string
	for _, c := range Columns(ready) {
		cols = append(cols, c.String())
	}
	lib := ready.Versions()
	if lib == "" {
		lib = "no library named"
	}
	switch {
	case note != "":
		f.report("describe", StatusOK, "%s; %s", note, lib)
	default:
		f.report("describe", StatusOK, "claims %s; %s", strings.Join(cols, ", "), lib)
	}
	if k := cfg.Kind; k != nil {
		var wrong []string
		if !ready.Claims(KindColumn(k)) {
			wrong = append(wrong, fmt.Sprintf("the kind runs %s, which its ready does not claim", KindColumn(k)))
		}
		if ready.Fenced != k.Fenced {
			wrong = append(wrong, fmt.Sprintf("fenced %v, the kind's data says %v", ready.Fenced, k.Fenced))
		}
		if !slices.Equal(ready.Unreported, k.Unreported) {
			wrong = append(wrong, fmt.Sprintf("unreported %v, the kind's data says %v", ready.Unreported, k.Unreported))
		}
		if !slices.Equal(ready.Unsupported, k.Unsupported) {
			wrong = append(wrong, fmt.Sprintf("unsupported %v, the kind's data says %v", ready.Unsupported, k.Unsupported))
		}
		if len(wrong) > 0 {
			f.report("kind "+k.Name, StatusFail, "its ready disagrees with package locks: %s", strings.Join(wrong, "; "))
		} else {
			f.report("kind "+k.Name, StatusOK, "its ready agrees with package locks (%s)", KindColumn(k))
		}
	}
	return ready, true
}

// String says the column in words: "redis, independent masters".
func (c Column) String() string {
	switch {
	case c.Server != ServerRedis:
		return c.Server
	case c.Sentinel:
		return "redis, " + c.Shape().String() + " (or through Sentinel)"
	}
	return "redis, " + c.Shape().String()
}

// findings are a check's findings, written as they come.
type findings struct {
	out  io.Writer
	list []Finding
}

func (f *findings) report(name, status, format string, args ...any) {
	fd := Finding{Name: name, Status: status, Detail: fmt.Sprintf(format, args...)}
	f.list = append(f.list, fd)
	fmt.Fprintf(f.out, "  %-5s %s: %s\n", fd.Status, fd.Name, strings.ReplaceAll(fd.Detail, "\n", "\n          "))
}

type checker struct {
	cfg   CheckConfig
	col   Column
	ready Message
	// sentinel: this pass finds the master through Sentinel.
	sentinel bool
	live     *cluster.LiveRun
	*findings
	cl *local.Cluster
	// relay stands between the driver and the master under Sentinel:
	// the route hello gives, whose use the check sees.
	relay *relay
	procs []*Proc
	gates map[string]*pointLog
	logs  []*os.File
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

func (c *checker) ok(name, format string, args ...any) { c.report(name, StatusOK, format, args...) }

func (c *checker) fail(name, format string, args ...any) { c.report(name, StatusFail, format, args...) }

// fatal fails a check the rest depend on, and any driver error with it.
func (c *checker) fatal(name string, err error, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	c.fail(name, "%s", msg)
	c.broken = true
}

// startServers starts the servers of the column: redis-server nodes (one
// for a lock of one deployment, with a sentinel over it for the Sentinel
// pass), or an ensemble.
func (c *checker) startServers(ctx context.Context) error {
	cfg := cluster.Config{Nodes: c.cfg.Nodes, Dir: c.cfg.Dir, CacheDir: c.cfg.CacheDir}
	what := fmt.Sprintf("%d redis-server nodes (%s)", c.cfg.Nodes, c.col.Shape())
	switch c.col.Server {
	case ServerZooKeeper:
		cfg.Kind, cfg.Nodes = cluster.ZooKeeper, locks.EnsembleNodes
		what = fmt.Sprintf("a %d-member ZooKeeper ensemble", locks.EnsembleNodes)
	case ServerEtcd:
		cfg.Kind, cfg.Nodes = cluster.Etcd, locks.EnsembleNodes
		what = fmt.Sprintf("a %d-member etcd cluster", locks.EnsembleNodes)
	default:
		if c.col.Deployment == DeployOne {
			cfg.Nodes = 1
			what = "one redis-server node"
		}
	}
	if c.sentinel {
		what = "one redis-server node through a sentinel"
	}
	fmt.Fprintf(c.out, "driver check: %s on %s, TTL %v\n", c.cfg.Name, what, c.cfg.TTL)
	cl, err := local.Start(ctx, cfg)
	if err != nil {
		return err
	}
	c.cl = cl
	if c.sentinel {
		return c.startSentinel(ctx)
	}
	return nil
}

// startSentinel starts one sentinel over n1 and the relay in front of n1
// that hello's route names.
func (c *checker) startSentinel(ctx context.Context) error {
	n1 := c.cl.Nodes()[0]
	addrs, err := c.cl.ReserveSentinels(1)
	if err != nil {
		return err
	}
	if _, err := c.cl.AddSentinel(ctx, cluster.SentinelSpec{Name: "s1", Addr: addrs[0],
		Config: cluster.SentinelConfig{Master: n1.Addr(), Quorum: 1, DownAfter: time.Minute, FailoverTimeout: time.Minute}}); err != nil {
		return err
	}
	c.relay, err = newRelay(n1.Addr())
	return err
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
	cfg := Config{Command: c.cfg.Command, Name: c.cfg.Name, Client: client, Nodes: nodes,
		Server: c.col.Server, Deployment: c.col.Deployment, TTL: c.cfg.TTL,
		Password: c.cl.Password(), NodeTimeout: 250 * time.Millisecond, Live: c.live, Log: logf,
		ReplyTimeout: c.cfg.ReplyTimeout}
	if len(c.ready.Servers) == 0 {
		// A protocol 1 driver: its hello had neither.
		cfg.Server, cfg.Deployment = "", ""
	}
	switch c.col.Server {
	case ServerZooKeeper:
		cfg.User, cfg.SessionTimeout = cluster.ZooKeeperUser, c.cfg.TTL
	case ServerEtcd:
		cfg.User = cluster.EtcdUser
	}
	if c.sentinel {
		var s []Node
		for _, n := range c.cl.All() {
			if n.Kind() == cluster.Sentinel {
				s = append(s, Node{Name: n.Name(), Addr: n.Addr()})
			}
		}
		cfg.Server = ServerSentinel
		cfg.Sentinel = &SentinelInfo{Master: cluster.SentinelMaster, Nodes: s, Routes: map[string]string{nodes[0].Addr: c.relay.addr()}}
	}
	p, err := Start(ctx, cfg)
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
	if c.relay != nil {
		c.relay.close()
	}
	if c.cl != nil {
		_ = c.cl.Close(ctx)
	}
}

// setNodes stops (SIGSTOP) or continues every server of the column.
func (c *checker) setNodes(ctx context.Context, stop bool) error {
	for _, n := range c.cl.All() {
		p, ok := c.cl.Process(n.Name())
		if !ok {
			continue
		}
		var err error
		if stop {
			err = p.Pause(ctx)
		} else {
			err = p.Resume(ctx)
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
		c.ok("acquire", "granted, value %q, %s%s", lease.Value, v, tokenText(lease))
	}
	if c.ready.Fenced && lease.Token == nil {
		c.fail("token", "its ready says fenced, and the grant carries no token")
	}
	if c.relay != nil {
		if n := c.relay.count(); n == 0 {
			c.fail("route", "granted without a connection through the route hello gave for the master: the driver dialled the address the sentinels hand out, which network faults miss")
		} else {
			c.ok("route", "reached the master through the route hello gave (%d connection(s))", n)
		}
	}

	switch l2lease, err := l2.Acquire(ctx, "check:a", ttl); {
	case err == nil:
		c.fail("refusal", "c2 was granted the key c1 holds: the lock is not exclusive")
		_ = l2.Release(ctx, l2lease)
	case errors.Is(err, workload.ErrNotAcquired):
		c.ok("refusal", "c2 refused while c1 holds the key (%s)", firstLine(err))
	default:
		c.fatal("refusal", err, "c2's acquire of a held key should be a fail, was an unknown outcome")
		return
	}

	before = time.Now()
	ext, err := l1.Extend(ctx, lease, ttl)
	after = time.Now()
	if slices.Contains(c.ready.Unsupported, OpExtend) {
		ext = lease
		if errors.Is(err, workload.ErrNotExtended) {
			c.ok("extend", "the lock has no extension (its ready: unsupported extend), and the driver said fail (%s)", firstLine(err))
		} else {
			c.fail("extend", "its ready says the lock has no extension; want fail, got %v", err)
		}
	} else if err != nil {
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
		c.ok("release", "released; c2 took the key after it%s", tokenOrder(lease, l2lease))
		_ = l2.Release(ctx, l2lease)
	}
	if c.broken || p1.Broken() != nil {
		return
	}

	c.lostLease(ctx, p1, l1, l2)
	if c.broken || p1.Broken() != nil {
		return
	}

	c.checkPoints(p1)

	// Every server stopped: the driver must answer, and not ok.
	if err := c.setNodes(ctx, true); err != nil {
		c.fatal("unknown outcome", err, "could not stop the servers")
		return
	}
	started := time.Now()
	_, err = l1.Acquire(ctx, "check:b", ttl)
	took := time.Since(started).Round(time.Millisecond)
	switch {
	case err == nil:
		c.fail("unknown outcome", "granted while every server was stopped")
	case errors.Is(err, ErrNoAnswer):
		c.fail("unknown outcome", "no answer within %v while every server was stopped: the driver waits on its servers without a timeout (harness: %v)", c.cfg.ReplyTimeout, err)
	case errors.Is(err, workload.ErrNotAcquired):
		c.ok("unknown outcome", "every server stopped: fail after %v (%s)", took, firstLine(err))
	default:
		var de *Error
		if errors.As(err, &de) {
			c.fatal("unknown outcome", err, "the driver broke while its servers were stopped")
		} else {
			c.ok("unknown outcome", "every server stopped: unknown after %v (%s)", took, firstLine(err))
		}
	}

	if err := c.setNodes(ctx, false); err != nil {
		c.fatal("unknown outcome", err, "could not continue the servers")
		return
	}

	// A kill in the middle of a request: the harness reports the exit; a
	// fresh driver can take the key once any lease the dead one left runs
	// out. A driver with points is killed at its first; one without, while
	// its servers are stopped, or else its next request finds it dead.
	if len(p1.Points()) > 0 {
		// Killed at its first point; an acquire that ends before one (the
		// servers, continued a moment ago, still electing a leader or the
		// client reconnecting) is tried again.
		l1.Gate = killGate{p1}
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, err = l1.Acquire(ctx, "check:c", ttl)
			var de *Error
			if errors.As(err, &de) || err == nil || !time.Now().Before(deadline) || ctx.Err() != nil {
				break
			}
			workload.Sleep(ctx, 200*time.Millisecond)
		}
	} else {
		if err := c.setNodes(ctx, true); err != nil {
			c.fatal("kill in the middle", err, "could not stop the servers")
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
			c.fatal("kill in the middle", rerr, "could not continue the servers")
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
		got, err := c.takeWithin(ctx, l3, "check:c", c.leaseLife()+c.cfg.ReplyTimeout)
		if err != nil {
			c.fail("kill in the middle", "killed mid-acquire (%s); a new driver could not take the key within %v after: %v", de.Exit, c.leaseLife()+c.cfg.ReplyTimeout, err)
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

// leaseLife bounds how long a lease left behind lives on the column's
// servers: the TTL on Redis and ZooKeeper (the session timeout), etcd's
// shortest lease (2 s at its election settings) at least.
func (c *checker) leaseLife() time.Duration {
	if c.col.Server == ServerEtcd {
		return max(c.cfg.TTL, 2*time.Second) + time.Second
	}
	return c.cfg.TTL
}

// takeWithin tries to acquire key until granted or within is over.
func (c *checker) takeWithin(ctx context.Context, l *Lock, key string, within time.Duration) (*workload.Lease, error) {
	deadline := time.Now().Add(within)
	for {
		got, err := l.Acquire(ctx, key, c.cfg.TTL)
		if err == nil || !time.Now().Before(deadline) || ctx.Err() != nil {
			return got, err
		}
		var de *Error
		if errors.As(err, &de) {
			return nil, err
		}
		workload.Sleep(ctx, c.cfg.TTL/10)
	}
}

// lostLease: c1 holds a key, its process is stopped (SIGSTOP) until c2
// takes the key, then continued, and c1 releases: its lock must say fail
// — the lease was gone — or, if its ready says it does not report a
// release's outcome, the check cannot tell. A driver that claims lost
// must first say it of c1's lease.
func (c *checker) lostLease(ctx context.Context, p1 *Proc, l1, l2 *Lock) {
	const name = "release of a lost lease"
	lease, err := l1.Acquire(ctx, "check:lost", c.cfg.TTL)
	if err != nil {
		c.fail(name, "c1 could not take a free key: %v", err)
		return
	}
	if err := p1.Pause(); err != nil {
		c.fatal(name, err, "could not stop c1's driver")
		return
	}
	stopped := time.Now()
	taken, err := c.takeWithin(ctx, l2, "check:lost", c.leaseLife()+5*time.Second)
	held := time.Since(stopped).Round(time.Millisecond)
	if rerr := p1.Resume(); rerr != nil {
		c.fatal(name, rerr, "could not continue c1's driver")
		return
	}
	if err != nil {
		c.fail(name, "c1's driver stopped for %v, and c2 could not take its key: the lease never ran out (%v)", held, err)
		return
	}
	defer func() { _ = l2.Release(ctx, taken) }()
	if c.ready.Lost {
		// A driver that claims lost must say it of a lease c2 now holds,
		// once c1 runs again and its lock finds out.
		const told = "lost told"
		resumed := time.Now()
		select {
		case <-lease.Lost:
			c.ok(told, "c1 said its lease lost %v after it was continued", time.Since(resumed).Round(time.Millisecond))
		case <-time.After(c.leaseLife() + 2*time.Second):
			c.fail(told, "c1 claims lost in its ready and said nothing of its lease within %v of being continued, while c2 held the key", c.leaseLife()+2*time.Second)
		case <-ctx.Done():
			return
		}
	}
	cannotTell := slices.Contains(c.ready.Unreported, OpRelease)
	switch err := l1.Release(ctx, lease); {
	case errors.Is(err, workload.ErrNotHeld):
		c.ok(name, "c1 stopped %v until c2 took its key; its release then said fail, as it should (%s)", held, firstLine(err))
	case err == nil && cannotTell:
		c.report(name, StatusCannotTell, "c1 stopped %v until c2 took its key; its release then said ok: the lock does not report whether a released lease was still held (its ready: unreported release)", held)
	case err == nil:
		c.fail(name, "c1 stopped %v until c2 took its key; its release then said ok, want fail: the lease was gone (a lock that cannot tell says unreported: [release] in its ready)", held)
	default:
		c.fail(name, "c1 stopped %v until c2 took its key; its release then: %v, want fail", held, err)
	}
}

// tokenText shows a grant's fencing token.
func tokenText(l *workload.Lease) string {
	if l.Token == nil {
		return ""
	}
	return fmt.Sprintf(", token %d", *l.Token)
}

// tokenOrder says whether a later grant's token is larger, where both have
// one.
func tokenOrder(first, later *workload.Lease) string {
	if first.Token == nil || later.Token == nil {
		return ""
	}
	if *later.Token <= *first.Token {
		return fmt.Sprintf(" — BUT its token %d is not larger than c1's %d", *later.Token, *first.Token)
	}
	return fmt.Sprintf(", token %d > %d", *later.Token, *first.Token)
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
