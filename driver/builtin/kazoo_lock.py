"""A splitbrain lock driver for kazoo's Lock (Debian's python3-kazoo), the
Python world's ZooKeeper lock recipe: a sequential ephemeral znode under
/locks/<key>; the lowest holds; the znodes are the client's session's.
The protocol (docs/driver-protocol.md, version 2) is in sbdriver.py.

Belief: kazoo's acquire() returns True and nothing about time; kazoo's
documentation asks its user to watch the connection's state (SUSPENDED,
LOST) and stop trusting the lock then, but Lock itself says nothing, and
release() returns True whether the znode was still there or not. The
driver reports no validity (the belief lasts until the release) and says
in its ready that a release's outcome is not reported.

Run with the argument "listener" (lock kind kazoo-listener), the driver
is the user that documentation asks for: a state listener on the client
says, of every lock it holds, that it is lost (the protocol's lost) the
moment the connection goes SUSPENDED or LOST — kazoo's KazooState: on
SUSPENDED "a client should not assume that locks are valid during this
time", on LOST locks "can be considered lost as well" — and the user
stops believing there.

Fencing token: the lock znode's creation zxid (czxid), read once the lock
is ours (one more request): ZooKeeper's zxids grow with every write, so a
later holder's znode, created later, has a larger one — Kleppmann's
suggestion. kazoo hands out no token itself; a user who fences reads it so.
"""

import sys
import threading

import kazoo
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout, NoNodeError
from kazoo.recipe.lock import Lock
from kazoo.security import make_digest_acl

from sbdriver import Held, Protocol

proto = Protocol()
VERSION = kazoo.__version__
LISTENER = sys.argv[1:] == ["listener"]

READY = {"op": "ready", "name": "kazoo " + VERSION + (" with a state listener" if LISTENER else ""),
         "points": ["after-replies", "after-acquire", "before-release"],
         "servers": ["zookeeper"], "fenced": True, "unreported": ["release"],
         "library": "kazoo " + VERSION}
if LISTENER:
    READY["lost"] = True


class PointedLock(Lock):
    """kazoo's Lock with the after-replies point: its znode is made and the
    lock's children are read, acquire() has not acted on them yet. It is
    announced where acquire() decides: ours is the lowest (granted), or,
    for one attempt (blocking=False), it is not — refused, and the znode
    is deleted next (where a lost delete leaves the lock taken by nobody:
    docs/locks.md). A waiting acquire reads the children again at each
    wake-up, and announces only its grant: a point once per attempt."""

    blocking = True

    def acquire(self, blocking=True, timeout=None, ephemeral=True):
        self.blocking = blocking
        return super().acquire(blocking=blocking, timeout=timeout, ephemeral=ephemeral)

    def _get_predecessor(self, node):
        pred = super()._get_predecessor(node)
        if pred is None or not self.blocking:
            proto.point("after-replies")
        return pred


def main():
    hello = proto.start(READY)
    if hello is None:
        return
    user, password = hello["user"], hello["password"]
    session = (hello.get("session_timeout_ms") or 10000) / 1000
    client = KazooClient(hosts=",".join(n["addr"] for n in hello["nodes"]), timeout=session,
                         auth_data=[("digest", "%s:%s" % (user, password))],
                         default_acl=[make_digest_acl(user, password, all=True)])
    held = Held()  # lease value (the lock znode's name) -> Lock
    told = set()  # leases said lost
    # Set once the harness closed stdin: the client's own stop goes LOST,
    # which is no lock's loss to tell (and the harness reads no more).
    stopping = threading.Event()

    def listen(state):
        print("kazoo: connection state %s" % state, file=sys.stderr, flush=True)
        if not LISTENER or stopping.is_set() or state not in (KazooState.SUSPENDED, KazooState.LOST):
            return
        # On kazoo's event thread, which must not block: lost lines only.
        with held.mutex:
            for value in held.by_value:
                if value not in told:
                    told.add(value)
                    proto.send({"op": "lost", "value": value, "detail": "the connection went %s" % state})

    client.add_listener(listen)
    client.start(timeout=30)
    proto.send(READY)
    ttl = (hello.get("ttl_ms") or 1000) / 1000
    attempts = max(1, hello.get("retries", 1))

    def release(req):
        proto.release_held(req, held, lambda lock: lock.release(),
                           done="release() returned True (it does so for a znode already gone)",
                           refused="release() returned False: not acquired",
                           missing="no lock of this driver has that znode")

    def extend(req):
        # kazoo's lock lasts as long as its session; there is nothing to
        # extend. The driver shows the znode is there.
        lock = held.get(req["value"])
        if lock is None or client.exists(lock.path + "/" + lock.node) is None:
            proto.reply(req, "fail", detail="the lock znode is gone")
        else:
            proto.reply(req, "ok", value=req["value"])

    def handle(req):
        try:
            return proto.dispatch(req, acquire, release, extend)
        except LockTimeout as e:
            proto.reply(req, "fail", detail="LockTimeout: %s" % e)
        except KazooException as e:
            proto.reply(req, "unknown", detail="%s: %s" % (type(e).__name__, e))
        return None

    def acquire(req, key):
        lock = PointedLock(client, "/locks/" + key, identifier=hello.get("client"))
        # One attempt, or wait for the lock as retries attempts would (as
        # the in-process ZooKeeper lock does); kazoo retries a lost
        # connection until the timeout, and says False when it ran out.
        if attempts > 1:
            got = lock.acquire(blocking=True, timeout=attempts * ttl)
        else:
            got = lock.acquire(blocking=False, timeout=ttl)
        if not got:
            proto.reply(req, "fail", detail="acquire() returned False: held, or no answer within %gs" % ttl)
            return None
        path = lock.path + "/" + lock.node
        try:
            stat = client.exists(path)
        except KazooException as e:
            lock.release()
            proto.reply(req, "unknown", detail="acquired, but reading the lock znode's zxid failed: %s: %s" % (type(e).__name__, e))
            return None
        if stat is None:
            proto.reply(req, "fail", detail="acquired, but the lock znode %s is gone (session expired)" % path)
            return None
        with held.mutex:
            held.by_value[lock.node] = lock
            if LISTENER and client.state != KazooState.CONNECTED:
                # The connection went while the znode was read: the
                # listener has spoken already, of the locks it knew.
                told.add(lock.node)
                lost = True
            else:
                lost = False
        if lost:
            proto.send({"op": "lost", "value": lock.node, "detail": "the connection went %s as the lock was granted" % client.state})
        proto.point("after-acquire")
        proto.reply(req, "ok", value=lock.node, token=stat.czxid, detail=path)
        # Given up (answered unknown) before it was granted: the harness
        # took the grant for unknown, and nobody will release it.
        def undo():
            return held.take(lock.node) and lock.release()
        return undo

    # kazoo's requests wait, without bound, for a server to answer while
    # none does (its timeout bounds its retries, not a request): a request
    # still blocked after twice the session timeout (at least 4 s, as the
    # Curator driver: a client just continued on a loaded machine needs
    # time to reconnect; at most 8 s, under the harness's 10) is answered
    # unknown.
    proto.serve(handle, min(max(2 * session, 4), 8))
    stopping.set()
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
