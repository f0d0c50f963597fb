package nemesis_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"splitbrain/history"
	"splitbrain/nemesis"
)

// A node that starts listening just after its peer dialled it: through a
// proxy without patience the dialer's connection is closed at once (the
// proxy could not reach the node), as no real network would do it;
// through a patient link the connection waits and carries the bytes once
// the node listens — what the dialer would get by retrying its refused
// connect.
func TestPatientLinkWaitsForTheNode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		patience time.Duration
		through  bool // the bytes get through
	}{
		{"no patience: closed under the dialer", 0, false},
		{"patient: carried once the node listens", 5 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A free port, closed again: the node is not listening yet.
			probe, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := probe.Addr().String()
			_ = probe.Close()

			links, err := nemesis.NewNet(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(links.Close)
			via, err := links.AddLink("n1", nemesis.Endpoint{Name: "n2", Addr: addr, Patience: tc.patience})
			if err != nil {
				t.Fatal(err)
			}
			up, err := links.Upstream(history.Link{Client: "n1", Node: "n2"})
			if err != nil || up != addr {
				t.Fatalf("upstream %q, %v; want the node's %s", up, err, addr)
			}

			c, err := net.Dial("tcp", via)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("ping\n")); err != nil {
				t.Fatal(err)
			}
			if !tc.through {
				// The proxy gave up on the node before it listened.
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, err := c.Read(make([]byte, 1))
				var ne net.Error
				if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
					t.Fatalf("read %v; want the connection closed (EOF or reset): the proxy closes one the node refused", err)
				}
				return
			}
			// The node starts listening after the dial.
			time.Sleep(200 * time.Millisecond)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Skipf("port %s taken meanwhile: %v", addr, err)
			}
			defer ln.Close()
			go func() {
				s, err := ln.Accept()
				if err != nil {
					return
				}
				defer s.Close()
				line, _ := bufio.NewReader(s).ReadString('\n')
				_, _ = s.Write([]byte("pong " + line))
			}()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || got != "pong ping\n" {
				t.Fatalf("read %q, %v; want the node's answer through the link", got, err)
			}
		})
	}
}

// Blackholed names the proxies of cut links while the cut lasts, and only
// those: a dialer that asks fails its connect there as in a partition.
func TestBlackholedWhileCut(t *testing.T) {
	links, err := nemesis.NewNet([]string{"c1"}, []nemesis.Endpoint{{Name: "n1", Addr: "127.0.0.1:1"}, {Name: "n2", Addr: "127.0.0.1:2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(links.Close)
	a1, _ := links.Addr("c1", "n1")
	a2, _ := links.Addr("c1", "n2")
	if links.Blackholed(a1) || links.Blackholed(a2) {
		t.Fatal("a link is blackholed before any cut")
	}
	ctx := context.Background()
	heal, err := nemesis.Cut{Net: links, Links: []history.Link{{Client: "c1", Node: "n1"}}}.Inject(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !links.Blackholed(a1) || links.Blackholed(a2) {
		t.Fatalf("under a cut of c1→n1: blackholed n1 %v, n2 %v; want true, false", links.Blackholed(a1), links.Blackholed(a2))
	}
	for range 2 { // a heal may be repeated
		if err := heal(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if links.Blackholed(a1) {
		t.Fatal("c1→n1 still blackholed after the heal")
	}
}

// A patient link retargeted (an ensemble started again on fresh ports)
// forwards new connections to the new node and closes the old ones.
func TestPatientLinkRetarget(t *testing.T) {
	serve := func(name string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			for {
				s, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer s.Close()
					r := bufio.NewReader(s)
					for {
						if _, err := r.ReadString('\n'); err != nil {
							return
						}
						_, _ = s.Write([]byte(name + "\n"))
					}
				}()
			}
		}()
		return ln.Addr().String()
	}
	a, b := serve("a"), serve("b")
	links, err := nemesis.NewNet(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(links.Close)
	via, err := links.AddLink("n1", nemesis.Endpoint{Name: "n2", Addr: a, Patience: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(c net.Conn) (string, error) {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("who\n")); err != nil {
			return "", err
		}
		return bufio.NewReader(c).ReadString('\n')
	}
	old, err := net.Dial("tcp", via)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got, err := ask(old); got != "a\n" {
		t.Fatalf("before the retarget: %q, %v; want a", got, err)
	}
	l := history.Link{Client: "n1", Node: "n2"}
	if err := links.Retarget(context.Background(), l, b); err != nil {
		t.Fatal(err)
	}
	if up, _ := links.Upstream(l); up != b {
		t.Fatalf("upstream %s after the retarget, want %s", up, b)
	}
	if got, err := ask(old); err == nil {
		t.Fatalf("the old connection still answers %q after the retarget", got)
	}
	c, err := net.Dial("tcp", via)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := ask(c); got != "b\n" {
		t.Fatalf("after the retarget: %q, %v; want b", got, err)
	}
}
