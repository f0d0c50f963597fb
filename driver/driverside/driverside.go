// Package driverside is the driver's end of the lock driver protocol
// (docs/driver-protocol.md) for drivers written in Go: JSON lines read
// from stdin and written to stdout, the go-aheads at points told apart
// from the requests. cmd/redlock-driver and cmd/rueidislock-driver use it.
package driverside

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"splitbrain/driver"
)

// Conn is one driver's connection to the harness.
type Conn struct {
	name  string
	in    io.Reader
	errs  io.Writer
	outMu sync.Mutex
	out   *bufio.Writer
	// gos carries the go-aheads at points; reqs the other requests.
	gos  chan driver.Request
	reqs chan driver.Request
	// cur is the id of the request in progress, which Point announces.
	cur int64
}

// New is a connection reading in and writing out; lines that are not
// requests are reported on errs, prefixed with name.
func New(name string, in io.Reader, out, errs io.Writer) *Conn {
	return &Conn{name: name, in: in, errs: errs, out: bufio.NewWriter(out),
		gos: make(chan driver.Request, 1), reqs: make(chan driver.Request, 4)}
}

// Serve reads requests until in closes, then closes Requests and calls
// cancel; run it in a goroutine of its own. ctx ends a wait to hand on a
// go-ahead.
func (c *Conn) Serve(ctx context.Context, cancel func()) {
	defer cancel()
	defer close(c.reqs)
	sc := bufio.NewScanner(c.in)
	sc.Buffer(make([]byte, 4096), driver.MaxLine)
	for sc.Scan() {
		var r driver.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			fmt.Fprintf(c.errs, "%s: a line that is not a request: %q: %v\n", c.name, sc.Text(), err)
			continue
		}
		if r.Op == driver.OpGo {
			select {
			case c.gos <- r:
			case <-ctx.Done():
				return
			}
			continue
		}
		c.reqs <- r
	}
}

// Requests are the harness's requests, hello first, in order; closed when
// stdin closes.
func (c *Conn) Requests() <-chan driver.Request { return c.reqs }

// Begin marks r as the request in progress, whose points Point announces.
func (c *Conn) Begin(r driver.Request) { c.cur = r.ID }

// Send writes m as one line and flushes it, a reply stamped with the
// monotonic clock (mono_ns) when it is written.
func (c *Conn) Send(m driver.Message) {
	if m.Op == driver.OpReply {
		mono := driver.Monotonic()
		m.MonoNS = &mono
	}
	b, _ := json.Marshal(m)
	c.outMu.Lock()
	defer c.outMu.Unlock()
	_, _ = c.out.Write(append(b, '\n'))
	_ = c.out.Flush()
}

// Point announces point p of the request in progress and waits for its
// go-ahead (or ctx's end).
func (c *Conn) Point(ctx context.Context, p string) {
	c.Send(driver.Message{Op: driver.OpPoint, ID: c.cur, Point: p})
	for {
		select {
		case r := <-c.gos:
			if r.ID == c.cur {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// Fail is reply m with result fail: the request certainly did not take
// effect (detail says why).
func Fail(m driver.Message, detail string) driver.Message {
	m.Result, m.Detail = driver.ResultFail, detail
	return m
}

// Unknown is reply m with result unknown: the request may or may not
// have taken effect (err says what happened).
func Unknown(m driver.Message, err error) driver.Message {
	m.Result, m.Detail = driver.ResultUnknown, err.Error()
	return m
}
