package adapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"

	"splitbrain/cluster"
	"splitbrain/locks"
	"splitbrain/workload"
)

// EtcdLock is an etcd lock on a lease of its own per acquisition: etcd's
// client mutex (concurrency.Mutex, client v3.5, which checks after
// waiting that its key still exists — the fix of etcd issue 11456), or,
// with V3Lock, the 3.4 server's Lock RPC (v3lock), which runs the unfixed
// 3.4 mutex inside the server and returns after waiting without that
// check (Jepsen's etcd 3.4.3 finding).
//
// The lease. Each acquire grants a lease of the lock's TTL (etcd rounds it
// up to whole seconds, and to its minimum) and puts the lock key on it;
// the lease is not kept alive in the background. A concurrency.Session
// would keep it alive from a goroutine of its own, which a harness client
// pause does not stop while a real stop-the-world pause would: so the
// lease lives its TTL, and Extend renews it once (KeepAliveOnce), like a
// Redis TTL. Release deletes the key and revokes the lease.
//
// Fencing token: the mutex's key's create revision (etcd's revisions only
// grow; the next holder's key is created later). The Lock RPC answers the
// key's name and a response header, not the key's create revision; its
// token is the header's revision, that of the read that found no key
// before ours, which also grows from one grant to the next.
//
// Its belief: while the lease is alive as the client knows it — the
// instant the grant (or the keep-alive) was sent, on the monotonic clock,
// plus the TTL the servers answered. Only the leader expires leases, at
// least a TTL after the grant reached it; a new leader renews every lease
// to its TTL plus an election timeout, so the lease can outlive this
// bound, never fall short of it.
type EtcdLock struct {
	Client *clientv3.Client
	// Wait makes Acquire wait for the lock up to this long (Lock instead
	// of TryLock); zero means one attempt. The Lock RPC always waits:
	// zero means up to the TTL.
	Wait time.Duration
	// V3Lock uses the server's Lock RPC instead of the client's mutex.
	V3Lock bool
	// Session, when set, is the client's one session, kept alive by the
	// etcd client in the background, which every acquisition of the
	// client mutex uses, as etcd's documentation does (NewSession once,
	// NewMutex per lock): each acquisition's key is the same,
	// prefix/<the session's lease>, a grant has no deadline (the belief
	// lasts until the release or the session's end: Lease.Lost), and the
	// release is the mutex's Unlock — a delete of the key by its name,
	// which a retried Unlock of an earlier grant repeats on a later one
	// (etcd issue 22082).
	Session *concurrency.Session
}

type etcdLease struct {
	id  clientv3.LeaseID
	key string
	rev int64 // the key's create revision (mutex); 0 for v3lock
	// m is the mutex of a grant on the client's session (Session).
	m *concurrency.Mutex
}

const etcdLockPrefix = "/locks/"

// Acquire implements Lock.
func (e *EtcdLock) Acquire(ctx context.Context, key string, ttl time.Duration) (*workload.Lease, error) {
	if s := e.Session; s != nil && !e.V3Lock {
		l, token, err := e.lockWith(ctx, key, s)
		if err != nil {
			return nil, err
		}
		// The key's name is the same at every grant: the value names
		// the grant by its create revision too.
		return &workload.Lease{Key: key, Value: fmt.Sprintf("%s@%d", l.key, l.rev), Token: &token, Lost: s.Done(), Impl: l}, nil
	}
	secs := int64((ttl + time.Second - 1) / time.Second)
	sent := time.Now()
	g, err := e.Client.Grant(ctx, secs)
	if err != nil {
		return nil, fmt.Errorf("etcd lock %q: grant a lease: %w", key, err)
	}
	deadline := sent.Add(time.Duration(g.TTL) * time.Second)
	var l *etcdLease
	var token int64
	if e.V3Lock {
		l, token, err = e.lockRPC(ctx, key, g.ID, ttl)
	} else {
		l, token, err = e.mutex(ctx, key, g.ID)
	}
	if err != nil {
		// A lease revoked takes whatever it may have been granted with it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_, rerr := e.Client.Revoke(rctx, g.ID)
		cancel()
		if rerr != nil && (e.V3Lock || !errors.Is(err, workload.ErrNotAcquired)) {
			// The lease lives on until its TTL, and with it a lock the
			// server may have granted meanwhile: the outcome is unknown.
			return nil, fmt.Errorf("%v; revoking its lease failed, so it may hold the lock until the lease ends: %w", err, rerr)
		}
		// The mutex deleted its own key when it gave up.
		return nil, err
	}
	return &workload.Lease{Key: key, Value: l.key, Deadline: deadline, Token: &token, Impl: l}, nil
}

func (e *EtcdLock) mutex(ctx context.Context, key string, id clientv3.LeaseID) (*etcdLease, int64, error) {
	// The session only carries the lease to the mutex: orphaned at once,
	// it keeps nothing alive (see the type's comment).
	sctx, cancel := context.WithCancel(ctx)
	s, err := concurrency.NewSession(e.Client, concurrency.WithLease(id), concurrency.WithContext(sctx))
	if err != nil {
		cancel()
		return nil, 0, fmt.Errorf("etcd lock %q: session: %w", key, err)
	}
	s.Orphan()
	cancel()
	return e.lockWith(ctx, key, s)
}

// lockWith takes the client mutex of key on session s.
func (e *EtcdLock) lockWith(ctx context.Context, key string, s *concurrency.Session) (*etcdLease, int64, error) {
	var err error
	m := concurrency.NewMutex(s, etcdLockPrefix+key)
	if e.Wait <= 0 {
		err = m.TryLock(ctx)
	} else {
		wctx, wcancel := context.WithTimeout(ctx, e.Wait)
		err = m.Lock(wctx)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// Lock deleted our key when its wait ended.
			err = errors.Join(workload.ErrNotAcquired, fmt.Errorf("still held after %v", e.Wait))
		}
		wcancel()
	}
	switch {
	case err == nil:
	case errors.Is(err, concurrency.ErrLocked), errors.Is(err, concurrency.ErrSessionExpired):
		return nil, 0, errors.Join(workload.ErrNotAcquired, fmt.Errorf("etcd lock %q: %w", key, err))
	case errors.Is(err, workload.ErrNotAcquired):
		return nil, 0, fmt.Errorf("etcd lock %q: %w", key, err)
	default:
		return nil, 0, fmt.Errorf("etcd lock %q: %w", key, err)
	}
	rev := m.Header().GetRevision()
	// The mutex keeps its key's create revision to itself; its key's
	// revision is read back by the txn that made or found it.
	g, err := e.Client.Get(ctx, m.Key())
	if err == nil && len(g.Kvs) == 1 {
		rev = g.Kvs[0].CreateRevision
	} else if err == nil {
		return nil, 0, errors.Join(workload.ErrNotAcquired, fmt.Errorf("etcd lock %q: our key vanished (lease expired)", key))
	}
	l := &etcdLease{id: s.Lease(), key: m.Key(), rev: rev}
	if s == e.Session {
		l.m = m
	}
	return l, rev, nil
}

// lockRPC calls v3lock's Lock, encoded by hand: the generated stubs live
// in etcd's server module, far too much to import for two messages.
//
//	LockRequest  { bytes name = 1; int64 lease = 2; }
//	LockResponse { ResponseHeader header = 1; bytes key = 2; }
//	ResponseHeader { ...; int64 revision = 3; ... }
func (e *EtcdLock) lockRPC(ctx context.Context, key string, id clientv3.LeaseID, ttl time.Duration) (*etcdLease, int64, error) {
	wait := e.Wait
	if wait <= 0 {
		wait = ttl
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, []byte(etcdLockPrefix+key))
	req = protowire.AppendTag(req, 2, protowire.VarintType)
	req = protowire.AppendVarint(req, uint64(id))
	resp := &rawMessage{}
	err := e.Client.ActiveConnection().Invoke(wctx, "/v3lockpb.Lock/Lock", &rawMessage{b: req}, resp, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			// The server may still grant it; the lease's revoke takes it
			// back, after which the refusal is certain.
			return nil, 0, errors.Join(workload.ErrNotAcquired, fmt.Errorf("etcd v3lock %q: still held after %v", key, wait))
		}
		return nil, 0, fmt.Errorf("etcd v3lock %q: %w", key, rpctypes.Error(err))
	}
	lockKey, rev, err := parseLockResponse(resp.b)
	if err != nil {
		return nil, 0, fmt.Errorf("etcd v3lock %q: %w", key, err)
	}
	return &etcdLease{id: id, key: lockKey}, rev, nil
}

func parseLockResponse(b []byte) (key string, revision int64, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", 0, fmt.Errorf("LockResponse: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			hdr, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return "", 0, fmt.Errorf("LockResponse.header: %w", protowire.ParseError(n))
			}
			b = b[n:]
			for len(hdr) > 0 {
				hnum, htyp, m := protowire.ConsumeTag(hdr)
				if m < 0 {
					return "", 0, fmt.Errorf("ResponseHeader: %w", protowire.ParseError(m))
				}
				hdr = hdr[m:]
				if hnum == 3 && htyp == protowire.VarintType {
					v, m := protowire.ConsumeVarint(hdr)
					if m < 0 {
						return "", 0, fmt.Errorf("ResponseHeader.revision: %w", protowire.ParseError(m))
					}
					revision = int64(v)
					hdr = hdr[m:]
					continue
				}
				m = protowire.ConsumeFieldValue(hnum, htyp, hdr)
				if m < 0 {
					return "", 0, fmt.Errorf("ResponseHeader: %w", protowire.ParseError(m))
				}
				hdr = hdr[m:]
			}
		case num == 2 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return "", 0, fmt.Errorf("LockResponse.key: %w", protowire.ParseError(n))
			}
			key = string(v)
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return "", 0, fmt.Errorf("LockResponse: %w", protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	if key == "" || revision == 0 {
		return "", 0, fmt.Errorf("LockResponse without key or revision")
	}
	return key, revision, nil
}

// rawMessage and rawCodec carry hand-encoded protobuf over gRPC.
type rawMessage struct{ b []byte }

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(*rawMessage)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot marshal %T", v)
	}
	return m.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*rawMessage)
	if !ok {
		return fmt.Errorf("raw codec: cannot unmarshal into %T", v)
	}
	m.b = append(m.b[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// Release implements Lock: the key deleted if it is still ours (ErrNotHeld
// when it is gone: the lease expired), then the lease revoked.
func (e *EtcdLock) Release(ctx context.Context, lease *workload.Lease) error {
	l, ok := lease.Impl.(*etcdLease)
	if !ok {
		return errors.New("etcd adapter: lease was not acquired through this adapter")
	}
	if l.m != nil {
		// etcd's Unlock: the key deleted by its name, whatever grant has
		// it now; it does not say whether there was one.
		if err := l.m.Unlock(ctx); err != nil {
			return fmt.Errorf("etcd release %q: unlock: %w", lease.Key, err)
		}
		return nil
	}
	cmp := clientv3.Compare(clientv3.LeaseValue(l.key), "=", l.id)
	r, err := e.Client.Txn(ctx).If(cmp).Then(clientv3.OpDelete(l.key)).Commit()
	if err != nil {
		return fmt.Errorf("etcd release %q: %w", lease.Key, err)
	}
	_, rerr := e.Client.Revoke(ctx, l.id)
	if !r.Succeeded {
		return errors.Join(workload.ErrNotHeld, fmt.Errorf("etcd release %q: key %s gone (lease expired)", lease.Key, l.key))
	}
	if rerr != nil && !errors.Is(rerr, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("etcd release %q: revoke: %w", lease.Key, rerr)
	}
	return nil
}

// Extend implements Lock: one keep-alive of the lease; its Deadline is
// when it was sent plus the TTL answered. A lease gone is ErrNotExtended.
func (e *EtcdLock) Extend(ctx context.Context, lease *workload.Lease, _ time.Duration) (*workload.Lease, error) {
	l, ok := lease.Impl.(*etcdLease)
	if !ok {
		return nil, errors.New("etcd adapter: lease was not acquired through this adapter")
	}
	if l.m != nil {
		// The session is kept alive in the background: nothing to ask.
		select {
		case <-e.Session.Done():
			return nil, errors.Join(workload.ErrNotExtended, fmt.Errorf("etcd extend %q: the client's session has ended", lease.Key))
		default:
			return lease, nil
		}
	}
	sent := time.Now()
	k, err := e.Client.KeepAliveOnce(ctx, l.id)
	if err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return nil, errors.Join(workload.ErrNotExtended, err)
		}
		return nil, fmt.Errorf("etcd extend %q: %w", lease.Key, err)
	}
	out := *lease
	out.Deadline = sent.Add(time.Duration(k.TTL) * time.Second)
	return &out, nil
}

// buildEtcd is the client's etcd client with the cluster through its own
// proxies, connected and logged in, and the client's gate at after-acquire
// and before-release: the client mutex, or the Lock RPC for etcd-v3lock.
func buildEtcd(ctx context.Context, k *locks.Kind, env Env) (workload.Lock, error) {
	ctx, cancel := context.WithTimeout(ctx, consensusSetUpTimeout)
	defer cancel()
	c, err := cluster.DialEtcd(nodeAddrs(env), env.Password, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", env.Client, err)
	}
	env.Rig.OnClose(func() { _ = c.Close() })
	// Connect (and log in) now, so that the first acquire measures the
	// lock, not the handshake.
	for _, err = c.Get(ctx, "/"); err != nil && ctx.Err() == nil; _, err = c.Get(ctx, "/") {
		workload.Sleep(ctx, 50*time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("client %s: connecting to the etcd members: %w", env.Client, err)
	}
	l := &EtcdLock{Client: c, Wait: retryWait(env), V3Lock: k.Adapter == "etcd-v3lock"}
	if env.SessionPerClient && !l.V3Lock {
		secs := int((env.TTL + time.Second - 1) / time.Second)
		if l.Session, err = concurrency.NewSession(c, concurrency.WithTTL(secs)); err != nil {
			return nil, fmt.Errorf("client %s: etcd session: %w", env.Client, err)
		}
		// Its keep-alive stops with the run; the lease ends a TTL later.
		env.Rig.OnClose(l.Session.Orphan)
	}
	return gatedLock{Lock: l, gate: env.Gate}, nil
}
