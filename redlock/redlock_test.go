package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/redlock"
)

// offlineClients returns n clients that never connect on their own; tests
// that do not reach the network use them to build a Locker.
func offlineClients(t *testing.T, n int) []*redis.Client {
	t.Helper()
	cs := make([]*redis.Client, n)
	for i := range cs {
		cs[i] = redis.NewClient(redlock.ClientOptions(fmt.Sprintf("127.0.0.1:%d", 1+i), ""))
		t.Cleanup(func() { _ = cs[i].Close() })
	}
	return cs
}

func TestClientOptions(t *testing.T) {
	o := redlock.ClientOptions("127.0.0.1:6379", "secret")
	if o.Addr != "127.0.0.1:6379" || o.Password != "secret" {
		t.Errorf("Addr, Password = %q, %q", o.Addr, o.Password)
	}
	if o.MaxRetries != -1 {
		t.Errorf("MaxRetries = %d, want -1: a retried SET NX or EVAL can run twice", o.MaxRetries)
	}
	if !o.ContextTimeoutEnabled {
		t.Error("ContextTimeoutEnabled = false: a context deadline would not bound an in-flight read")
	}
	if o.PoolSize <= 0 || o.PoolSize > 16 {
		t.Errorf("PoolSize = %d, want a small explicit pool", o.PoolSize)
	}
	for name, d := range map[string]time.Duration{"DialTimeout": o.DialTimeout, "ReadTimeout": o.ReadTimeout, "WriteTimeout": o.WriteTimeout} {
		if d <= 0 || d > 5*time.Second {
			t.Errorf("%s = %v, want a positive backstop of at most 5s", name, d)
		}
	}
}

func TestNewRejects(t *testing.T) {
	clients := offlineClients(t, 3)
	tests := []struct {
		name    string
		nodes   []*redis.Client
		opts    redlock.Options
		wantErr string
	}{
		{"no nodes", nil, redlock.Options{}, "no nodes"},
		{"nil node", []*redis.Client{clients[0], nil}, redlock.Options{}, "nodes[1]"},
		{"negative node timeout", clients, redlock.Options{NodeTimeout: -1}, "Options.NodeTimeout"},
		{"drift factor too large", clients, redlock.Options{DriftFactor: 1.5}, "Options.DriftFactor"},
		{"negative drift const", clients, redlock.Options{DriftConst: -time.Second}, "Options.DriftConst"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := redlock.New(tt.nodes, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want one mentioning %q", err, tt.wantErr)
			}
			if l != nil {
				t.Errorf("New returned a Locker along with error %v", err)
			}
		})
	}
}

func TestQuorum(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4} {
		l, err := redlock.New(offlineClients(t, n), redlock.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Quorum(); got != want {
			t.Errorf("Quorum() with %d nodes = %d, want %d", n, got, want)
		}
		if got := l.Nodes(); got != n {
			t.Errorf("Nodes() = %d, want %d", got, n)
		}
	}
}

func TestTryLockRejectsArguments(t *testing.T) {
	l, err := redlock.New(offlineClients(t, 3), redlock.Options{NodeTimeout: 50 * time.Millisecond, DriftConst: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		key     string
		ttl     time.Duration
		wantErr string
		wantIs  error
	}{
		{"empty key", context.Background(), "", time.Second, "empty key", nil},
		{"ttl equal to node timeout", context.Background(), "k", 50 * time.Millisecond, "Options.NodeTimeout", nil},
		{"ttl truncates below node timeout", context.Background(), "k", 50*time.Millisecond + 999*time.Microsecond, "Options.NodeTimeout", nil},
		{"ttl within drift", context.Background(), "k", 100 * time.Millisecond, "drift", nil},
		{"context already cancelled", cancelled, "k", time.Second, "canceled", context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lease, err := l.TryLock(tt.ctx, tt.key, tt.ttl)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("TryLock error = %v, want one mentioning %q", err, tt.wantErr)
			}
			if lease != nil {
				t.Error("TryLock returned a lease along with an error")
			}
			if errors.Is(err, redlock.ErrNotAcquired) {
				t.Errorf("argument error %v matches ErrNotAcquired; retrying cannot help, so it must not", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v does not match %v", err, tt.wantIs)
			}
		})
	}
}

func TestReleaseNilLease(t *testing.T) {
	l, err := redlock.New(offlineClients(t, 1), redlock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Release(context.Background(), nil); err == nil || errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Release(nil) error = %v, want a plain argument error", err)
	}
}

func TestErrorTypes(t *testing.T) {
	cause := errors.New("dial tcp: connection refused")
	acq := error(&redlock.AcquireError{
		Key: "k", Granted: 2, Quorum: 3, Validity: -time.Millisecond,
		NodeErrs: []error{nil, nil, fmt.Errorf("node 2: %w", cause)},
		CtxErr:   context.DeadlineExceeded,
	})
	wrapped := fmt.Errorf("client c1: %w", acq)
	if !errors.Is(wrapped, redlock.ErrNotAcquired) {
		t.Error("AcquireError does not match ErrNotAcquired")
	}
	if errors.Is(wrapped, redlock.ErrNotHeld) {
		t.Error("AcquireError matches ErrNotHeld")
	}
	if !errors.Is(wrapped, cause) || !errors.Is(wrapped, context.DeadlineExceeded) {
		t.Error("AcquireError does not wrap its node and context causes")
	}
	var ae *redlock.AcquireError
	if !errors.As(wrapped, &ae) || ae.Granted != 2 || ae.Quorum != 3 {
		t.Errorf("errors.As AcquireError = %+v", ae)
	}
	for _, s := range []string{`"k"`, "2 of 3", "quorum 3", "node 2", "connection refused"} {
		if !strings.Contains(acq.Error(), s) {
			t.Errorf("AcquireError message %q lacks %q", acq.Error(), s)
		}
	}

	rel := error(&redlock.ReleaseError{
		Key: "k", Deleted: []int{0}, Quorum: 2,
		NodeErrs: []error{nil, fmt.Errorf("node 1: %w", cause), nil},
	})
	if !errors.Is(rel, redlock.ErrNotHeld) || errors.Is(rel, redlock.ErrNotAcquired) {
		t.Error("ReleaseError must match ErrNotHeld and only it")
	}
	if !errors.Is(rel, cause) {
		t.Error("ReleaseError does not wrap its node causes")
	}
	var re *redlock.ReleaseError
	if !errors.As(rel, &re) || len(re.Deleted) != 1 {
		t.Errorf("errors.As ReleaseError = %+v", re)
	}
}

// TestTryLockUnreachableNodes needs no redis-server: nothing listens on the
// nodes' ports, so every outcome is unknown and the attempt fails fast.
func TestTryLockUnreachableNodes(t *testing.T) {
	clients := make([]*redis.Client, 3)
	for i := range clients {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		clients[i] = redis.NewClient(redlock.ClientOptions(addr, ""))
		t.Cleanup(func() { _ = clients[i].Close() })
	}
	l, err := redlock.New(clients, redlock.Options{NodeTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lease, err := l.TryLock(t.Context(), "k", time.Second)
	if took := time.Since(start); took > time.Second {
		t.Errorf("TryLock took %v with all nodes refusing, want it bounded by the node timeout", took)
	}
	var ae *redlock.AcquireError
	if lease != nil || !errors.As(err, &ae) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock = %v, %v; want an AcquireError", lease, err)
	}
	if ae.Granted != 0 || ae.Quorum != 2 || len(ae.NodeErrs) != 3 {
		t.Errorf("AcquireError = %+v, want 0 granted, quorum 2, 3 node errors", ae)
	}
	for i, e := range ae.NodeErrs {
		if e == nil {
			t.Errorf("NodeErrs[%d] = nil for an unreachable node, want the dial error", i)
		}
	}
}

func TestErrorSentinels(t *testing.T) {
	cause := errors.New("i/o timeout")
	tests := []struct {
		name      string
		err       error
		match     []error
		dontMatch []error
	}{
		{
			name:      "acquire lost on quorum",
			err:       &redlock.AcquireError{Key: "k", Granted: 2, Quorum: 3, Validity: time.Second, NodeErrs: make([]error, 5)},
			match:     []error{redlock.ErrNotAcquired},
			dontMatch: []error{redlock.ErrExpired, redlock.ErrNotHeld},
		},
		{
			name:  "acquire with quorum but no validity left",
			err:   &redlock.AcquireError{Key: "k", Granted: 5, Quorum: 3, Validity: -time.Millisecond, NodeErrs: make([]error, 5)},
			match: []error{redlock.ErrNotAcquired, redlock.ErrExpired},
		},
		{
			name: "acquire whose fencing round fell short",
			err: &redlock.AcquireError{Key: "k", Granted: 5, Quorum: 3, Validity: time.Second, NodeErrs: make([]error, 5),
				FenceErr: &redlock.FenceError{Token: 9, Acks: 2, NodeErrs: []error{nil, nil, cause}}},
			match: []error{redlock.ErrNotAcquired, redlock.ErrLostQuorum, cause},
		},
		{
			name:      "release of a lock taken over",
			err:       &redlock.ReleaseError{Key: "k", Quorum: 3, Foreign: []int{0, 1, 2}, NodeErrs: make([]error, 5)},
			match:     []error{redlock.ErrNotHeld, redlock.ErrLostQuorum, redlock.ErrNotOwner},
			dontMatch: []error{redlock.ErrNotAcquired, redlock.ErrExpired},
		},
		{
			name:      "release of vanished keys",
			err:       &redlock.ReleaseError{Key: "k", Quorum: 3, NodeErrs: []error{cause, nil, nil}},
			match:     []error{redlock.ErrNotHeld, redlock.ErrLostQuorum, cause},
			dontMatch: []error{redlock.ErrNotOwner},
		},
		{
			name:      "extension refused before start",
			err:       &redlock.ExtendError{Key: "k", Quorum: 3, Validity: -time.Millisecond},
			match:     []error{redlock.ErrNotHeld, redlock.ErrExpired},
			dontMatch: []error{redlock.ErrLostQuorum, redlock.ErrNotOwner},
		},
		{
			name:      "extension short of a quorum",
			err:       &redlock.ExtendError{Key: "k", Quorum: 3, Extended: []int{0, 1}, Foreign: []int{4}, Validity: time.Second, NodeErrs: []error{nil, nil, cause, nil, nil}, CtxErr: context.Canceled},
			match:     []error{redlock.ErrNotHeld, redlock.ErrLostQuorum, redlock.ErrNotOwner, cause, context.Canceled},
			dontMatch: []error{redlock.ErrExpired},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err.Error() == "" {
				t.Error("empty message")
			}
			for _, m := range tt.match {
				if !errors.Is(tt.err, m) {
					t.Errorf("%v does not match %v", tt.err, m)
				}
			}
			for _, m := range tt.dontMatch {
				if errors.Is(tt.err, m) {
					t.Errorf("%v matches %v", tt.err, m)
				}
			}
		})
	}
}

func TestExtendAndDoRejectArguments(t *testing.T) {
	l, err := redlock.New(offlineClients(t, 3), redlock.Options{MaxExtensions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Extend(context.Background(), nil, time.Second); err == nil || errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Extend(nil) = %v, want a plain argument error", err)
	}
	capped := &redlock.Lease{Key: "k", Value: "v", TTL: time.Second, Deadline: time.Now().Add(time.Minute), Extensions: 1}
	if _, err := l.Extend(context.Background(), capped, 0); !errors.Is(err, redlock.ErrExtendLimit) {
		t.Errorf("Extend past the cap = %v, want ErrExtendLimit", err)
	}
	if _, err := l.Lock(context.Background(), "", time.Second); err == nil || errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("Lock with an empty key = %v, want a plain argument error", err)
	}
	called := false
	err = l.Do(context.Background(), "k", time.Millisecond, func(context.Context, *redlock.Lease) error { called = true; return nil })
	if err == nil || called {
		t.Errorf("Do with a ttl below the node timeout = %v (fn called: %v), want an error and no call", err, called)
	}
}
