// Command rueidislock-driver is rueidislock (inside redis/rueidis, the
// version in go.mod) as a lock driver (docs/driver-protocol.md): the same
// adapter as the in-process rueidislock kind, in a process of its own.
// The harness can then stop it whole with SIGSTOP and starve it of CPU
// (starve: {client: c1, cpu: 1%}), as a loaded machine starves the
// goroutines that extend rueidislock's keys (rueidis issue 923), which it
// cannot do to a lock running inside the harness.
//
//	go install ./cmd/rueidislock-driver
//	splitbrain run examples/by-hand/starve-rueidislock.yaml
//	splitbrain suite --lock-driver rueidislock-proc=rueidislock-driver
//
// Its belief, as rueidislock tells its user: no deadline (validity_ms is
// left out), until the context TryWithContext handed out is cancelled,
// which the driver reports at once with a lost message. It announces
// after-acquire and before-release.
//
// With -busy N, N goroutines burn CPU while the driver holds a lease and
// its context lives, as the long-running task of rueidis issue 923 does
// under its lock: a starved process that is idle still runs its few
// timers within its quota, a busy one makes them wait for CPU behind its
// own work.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"splitbrain/driver"
	"splitbrain/driver/driverside"
	"splitbrain/locks/adapter"
	"splitbrain/workload"
)

func main() {
	busy := flag.Int("busy", 0, "goroutines that burn CPU while a lease is held (the user's work)")
	flag.Parse()
	if *busy < 0 || *busy > 64 {
		fmt.Fprintf(os.Stderr, "rueidislock-driver: -busy %d; want 0 to 64\n", *busy)
		os.Exit(2)
	}
	d := &server{conn: driverside.New("rueidislock-driver", os.Stdin, os.Stdout, os.Stderr), leases: map[string]*workload.Lease{},
		work: &worker{n: *busy, working: map[string]chan struct{}{}}}
	if err := d.serve(); err != nil {
		fmt.Fprintf(os.Stderr, "rueidislock-driver: %v\n", err)
		os.Exit(1)
	}
}

type server struct {
	conn *driverside.Conn
	lock *adapter.Rueidislock
	// mu guards leases, which the loss watchers read: a lease is taken
	// out of it before its release cancels its context, so that a
	// release is never reported as a loss.
	mu     sync.Mutex
	leases map[string]*workload.Lease // by value
	work   *worker
}

// worker burns CPU for each lease held whose context lives: n goroutines
// per lease, stopped at its release or its loss.
type worker struct {
	n       int
	mu      sync.Mutex
	working map[string]chan struct{} // by lease value
}

func (w *worker) start(value string) {
	if w.n == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.working[value] != nil {
		return
	}
	stop := make(chan struct{})
	w.working[value] = stop
	for range w.n {
		go burn(stop)
	}
}

func (w *worker) stop(value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if stop := w.working[value]; stop != nil {
		close(stop)
		delete(w.working, value)
	}
}

// burn spins until stop is closed.
func burn(stop <-chan struct{}) {
	x := uint64(1)
	for {
		select {
		case <-stop:
			return
		default:
		}
		for range 100_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if x == 0 {
			fmt.Fprintln(os.Stderr) // keeps x alive
		}
	}
}

// version is the version of the rueidis module this program was built
// with: rueidislock is a package of it.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/redis/rueidis" {
				return m.Version
			}
		}
	}
	return "(version unknown)"
}

func (d *server) serve() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.conn.Serve(ctx, cancel)
	hello, ok := <-d.conn.Requests()
	if !ok {
		return nil
	}
	ready := driver.Message{Op: driver.OpReady, Name: "rueidislock (a process of its own)",
		Points:  []string{"after-acquire", "before-release"},
		Servers: []string{driver.ServerRedis, driver.ServerSentinel}, Deployments: []string{driver.DeployOne},
		Lost: true, Library: "rueidislock " + version(), ClientLibrary: "rueidis " + version()}
	if hello.Op == driver.OpHello && hello.Describe {
		// What it claims, and nothing to connect to.
		d.conn.Send(ready)
		return nil
	}
	if hello.Op != driver.OpHello || len(hello.Nodes) == 0 || hello.TTLMS <= 0 {
		return fmt.Errorf("first request %q with %d nodes and ttl_ms %v; want hello with the nodes and the TTL", hello.Op, len(hello.Nodes), hello.TTLMS)
	}
	o := adapter.RueidislockOptions{Addr: hello.Nodes[0].Addr, Password: hello.Password,
		Validity: time.Duration(hello.TTLMS * float64(time.Millisecond)), TryNextAfter: adapter.RueidisTryNextAfter}
	if s := hello.Sentinel; hello.Server == driver.ServerSentinel && s != nil {
		o.Addr = ""
		o.MasterSet = s.Master
		for _, n := range s.Nodes {
			o.Sentinels = append(o.Sentinels, n.Addr)
		}
		// Every address rueidis dials, through this client's proxy.
		o.Route = func(addr string) (string, error) {
			for _, n := range s.Nodes {
				if n.Addr == addr {
					return addr, nil
				}
			}
			if via, ok := s.Routes[addr]; ok {
				return via, nil
			}
			return "", fmt.Errorf("no route to %s in hello", addr)
		}
	}
	// rueidis dials when the locker is made, as the in-process kind's.
	if err := adapter.UntilConnected(func(context.Context) error {
		var err error
		d.lock, err = adapter.NewRueidislock(o)
		return err
	}); err != nil {
		return err
	}
	defer d.lock.Close()
	d.conn.Send(ready)
	for r := range d.conn.Requests() {
		d.conn.Begin(r)
		d.conn.Send(d.handle(ctx, r))
	}
	return nil
}

func (d *server) handle(ctx context.Context, r driver.Request) driver.Message {
	reply := driver.Message{Op: driver.OpReply, ID: r.ID}
	ttl := time.Duration(r.TTLMS * float64(time.Millisecond))
	switch r.Op {
	case driver.OpAcquire:
		lease, err := d.lock.Acquire(ctx, r.Key, ttl)
		if errors.Is(err, workload.ErrNotAcquired) {
			return driverside.Fail(reply, err.Error())
		}
		if err != nil {
			return driverside.Unknown(reply, err)
		}
		d.conn.Point(ctx, "after-acquire")
		d.mu.Lock()
		d.leases[lease.Value] = lease
		d.mu.Unlock()
		d.work.start(lease.Value)
		go d.watch(lease)
		// No validity_ms: rueidislock tells its user no deadline.
		reply.Result, reply.Value = driver.ResultOK, lease.Value
		return reply
	case driver.OpRelease:
		d.conn.Point(ctx, "before-release")
		lease := d.take(r.Value)
		if lease == nil {
			return driverside.Fail(reply, "no lease of this driver has that value")
		}
		d.work.stop(r.Value)
		err := d.lock.Release(ctx, lease)
		if errors.Is(err, workload.ErrNotHeld) {
			return driverside.Fail(reply, err.Error())
		}
		if err != nil {
			return driverside.Unknown(reply, err)
		}
		reply.Result = driver.ResultOK
		return reply
	case driver.OpExtend:
		d.mu.Lock()
		lease := d.leases[r.Value]
		d.mu.Unlock()
		if lease == nil {
			return driverside.Fail(reply, "no lease of this driver has that value")
		}
		if _, err := d.lock.Extend(ctx, lease, ttl); err != nil {
			return driverside.Fail(reply, err.Error())
		}
		reply.Result, reply.Value = driver.ResultOK, lease.Value
		return reply
	default:
		return driverside.Unknown(reply, fmt.Errorf("unknown op %q", r.Op))
	}
}

// take removes the lease of value from those held, or returns nil.
func (d *server) take(value string) *workload.Lease {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.leases[value]
	delete(d.leases, value)
	return l
}

// watch says lost once rueidislock cancels the lease's context, unless
// the lease was released first.
func (d *server) watch(lease *workload.Lease) {
	<-lease.Lost
	d.mu.Lock()
	held := d.leases[lease.Value] == lease
	d.mu.Unlock()
	if held {
		// The user stops its work when told, and says so.
		d.work.stop(lease.Value)
		d.conn.Send(driver.Message{Op: driver.OpLost, Value: lease.Value, Detail: "rueidislock cancelled the lock's context"})
	}
}
