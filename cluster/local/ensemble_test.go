package local_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/fault"
	"splitbrain/internal/testgate"
)

// ensembleOps is what the ensemble tests do to one kind of consensus
// server through its own client: write a value, read it from one member
// alone, tell which member leads, and show that a client without the run's
// password gets nothing.
type ensembleOps struct {
	kind *cluster.Kind
	// put writes key=val through every member's address.
	put func(ctx context.Context, cl *local.Cluster, key, val string) error
	// readFrom reads key from member n alone (its own state).
	readFrom func(ctx context.Context, cl *local.Cluster, n *local.Process, key string) (string, error)
	leader   func(ctx context.Context, cl *local.Cluster) (*local.Process, error)
	// stranger tries to read and write without the password; nil error
	// means it could.
	stranger func(ctx context.Context, cl *local.Cluster) error
}

func startEnsemble(t *testing.T, kind *cluster.Kind) *local.Cluster {
	t.Helper()
	// Three JVMs (or etcds) starting and electing are the costliest start
	// of any test here: they wait, as the plays do, until the machine's
	// CPUs have room (on CI's busy machine an ungated ensemble took 18.6
	// s to serve, and its two members left after a pause then found no
	// session for 3 minutes).
	testgate.Enter(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	cl, err := local.Start(ctx, cluster.Config{Kind: kind, Nodes: 3, Dir: t.TempDir(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatalf("StartLocal %s: %v", kind.Name, err)
	}
	t.Logf("%s: a 3-member ensemble ready (every member serving, access control on) after %v", kind.Name, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := cl.Close(testCtx(t)); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return cl
}

func addrs(cl *local.Cluster) []string {
	var out []string
	for _, n := range cl.Processes() {
		out = append(out, n.Addr())
	}
	return out
}

var zooKeeperOps = ensembleOps{
	kind: cluster.ZooKeeper,
	put: func(ctx context.Context, cl *local.Cluster, key, val string) error {
		c, _, err := cluster.DialZooKeeper(ctx, addrs(cl), 5*time.Second, cl.Password(), nil, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Create("/"+key, []byte(val), 0, cluster.ZooKeeperACL(cl.Password()))
		return err
	},
	readFrom: func(ctx context.Context, cl *local.Cluster, n *local.Process, key string) (string, error) {
		c, _, err := cluster.DialZooKeeper(ctx, []string{n.Addr()}, 5*time.Second, cl.Password(), nil, nil)
		if err != nil {
			return "", err
		}
		defer c.Close()
		b, _, err := c.Get("/" + key)
		return string(b), err
	},
	leader: func(ctx context.Context, cl *local.Cluster) (*local.Process, error) {
		for _, n := range cl.Processes() {
			if m, err := cluster.ZooKeeperMode(ctx, n.Addr()); err == nil && m == "leader" {
				return n, nil
			}
		}
		return nil, errors.New("no member says it leads")
	},
	stranger: func(ctx context.Context, cl *local.Cluster) error {
		c, _, err := zk.Connect(addrs(cl), 5*time.Second, zk.WithLogger(quiet{}))
		if err != nil {
			return fmt.Errorf("connect: %v", err)
		}
		defer c.Close()
		if err := c.AddAuth("digest", []byte("someone:guess")); err != nil {
			return fmt.Errorf("auth: %v", err)
		}
		if _, err := c.Create("/planted", nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
			return nil
		}
		_, _, err = c.Children("/")
		return err
	},
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func dialEtcd(cl *local.Cluster, endpoints ...string) (*clientv3.Client, error) {
	return cluster.DialEtcd(endpoints, cl.Password(), 5*time.Second)
}

var etcdOps = ensembleOps{
	kind: cluster.Etcd,
	put: func(ctx context.Context, cl *local.Cluster, key, val string) error {
		c, err := dialEtcd(cl, addrs(cl)...)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Put(ctx, key, val)
		return err
	},
	readFrom: func(ctx context.Context, cl *local.Cluster, n *local.Process, key string) (string, error) {
		c, err := dialEtcd(cl, n.Addr())
		if err != nil {
			return "", err
		}
		defer c.Close()
		r, err := c.Get(ctx, key, clientv3.WithSerializable())
		if err != nil {
			return "", err
		}
		if len(r.Kvs) == 0 {
			return "", fmt.Errorf("%s has no %s", n.Name(), key)
		}
		return string(r.Kvs[0].Value), nil
	},
	leader: func(ctx context.Context, cl *local.Cluster) (*local.Process, error) {
		c, err := dialEtcd(cl, addrs(cl)...)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		for _, n := range cl.Processes() {
			st, err := c.Status(ctx, n.Addr())
			if err == nil && st.Header.MemberId == st.Leader {
				return n, nil
			}
		}
		return nil, errors.New("no member says it leads")
	},
	// A stranger has no certificate of the run's authority: it tries
	// without TLS, then with a certificate of another authority. Issue 33,
	// hardening 2: etcd 3.4 answers LeaseLeases and LeaseKeepAlive without
	// authentication, and another user kept a run's leases alive; without
	// the run's certificate it gets no answer at all.
	stranger: func(ctx context.Context, cl *local.Cluster) error {
		other, err := cluster.EtcdTLS("not the run's password")
		if err != nil {
			return err
		}
		var errs []error
		for _, conf := range []*tls.Config{nil, other} {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := clientv3.New(clientv3.Config{Endpoints: addrs(cl), TLS: conf, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				cancel()
				errs = append(errs, fmt.Errorf("connect: %v", err))
				continue
			}
			_, perr := c.Put(sctx, "planted", "x")
			_, lerr := c.Leases(sctx)
			_, kerr := c.KeepAliveOnce(sctx, 1)
			_, gerr := c.Get(sctx, "k")
			c.Close()
			cancel()
			if perr == nil || lerr == nil || kerr == nil || gerr == nil {
				return nil
			}
			errs = append(errs, fmt.Errorf("put: %v; leases: %v; keep-alive: %v; get: %v", perr, lerr, kerr, gerr))
		}
		return errors.Join(errs...)
	},
}

// Each consensus kind starts a 3-member ensemble on loopback with access
// control on; a client without the run's password can neither read nor
// write; a paused leader stops answering while the other two elect a new
// one and go on serving; a killed member comes back, rejoins and has what
// was written while it was down.
func TestEnsembleFaults(t *testing.T) {
	t.Parallel()
	for _, ops := range []ensembleOps{zooKeeperOps, etcdOps} {
		t.Run(ops.kind.Name, func(t *testing.T) {
			t.Parallel()
			cl := startEnsemble(t, ops.kind)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := ops.stranger(ctx, cl); err == nil {
				t.Errorf("a client without the run's password could write or read")
			} else {
				t.Logf("a client without the password: %v", err)
			}
			if err := ops.put(ctx, cl, "before", "1"); err != nil {
				t.Fatalf("put: %v", err)
			}

			leader, err := ops.leader(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if err := leader.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			_, perr := leader.Conn().Probe(pctx)
			pcancel()
			if perr == nil {
				t.Errorf("the paused leader %s answered its probe", leader.Name())
			}
			// The other two elect a leader among themselves and serve.
			if err := eventually(ctx, func(ctx context.Context) error { return ops.put(ctx, cl, "during-pause", "2") }); err != nil {
				t.Errorf("no write while the leader %s was paused: %v", leader.Name(), err)
			}
			if err := leader.Resume(ctx); err != nil {
				t.Fatal(err)
			}

			victim := cl.Processes()[0]
			if err := victim.Kill(ctx); err != nil {
				t.Fatal(err)
			}
			// The victim may have been the leader: the two left elect
			// one ("leader changed" meanwhile), then take the write.
			if err := eventually(ctx, func(ctx context.Context) error { return ops.put(ctx, cl, "while-down", "3") }); err != nil {
				t.Errorf("no write with %s down: %v", victim.Name(), err)
			}
			if err := victim.Start(ctx); err != nil {
				t.Fatalf("restart %s: %v", victim.Name(), err)
			}
			err = eventually(ctx, func(ctx context.Context) error {
				v, err := ops.readFrom(ctx, cl, victim, "while-down")
				if err == nil && v != "3" {
					err = fmt.Errorf("read %q, want 3", v)
				}
				return err
			})
			if err != nil {
				t.Errorf("%s rejoined without what was written while it was down: %v", victim.Name(), err)
			}
		})
	}
}

// eventually retries f until it succeeds or ctx ends: elections and
// rejoins take their time, more of it on a loaded machine.
func eventually(ctx context.Context, f func(context.Context) error) error {
	for {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(fctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// What the consensus kinds cannot take is refused by name, never a silent
// no-op: etcd's clock (a Go binary reads its clock through the vDSO, not
// libc) and its wipe. The Docker backend runs both kinds, and refuses
// what each cannot take by the same reasons (docker's own tests).
func TestEnsembleRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind  *cluster.Kind
		fault fault.Capability
	}{
		{cluster.Etcd, fault.Clock},
		{cluster.Etcd, fault.Wipe},
		{cluster.Etcd, fault.PeerLink},
		{cluster.ZooKeeper, fault.Replica},
	}
	for _, c := range cases {
		err := c.kind.Refuse("n1", c.fault)
		var ue *cluster.UnsupportedError
		if !errors.As(err, &ue) || ue.Kind != c.kind.Name || ue.Fault != c.fault {
			t.Errorf("%s %s: got %v, want an *UnsupportedError naming both", c.kind.Name, c.fault, err)
		}
	}
	if err := cluster.ZooKeeper.Refuse("n1", fault.PeerLink); err != nil {
		t.Errorf("zookeeper peer links: %v, want supported (the shim routes the JVM's connects)", err)
	}
}
