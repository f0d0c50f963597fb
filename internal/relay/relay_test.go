package relay

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves ln, writing back whatever each connection sends, until ln
// closes.
func echo(t *testing.T, ln net.Listener) {
	t.Helper()
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
}

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// freeAddr is a loopback address nobody listens on, for now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln := listen(t, "127.0.0.1:0")
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// ping sends a message through c and reads what comes back.
func ping(c net.Conn) (string, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return "", err
	}
	buf := make([]byte, 4)
	n, err := io.ReadFull(c, buf)
	return string(buf[:n]), err
}

// closeWithin closes r, failing the test if Close does not return soon:
// nothing the relay holds may keep it waiting.
func closeWithin(t *testing.T, r *Relay, while string) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Close did not return %s", while)
	}
}

func TestRelay(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		// late: the target starts listening only after the client is
		// through to the relay; before, it refuses.
		late bool
		// down: nothing ever listens on the target.
		down bool
		want bool // the echo comes back through the relay
	}{
		{name: "forwards", want: true},
		{name: "accept filter refuses", opts: Options{Accept: func(net.Conn) bool { return false }}},
		{name: "accept filter serves", opts: Options{Accept: func(c net.Conn) bool {
			return c.RemoteAddr().(*net.TCPAddr).IP.IsLoopback()
		}}, want: true},
		{name: "refused target closes the client", down: true},
		{name: "patient dial waits for the target", opts: Options{Dial: Patient(5*time.Second, 10*time.Millisecond)}, late: true, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := freeAddr(t)
			if !tc.late && !tc.down {
				echo(t, listen(t, target))
			}
			r := New(listen(t, "127.0.0.1:0"), target, tc.opts)
			t.Cleanup(func() { _ = r.Close() })
			if r.Target() != target {
				t.Errorf("Target() = %s, want %s", r.Target(), target)
			}
			c, err := net.Dial("tcp", r.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if tc.late {
				// The relay is dialling a refusing port by now.
				time.Sleep(100 * time.Millisecond)
				echo(t, listen(t, target))
			}
			got, err := ping(c)
			if !tc.want {
				if err == nil {
					t.Fatalf("the relay forwarded (%q), want the connection closed", got)
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("the relay kept the connection open: %v", err)
				}
				return
			}
			if err != nil || got != "ping" {
				t.Fatalf("through the relay: %q, %v; want \"ping\"", got, err)
			}
			closeWithin(t, r, "with a connection open")
			if got, err := ping(c); err == nil {
				t.Errorf("the connection still forwards after Close: %q", got)
			} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("Close left the connection open: %v", err)
			}
			if c, err := net.DialTimeout("tcp", r.Addr(), time.Second); err == nil {
				c.Close()
				t.Errorf("the relay still listens after Close")
			}
		})
	}
}

// A retarget closes the connections to the old target and forwards new
// ones to the new.
func TestRelayRetarget(t *testing.T) {
	a, b := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
	echo(t, a)
	echo(t, b)
	r := New(listen(t, "127.0.0.1:0"), a.Addr().String(), Options{})
	defer r.Close()
	old, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got, err := ping(old); err != nil || got != "ping" {
		t.Fatalf("before the retarget: %q, %v", got, err)
	}
	r.Retarget(b.Addr().String())
	if r.Target() != b.Addr().String() {
		t.Errorf("Target() = %s, want %s", r.Target(), b.Addr())
	}
	if got, err := ping(old); err == nil {
		t.Errorf("the old connection still forwards after Retarget: %q", got)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := ping(c); err != nil || got != "ping" {
		t.Fatalf("after the retarget: %q, %v", got, err)
	}
}

// Close ends a dial under way rather than waiting out its patience.
func TestRelayCloseEndsDial(t *testing.T) {
	dialing := make(chan struct{})
	r := New(listen(t, "127.0.0.1:0"), freeAddr(t), Options{Dial: func(ctx context.Context, target string) (net.Conn, error) {
		close(dialing)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-dialing
	closeWithin(t, r, "with a dial under way")
}
