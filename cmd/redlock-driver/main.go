// Command redlock-driver is our Redlock (package redlock) as a lock
// driver: the reference implementation of docs/driver-protocol.md. The
// harness starts it once per client and speaks JSON lines on its stdin
// and stdout; it announces the lock's three hook points (after-replies,
// after-acquire, before-release) and waits at each for the go-ahead.
//
//	redlock-driver [-naive] [-fencing none|simple|two-round]
//
// Its verdicts on a story match those of the in-process lock of the same
// kind on the same seed (scenarios' TestDriverMatchesInProcess).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/driver"
	"splitbrain/redlock"
)

func main() {
	naive := flag.Bool("naive", false, "skip the elapsed-time check (the naive kind)")
	fencing := flag.String("fencing", "none", "fencing tokens: none, simple or two-round")
	flag.Parse()
	var fence redlock.Fencing
	switch *fencing {
	case "none":
		fence = redlock.FenceNone
	case "simple":
		fence = redlock.FenceSimple
	case "two-round":
		fence = redlock.FenceTwoRound
	default:
		fmt.Fprintf(os.Stderr, "redlock-driver: -fencing %q; want none, simple or two-round\n", *fencing)
		os.Exit(2)
	}
	d := &server{out: bufio.NewWriter(os.Stdout), gos: make(chan driver.Request, 1), leases: map[string]*redlock.Lease{}}
	if err := d.serve(*naive, fence); err != nil {
		fmt.Fprintf(os.Stderr, "redlock-driver: %v\n", err)
		os.Exit(1)
	}
}

type server struct {
	outMu sync.Mutex
	out   *bufio.Writer
	// gos carries the go-ahead at a point; reqs the requests.
	gos  chan driver.Request
	reqs chan driver.Request
	// cur is the id of the request in progress.
	cur    int64
	locker *redlock.Locker
	leases map[string]*redlock.Lease // by value
}

func (d *server) send(m driver.Message) {
	b, _ := json.Marshal(m)
	d.outMu.Lock()
	defer d.outMu.Unlock()
	_, _ = d.out.Write(append(b, '\n'))
	_ = d.out.Flush()
}

// read reads stdin until it closes: go-aheads to gos, the rest to reqs.
func (d *server) read(ctx context.Context, cancel func()) {
	defer cancel()
	defer close(d.reqs)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 4096), driver.MaxLine)
	for sc.Scan() {
		var r driver.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			fmt.Fprintf(os.Stderr, "redlock-driver: a line that is not a request: %q: %v\n", sc.Text(), err)
			continue
		}
		if r.Op == driver.OpGo {
			select {
			case d.gos <- r:
			case <-ctx.Done():
				return
			}
			continue
		}
		d.reqs <- r
	}
}

// point announces p of the request in progress and waits for the go-ahead.
func (d *server) point(ctx context.Context, p string) {
	d.send(driver.Message{Op: driver.OpPoint, ID: d.cur, Point: p})
	for {
		select {
		case r := <-d.gos:
			if r.ID == d.cur {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func (d *server) serve(naive bool, fence redlock.Fencing) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.reqs = make(chan driver.Request, 4)
	go d.read(ctx, cancel)
	hello, ok := <-d.reqs
	if !ok {
		return nil
	}
	ready := driver.Message{Op: driver.OpReady, Name: "redlock (splitbrain's, as a driver)",
		Points:  []string{"after-replies", "after-acquire", "before-release"},
		Servers: []string{driver.ServerRedis}, Deployments: []string{driver.DeployMasters},
		Fenced: fence != redlock.FenceNone, Library: "splitbrain redlock"}
	if hello.Op == driver.OpHello && hello.Describe {
		// What it claims, and nothing to connect to.
		d.send(ready)
		return nil
	}
	if hello.Op != driver.OpHello || len(hello.Nodes) == 0 {
		return fmt.Errorf("first request %q with %d nodes; want hello with the nodes", hello.Op, len(hello.Nodes))
	}
	var conns []*redis.Client
	for _, n := range hello.Nodes {
		c := redis.NewClient(redlock.ClientOptions(n.Addr, hello.Password))
		defer c.Close()
		// Connect now, as the in-process clients do: the first attempt
		// then measures the lock, not the handshake.
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		for err := c.Ping(pctx).Err(); err != nil && pctx.Err() == nil; err = c.Ping(pctx).Err() {
			time.Sleep(50 * time.Millisecond)
		}
		pcancel()
		conns = append(conns, c)
	}
	opts := redlock.Options{
		NodeTimeout:      time.Duration(hello.NodeTimeoutMS * float64(time.Millisecond)),
		MaxTries:         hello.Retries,
		SkipElapsedCheck: naive,
		Fencing:          fence,
		Hooks: redlock.Hooks{
			AfterReplies:  func(ctx context.Context, _ string) { d.point(ctx, "after-replies") },
			AfterAcquire:  func(ctx context.Context, _ *redlock.Lease) { d.point(ctx, "after-acquire") },
			BeforeRelease: func(ctx context.Context, _ *redlock.Lease) { d.point(ctx, "before-release") },
		},
	}
	l, err := redlock.New(conns, opts)
	if err != nil {
		return err
	}
	d.locker = l
	d.send(ready)
	for r := range d.reqs {
		d.cur = r.ID
		d.send(d.handle(ctx, r, hello.Retries > 1))
	}
	return nil
}

func (d *server) handle(ctx context.Context, r driver.Request, retry bool) driver.Message {
	reply := driver.Message{Op: driver.OpReply, ID: r.ID}
	ttl := time.Duration(r.TTLMS * float64(time.Millisecond))
	var lease *redlock.Lease
	var err error
	switch r.Op {
	case driver.OpAcquire:
		try := d.locker.TryLock
		if retry {
			try = d.locker.Lock
		}
		lease, err = try(ctx, r.Key, ttl)
	case driver.OpRelease:
		held := d.leases[r.Value]
		if held == nil {
			return fail(reply, "no lease of this driver has that value")
		}
		delete(d.leases, r.Value)
		_, err = d.locker.Release(ctx, held)
		if errors.Is(err, redlock.ErrNotHeld) {
			return fail(reply, err.Error())
		}
		if err != nil {
			return unknown(reply, err)
		}
		reply.Result = driver.ResultOK
		return reply
	case driver.OpExtend:
		held := d.leases[r.Value]
		if held == nil {
			return fail(reply, "no lease of this driver has that value")
		}
		lease, err = d.locker.Extend(ctx, held, ttl)
		if errors.Is(err, redlock.ErrNotHeld) || errors.Is(err, redlock.ErrExtendLimit) {
			return fail(reply, err.Error())
		}
	default:
		return unknown(reply, fmt.Errorf("unknown op %q", r.Op))
	}
	if errors.Is(err, redlock.ErrNotAcquired) {
		return fail(reply, err.Error())
	}
	if err != nil {
		return unknown(reply, err)
	}
	d.leases[lease.Value] = lease
	v := float64(time.Until(lease.Deadline)) / float64(time.Millisecond)
	reply.Result, reply.Value, reply.ValidityMS = driver.ResultOK, lease.Value, &v
	if d.locker.Fencing() != redlock.FenceNone {
		t := lease.Token
		reply.Token = &t
	}
	return reply
}

func fail(m driver.Message, detail string) driver.Message {
	m.Result, m.Detail = driver.ResultFail, detail
	return m
}

func unknown(m driver.Message, err error) driver.Message {
	m.Result, m.Detail = driver.ResultUnknown, err.Error()
	return m
}
