package cluster

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestParsePortRange(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi int
		desc   string
	}{
		{"32768\t60999\n", 32768, 60999, "32768-60999"},
		{"40000 40005", 40000, 40005, "40000-40005"},
		{"1024 65535", 1024, 65535, "1024-65535"},
		// Unreadable: Linux's default, and the text as it was.
		{"", 32768, 60999, `""`},
		{"60999 32768", 32768, 60999, `"60999 32768"`},
		{"a b", 32768, 60999, `"a b"`},
		{"0 70000", 32768, 60999, `"0 70000"`},
	} {
		lo, hi, desc := parsePortRange(tc.in)
		if lo != tc.lo || hi != tc.hi || desc != tc.desc {
			t.Errorf("parsePortRange(%q) = %d, %d, %s; want %d, %d, %s", tc.in, lo, hi, desc, tc.lo, tc.hi, tc.desc)
		}
	}
}

// fakeListen binds nothing: the ports in taken answer EADDRINUSE, the
// others succeed; 0 gets ephemeral.
func fakeListen(taken map[int]bool, ephemeral int, calls *[]int) func(int) (int, error) {
	return func(port int) (int, error) {
		*calls = append(*calls, port)
		if port == 0 {
			if ephemeral == 0 {
				return 0, syscall.EADDRINUSE
			}
			return ephemeral, nil
		}
		if taken[port] {
			return 0, syscall.EADDRINUSE
		}
		return port, nil
	}
}

// A connection the kernel had no local port for is explained; any other
// error is left as it is.
func TestNoLocalPort(t *testing.T) {
	var calls []int
	free := fakeListen(nil, 45000, &calls)  // a listen on port 0 succeeds
	exhausted := fakeListen(nil, 0, &calls) // it fails: EADDRINUSE
	noPort := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EADDRNOTAVAIL)}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name      string
		err       error
		listen    func(int) (int, error)
		explained bool
	}{
		{"the dial had no local port", noPort, free, true},
		{"a proxy's dial onwards had none: the range is full now", context.DeadlineExceeded, exhausted, true},
		{"refused, ports left", refused, free, false},
		{"timed out, ports left", context.DeadlineExceeded, free, false},
		{"no error", nil, exhausted, false},
	} {
		got := noLocalPort(tc.err, tc.listen)
		if !tc.explained {
			if got != tc.err {
				t.Errorf("%s: %v, want %v unchanged", tc.name, got, tc.err)
			}
			continue
		}
		if !errors.Is(got, ErrNoFreePort) || !errors.Is(got, tc.err) {
			t.Errorf("%s: %v, want ErrNoFreePort wrapping %v", tc.name, got, tc.err)
			continue
		}
		for _, w := range []string{"no local port for a connection", "ephemeral range", "ip_local_port_range"} {
			if !strings.Contains(got.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
	}
}

func TestPortPoolTake(t *testing.T) {
	t.Run("round robin past taken ports", func(t *testing.T) {
		p := &portPool{lo: 10000, hi: 10003, eph: "10004-60999", next: 10002}
		var calls []int
		listen := fakeListen(map[int]bool{10003: true, 10000: true}, 0, &calls)
		var got []int
		for range 3 {
			port, err := p.take(listen)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, port)
		}
		// 10002, then past 10003 (taken) and 10000 (taken) to 10001, then
		// round to 10002 again: a port just handed out comes last.
		if want := []int{10002, 10001, 10002}; !slices.Equal(got, want) {
			t.Errorf("ports %v, want %v (probed %v)", got, want, calls)
		}
	})
	t.Run("every port taken", func(t *testing.T) {
		p := &portPool{lo: 10000, hi: 10002, eph: "10003-65535", next: 10001}
		var calls []int
		_, err := p.take(fakeListen(map[int]bool{10000: true, 10001: true, 10002: true}, 0, &calls))
		if !errors.Is(err, ErrNoFreePort) || !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("err %v, want ErrNoFreePort wrapping EADDRINUSE", err)
		}
		for _, w := range []string{"10000 to 10002", "10003-65535", "ip_local_port_range"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q lacks %q", err, w)
			}
		}
		if len(calls) != 3 {
			t.Errorf("probed %v, want each port once", calls)
		}
	})
	t.Run("no room below the ephemeral range", func(t *testing.T) {
		p := newPortPool(lowestNodePort, 1023, "1024-65535")
		var calls []int
		port, err := p.take(fakeListen(nil, 45000, &calls))
		if err != nil || port != 45000 || !slices.Equal(calls, []int{0}) {
			t.Errorf("take = %d, %v after probing %v; want the ephemeral 45000 from port 0", port, err, calls)
		}
		_, err = p.take(fakeListen(nil, 0, &calls))
		if !errors.Is(err, ErrNoFreePort) || !strings.Contains(err.Error(), "ephemeral range 1024-65535") {
			t.Errorf("err %v, want ErrNoFreePort naming the ephemeral range", err)
		}
	})
	t.Run("start within the pool", func(t *testing.T) {
		for range 100 {
			p := newPortPool(10000, 10009, "")
			if p.next < 10000 || p.next > 10009 {
				t.Fatalf("start %d outside 10000-10009", p.next)
			}
		}
	})
}
