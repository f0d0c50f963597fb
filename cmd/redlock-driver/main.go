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
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/driver"
	"splitbrain/driver/driverside"
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
	d := &server{conn: driverside.New("redlock-driver", os.Stdin, os.Stdout, os.Stderr), leases: map[string]*redlock.Lease{}}
	if err := d.serve(*naive, fence); err != nil {
		fmt.Fprintf(os.Stderr, "redlock-driver: %v\n", err)
		os.Exit(1)
	}
}

type server struct {
	conn   *driverside.Conn
	locker *redlock.Locker
	leases map[string]*redlock.Lease // by value
}

func (d *server) serve(naive bool, fence redlock.Fencing) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.conn.Serve(ctx, cancel)
	hello, ok := <-d.conn.Requests()
	if !ok {
		return nil
	}
	ready := driver.Message{Op: driver.OpReady, Name: "redlock (splitbrain's, as a driver)",
		Points:  []string{"after-replies", "after-acquire", "before-release"},
		Servers: []string{driver.ServerRedis}, Deployments: []string{driver.DeployMasters},
		Fenced: fence != redlock.FenceNone, Library: "splitbrain redlock"}
	if hello.Op == driver.OpHello && hello.Describe {
		// What it claims, and nothing to connect to.
		d.conn.Send(ready)
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
			AfterReplies:  func(ctx context.Context, _ string) { d.conn.Point(ctx, "after-replies") },
			AfterAcquire:  func(ctx context.Context, _ *redlock.Lease) { d.conn.Point(ctx, "after-acquire") },
			BeforeRelease: func(ctx context.Context, _ *redlock.Lease) { d.conn.Point(ctx, "before-release") },
		},
	}
	l, err := redlock.New(conns, opts)
	if err != nil {
		return err
	}
	d.locker = l
	d.conn.Send(ready)
	for r := range d.conn.Requests() {
		d.conn.Begin(r)
		d.conn.Send(d.handle(ctx, r, hello.Retries > 1))
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
			return driverside.Fail(reply, "no lease of this driver has that value")
		}
		delete(d.leases, r.Value)
		_, err = d.locker.Release(ctx, held)
		if errors.Is(err, redlock.ErrNotHeld) {
			return driverside.Fail(reply, err.Error())
		}
		if err != nil {
			return driverside.Unknown(reply, err)
		}
		reply.Result = driver.ResultOK
		return reply
	case driver.OpExtend:
		held := d.leases[r.Value]
		if held == nil {
			return driverside.Fail(reply, "no lease of this driver has that value")
		}
		lease, err = d.locker.Extend(ctx, held, ttl)
		if errors.Is(err, redlock.ErrNotHeld) || errors.Is(err, redlock.ErrExtendLimit) {
			return driverside.Fail(reply, err.Error())
		}
	default:
		return driverside.Unknown(reply, fmt.Errorf("unknown op %q", r.Op))
	}
	if errors.Is(err, redlock.ErrNotAcquired) {
		return driverside.Fail(reply, err.Error())
	}
	if err != nil {
		return driverside.Unknown(reply, err)
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
