package adapter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"splitbrain/cluster"
	"splitbrain/locks"
	"splitbrain/workload"
)

// ZooKeeperLock is ZooKeeper's lock recipe, written on go-zookeeper's
// client (its own zk.Lock waits without a context and hands out no
// zxid): a sequential ephemeral znode under /locks/<key>; the lowest
// holds; a waiter watches its predecessor. The znodes are the client's
// session's: when the session ends — released, or expired on the servers
// after a session timeout without a word from the client — they go, and
// the next waiter holds.
//
// Fencing token: the lock znode's creation zxid (Kleppmann's suggestion):
// every grant after this one is of a znode created later, whose zxid is
// larger.
//
// Its belief. ZooKeeper's API promises the lock until the session is lost,
// and the client learns of that only from its session events — late, when
// it is cut off (it hears Disconnected after 2/3 of the timeout at the
// earliest, Expired only once it reaches a server again). What the client
// can know for certain is a bound: the servers expire a session only after
// a whole session timeout without a packet from it, so the lease's Deadline
// is the instant the acquire's last request (the read of the znode's zxid)
// was sent, on the monotonic clock, plus the session timeout. Pings keep
// the session alive after that, but the client does not know that they
// arrived: a holder that keeps believing "until told" believes past the
// session's expiry — the story the harness shows.
type ZooKeeperLock struct {
	Conn *zk.Conn
	// SessionTimeout is the session's, as the client asked for it (the
	// servers grant it: it lies within their bounds).
	SessionTimeout time.Duration
	// ACL is given to every znode the lock creates.
	ACL []zk.ACL
	// Wait makes Acquire queue and wait for the lock up to this long;
	// zero means one attempt: not the lowest, the znode is deleted and
	// the lock refused.
	Wait time.Duration

	mu      sync.Mutex
	id      string          // the protected-mode GUID (guid)
	ensured map[string]bool // the lock directories made (ensure)
}

type zkLease struct {
	path string // the lock znode
}

const zkLockRoot = "/locks"

// Acquire implements Lock.
func (z *ZooKeeperLock) Acquire(ctx context.Context, key string, _ time.Duration) (*workload.Lease, error) {
	dir := zkLockRoot + "/" + key
	if err := z.ensure(dir); err != nil {
		// No lock znode was asked for: whatever became of the parent's
		// create, nothing holds the lock for this attempt. Recorded as
		// unknown, it would stand as a claim for as long as the session
		// lives, and the lock would never be free again in the history.
		return nil, errors.Join(workload.ErrNotAcquired, err)
	}
	me, err := z.create(dir)
	if errors.Is(err, zk.ErrSessionExpired) {
		// An ephemeral znode of an expired session is gone with it.
		return nil, errors.Join(workload.ErrNotAcquired, fmt.Errorf("zookeeper lock %q: create: %w", key, err))
	}
	if err != nil {
		return nil, fmt.Errorf("zookeeper lock %q: create: %w", key, err)
	}
	var waitUntil time.Time
	if z.Wait > 0 {
		waitUntil = time.Now().Add(z.Wait)
	}
	for {
		children, _, err := z.Conn.Children(dir)
		if err != nil {
			return nil, z.giveUp(me, fmt.Errorf("zookeeper lock %q: list: %w", key, err))
		}
		children = z.dropStrays(dir, children, path.Base(me))
		pred, mine := predecessor(children, path.Base(me))
		if !mine {
			// Our znode is gone: the session expired under us.
			return nil, errors.Join(workload.ErrNotAcquired, fmt.Errorf("zookeeper lock %q: our znode %s vanished (session expired)", key, me))
		}
		if pred == "" {
			sent := time.Now()
			ok, st, err := z.Conn.Exists(me)
			if err != nil {
				return nil, z.giveUp(me, fmt.Errorf("zookeeper lock %q: read our znode: %w", key, err))
			}
			if !ok {
				return nil, errors.Join(workload.ErrNotAcquired, fmt.Errorf("zookeeper lock %q: our znode %s vanished (session expired)", key, me))
			}
			token := st.Czxid
			return &workload.Lease{Key: key, Value: me, Deadline: sent.Add(z.SessionTimeout), Token: &token, Impl: &zkLease{path: me}}, nil
		}
		if waitUntil.IsZero() {
			return nil, z.giveUp(me, errors.Join(workload.ErrNotAcquired, fmt.Errorf("zookeeper lock %q: held (%s is before ours)", key, pred)))
		}
		ok, _, ev, err := z.Conn.ExistsW(dir + "/" + pred)
		if err != nil {
			return nil, z.giveUp(me, fmt.Errorf("zookeeper lock %q: watch %s: %w", key, pred, err))
		}
		if !ok {
			continue
		}
		left := time.Until(waitUntil)
		if left <= 0 {
			return nil, z.giveUp(me, errors.Join(workload.ErrNotAcquired, fmt.Errorf("zookeeper lock %q: still held after %v", key, z.Wait)))
		}
		t := time.NewTimer(left)
		select {
		case <-ev:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, z.giveUp(me, fmt.Errorf("zookeeper lock %q: %w", key, ctx.Err()))
		}
		t.Stop()
	}
}

// The recipe's protected mode (Curator's, kazoo's): a lock znode's name
// starts with _c_<guid>- so that its creator can find it by name when a
// create's reply is lost. A create whose outcome is unknown may have made
// the znode; left there it stays as long as the session does, and as the
// lowest it holds the lock for no one — every later attempt of every
// client, its own included, sees it before theirs. Curator looks for the
// node again until it finds and deletes it; kazoo finds it by its lock's
// GUID at the next attempt. This lock does the latter: one GUID for all
// its znodes, so that whatever znode of ours the list shows beside the one
// an attempt works with is a stray of an earlier attempt, and is deleted.
//
// go-zookeeper's CreateProtectedEphemeralSequential, which this lock used
// before, looks for its node only once, right after the connection closed
// under the create: when that list fails too (zk: could not connect to a
// server, while the client is still reconnecting), it returns the error
// and its GUID with it, and the znode is nobody's to delete until the
// session ends. Its zk.Lock is built on it.
const zkProtectedPrefix = "_c_"

// guid is this lock's protected-mode GUID, made at its first create.
func (z *ZooKeeperLock) guid() (string, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.id == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("protected-mode GUID: %w", err)
		}
		z.id = hex.EncodeToString(b[:])
	}
	return z.id, nil
}

// create makes a lock znode under dir in protected mode and returns its
// path. When the connection closed under the create, the znode is looked
// for by the GUID; when it cannot be found now, the error stands, and the
// next attempt's list deletes it if it was made after all (dropStrays).
func (z *ZooKeeperLock) create(dir string) (string, error) {
	id, err := z.guid()
	if err != nil {
		return "", err
	}
	prefix := zkProtectedPrefix + id + "-"
	me, err := z.Conn.Create(dir+"/"+prefix+"lock-", nil, zk.FlagEphemeral|zk.FlagSequence, z.ACL)
	if err == nil {
		return me, nil
	}
	if !errors.Is(err, zk.ErrConnectionClosed) {
		return "", err
	}
	children, _, lerr := z.Conn.Children(dir)
	if lerr != nil {
		return "", fmt.Errorf("%w; and looking for our znode failed: %v", err, lerr)
	}
	for _, c := range children {
		if strings.HasPrefix(c, prefix) {
			return dir + "/" + c, nil
		}
	}
	return "", err
}

// dropStrays deletes, best effort, the znodes of ours among children other
// than mine — left by attempts whose create or delete had no answer — and
// returns children without those it deleted.
func (z *ZooKeeperLock) dropStrays(dir string, children []string, mine string) []string {
	z.mu.Lock()
	prefix := zkProtectedPrefix + z.id + "-"
	z.mu.Unlock()
	out := children[:0:0]
	for _, c := range children {
		if c != mine && strings.HasPrefix(c, prefix) {
			err := z.Conn.Delete(dir+"/"+c, -1)
			if err == nil || errors.Is(err, zk.ErrNoNode) {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// giveUp deletes our znode after a failed attempt. The attempt's error
// stands: when the delete fails too, the znode may still be there and
// make us the holder later, so a refusal becomes unknown.
func (z *ZooKeeperLock) giveUp(me string, cause error) error {
	if err := z.Conn.Delete(me, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		if errors.Is(cause, workload.ErrNotAcquired) {
			return fmt.Errorf("%v; and deleting our znode failed, so it may still win: %w", cause, err)
		}
		return fmt.Errorf("%w; and deleting our znode failed: %v", cause, err)
	}
	return cause
}

// ensure creates dir and its parent (persistent, with the run's ACL), once
// per lock: nothing deletes them, and a create less is a request less
// that a cut can leave without an answer.
func (z *ZooKeeperLock) ensure(dir string) error {
	z.mu.Lock()
	done := z.ensured[dir]
	z.mu.Unlock()
	if done {
		return nil
	}
	for _, p := range []string{zkLockRoot, dir} {
		if _, err := z.Conn.Create(p, nil, 0, z.ACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zookeeper lock: create %s: %w", p, err)
		}
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.ensured == nil {
		z.ensured = map[string]bool{}
	}
	z.ensured[dir] = true
	return nil
}

// predecessor finds the znode just before mine in sequence order ("" when
// mine is the lowest) and whether mine is among children at all.
func predecessor(children []string, mine string) (string, bool) {
	seq := func(name string) string { return name[strings.LastIndex(name, "-")+1:] }
	sort.Slice(children, func(i, j int) bool { return seq(children[i]) < seq(children[j]) })
	for i, c := range children {
		if c == mine {
			if i == 0 {
				return "", true
			}
			return children[i-1], true
		}
	}
	return "", false
}

// Release implements Lock: deleting the znode. ErrNoNode (the session
// expired, the znode went with it) is ErrNotHeld.
func (z *ZooKeeperLock) Release(_ context.Context, lease *workload.Lease) error {
	l, ok := lease.Impl.(*zkLease)
	if !ok {
		return errors.New("zookeeper adapter: lease was not acquired through this adapter")
	}
	if err := z.Conn.Delete(l.path, -1); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return errors.Join(workload.ErrNotHeld, err)
		}
		if zkTransient(err) {
			go z.deleteUntilDone(l.path)
		}
		return fmt.Errorf("zookeeper release %q: %w", lease.Key, err)
	}
	return nil
}

// zkDeleteRetry is how soon deleteUntilDone tries again.
const zkDeleteRetry = 100 * time.Millisecond

// zkTransient reports whether err is the connection's, not the request's:
// the request may succeed once the client has reconnected.
func zkTransient(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)
}

// deleteUntilDone deletes a lock znode whose release failed on the
// connection, in the background, again and again until the delete is
// done, the znode is gone (its session ended) or the failure is no longer
// the connection's (the client closed at the run's end: ErrClosing) — as
// Curator's guaranteed() delete, which its mutex releases with for this
// case ("deleting a node can fail due to connection issues"). Without it
// the znode lived on with the session, which the client keeps alive once
// it reconnects, and nobody got the lock again (release-cut-off; the
// release is one Delete in go-zookeeper's zk.Lock, which still does so).
// The release itself stays failed: its user was told so.
func (z *ZooKeeperLock) deleteUntilDone(path string) {
	for {
		time.Sleep(zkDeleteRetry)
		if err := z.Conn.Delete(path, -1); err == nil || !zkTransient(err) {
			return
		}
	}
}

// Extend implements Lock: the session is what holds the lock, so an
// extension is a request that shows the session alive (a read of the
// znode): its Deadline is when that read was sent plus the session
// timeout. A znode gone is ErrNotExtended.
func (z *ZooKeeperLock) Extend(_ context.Context, lease *workload.Lease, _ time.Duration) (*workload.Lease, error) {
	l, ok := lease.Impl.(*zkLease)
	if !ok {
		return nil, errors.New("zookeeper adapter: lease was not acquired through this adapter")
	}
	sent := time.Now()
	exists, _, err := z.Conn.Exists(l.path)
	if err != nil {
		return nil, fmt.Errorf("zookeeper extend %q: %w", lease.Key, err)
	}
	if !exists {
		return nil, errors.Join(workload.ErrNotExtended, fmt.Errorf("zookeeper extend %q: znode %s gone (session expired)", lease.Key, l.path))
	}
	out := *lease
	out.Deadline = sent.Add(z.SessionTimeout)
	return &out, nil
}

// consensusSetUpTimeout bounds a client's first session or connection.
const consensusSetUpTimeout = 30 * time.Second

// retryWait is how long a consensus lock's acquire waits for the lock
// when the scenario asks for retries (lock.retries · TTL); zero: one
// attempt.
func retryWait(env Env) time.Duration {
	if env.Retries > 1 {
		return time.Duration(env.Retries) * env.TTL
	}
	return 0
}

// buildZooKeeper is the client's ZooKeeper session with the ensemble
// through its own proxies, its connections passing the client's gate
// (gatedDialer), and the gate at after-acquire and before-release (the
// recipe has no point between replies and a validity check).
func buildZooKeeper(ctx context.Context, _ *locks.Kind, env Env) (workload.Lock, error) {
	ctx, cancel := context.WithTimeout(ctx, consensusSetUpTimeout)
	defer cancel()
	timeout := min(env.TTL, cluster.ZooKeeperMaxSession)
	conn, _, err := cluster.DialZooKeeper(ctx, nodeAddrs(env), timeout, env.Password, func(e zk.Event) {
		if e.Type == zk.EventSession && (e.State == zk.StateExpired || e.State == zk.StateDisconnected) {
			env.Logf("%s: ZooKeeper session event: %s", env.Client, e.State)
		}
	}, gatedDialer(env.Gate, env.Blackholed))
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", env.Client, err)
	}
	env.Rig.OnClose(func() { conn.Close() })
	return gatedLock{Lock: &ZooKeeperLock{Conn: conn, SessionTimeout: timeout,
		ACL: cluster.ZooKeeperACL(env.Password), Wait: retryWait(env)}, gate: env.Gate}, nil
}

func nodeAddrs(env Env) []string {
	addrs := make([]string, len(env.Nodes))
	for i, n := range env.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}
