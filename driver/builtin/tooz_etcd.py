"""A splitbrain lock driver for tooz's etcd lock (OpenStack's coordination
library, Debian's python3-tooz; its etcd3gw driver, over etcd's gRPC
gateway): a key /tooz/locks<name> created in a transaction, if it has
never been created, with a lease of lock_timeout seconds; the heartbeat
thread (start_heart) refreshes the lease every half lock_timeout; the
release deletes the key if it still holds the lock's uuid. The protocol
(docs/driver-protocol.md, version 2) is in sbdriver.py.

Belief: acquire() returns True and nothing about time, and the lock's
`acquired` is whether tooz put it in its set of held locks: the
heartbeat's refresh of a lease that expired (etcd answers TTL -1) is not
looked at, so the user believes until the release. The driver reports no
validity. release() does say False for a key gone or another's — but a
user who lost the lock learns it only then.

One endpoint: tooz's etcd URL names one host, so the driver talks to the
first node only (n1): with n1 down or cut off it gets no lock, whatever
the other members do.

Glue the library does not have: the etcd3gw driver has no user and
password, and every run's etcd takes authenticated clients only; the
driver asks the gateway for a token (POST /v3/auth/authenticate) and
sends it with every request (the Authorization header, as the gateway's
API documents), and asks again when a member forgot it (a restart loses
its simple tokens). And the members' certificates name the run's server
name, which the driver checks whatever address it dials; and the session
takes nothing from the environment (see main).

Debian 12's packages do not fit together: tooz 3.1.0 passes api_path to
etcd3gw.client(), which Debian's etcd3gw 2.0.0 does not take (its
Etcd3Client does), so get_coordinator fails with a TypeError before any
request. The driver hands tooz the class in place of the function; nothing
else of either library is touched.

Timeouts: etcd3gw sets `timeout` on its requests.Session, which requests
never reads (a Session has no timeout): a request to a member that does
not answer waits without bound. The driver answers such a request
unknown after its deadline (sbdriver.serve), as it does kazoo's.

Fencing token: the lock key's create_revision, read once the lock is
ours (one more request): etcd's revisions grow with every write, so a
later holder's key, created later, has a larger one. tooz hands out no
token itself; a user who fences reads it so.
"""

import base64
from importlib import metadata
import math
import sys
import threading
import urllib.parse

import etcd3gw
import requests.adapters
import requests.exceptions
import urllib3.exceptions
import tenacity
import tooz
from etcd3gw import exceptions as etcd3gw_exc
from tooz import coordination
from tooz.drivers import etcd3gw as tooz_etcd3gw

from sbdriver import Held, Protocol, exit_after

# See the top: Debian's etcd3gw.client() takes no api_path.
tooz_etcd3gw.etcd3gw.client = etcd3gw.Etcd3Client

proto = Protocol()
# tooz says its version only in its package's metadata.
VERSION = metadata.version("tooz")

READY = {"op": "ready", "name": "tooz " + VERSION + " (etcd3gw)",
         "points": ["after-replies", "after-acquire", "before-release"],
         "servers": ["etcd"], "fenced": True,
         "library": "tooz " + VERSION}


class ServerNameAdapter(requests.adapters.HTTPAdapter):
    """Checks the members' certificates against the run's server name,
    whatever address is dialled."""

    def __init__(self, server_name):
        self._server_name = server_name
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["assert_hostname"] = self._server_name
        kwargs["server_hostname"] = self._server_name
        super().init_poolmanager(*args, **kwargs)


def authenticated(client, user, password):
    """Has every request of etcd3gw's client carry a token of user's."""
    post = client.post
    token = threading.Lock()

    def login():
        with token:
            client.session.headers.pop("Authorization", None)
            reply = post(client.get_url("/auth/authenticate"), json={"name": user, "password": password})
            client.session.headers["Authorization"] = reply["token"]

    def authed_post(*args, **kwargs):
        try:
            return post(*args, **kwargs)
        except etcd3gw_exc.Etcd3Exception as e:
            # The gateway answers 401 with etcd's error in the body
            # ("etcdserver: invalid auth token").
            said = "%s %s" % (e, getattr(e, "detail_text", "") or "")
            if "Unauthorized" not in said and "invalid auth token" not in said and "user name is empty" not in said:
                raise
        login()
        return post(*args, **kwargs)

    login()
    client.post = authed_post


def never_sent(e):
    """Whether e is a connection that was never made (refused, or no
    route), so that the request cannot have reached n1: its outcome is a
    refusal, not unknown."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, requests.exceptions.ConnectionError) and e.args:
            reason = getattr(e.args[0], "reason", None)
            if isinstance(reason, urllib3.exceptions.NewConnectionError):
                return True
        e = e.__cause__ or e.__context__
    return False


def main():
    hello = proto.start(READY)
    if hello is None:
        return
    tls = hello["tls"]
    host, port = hello["nodes"][0]["addr"].rsplit(":", 1)
    ttl = (hello.get("ttl_ms") or 2000) / 1000
    # tooz reads both as whole seconds (int()); the lock kind fits only
    # stories whose TTL is one.
    lock_timeout = max(1, math.ceil(ttl))
    timeout = max(1, math.ceil((hello.get("node_timeout_ms") or 1000) / 1000))
    options = {"api_version": "v3", "ca_cert": tls["ca_file"], "cert_cert": tls["cert_file"],
               "cert_key": tls["key_file"], "lock_timeout": lock_timeout, "timeout": timeout}
    url = "etcd3+https://%s:%s?%s" % (host, port, urllib.parse.urlencode(options))
    coord = coordination.get_coordinator(url, hello["client"].encode())
    coord.client.session.mount("https://", ServerNameAdapter(tls["server_name"]))
    # Nothing from the environment: REQUESTS_CA_BUNDLE would replace the
    # run's authority the session was given (requests issue 3829), and an
    # HTTPS_PROXY would carry the traffic off the harness's relays.
    coord.client.session.trust_env = False
    authenticated(coord.client, hello["user"], hello["password"])
    # The heartbeat thread keeps each held lock's lease alive (tooz's
    # documentation: start the heart, or call heartbeat() yourself).
    coord.start(start_heart=True)
    proto.send(READY)
    attempts = max(1, hello.get("retries", 1))
    held = Held()  # lease value (the lease id, hex) -> lock

    def release(req):
        proto.release_held(req, held, lambda lock: lock.release(),
                           done="release() returned True: the key held the lock's uuid and was deleted",
                           refused="release() returned False: the key is gone or another's",
                           missing="no lock of this driver has that lease")

    def extend(req):
        # The heartbeat refreshes the lease; the driver shows the key is
        # still the lock's.
        lock = held.get(req["value"])
        if lock is None or read_key(lock)[0] is None:
            proto.reply(req, "fail", detail="the lock key is gone or another's")
        else:
            proto.reply(req, "ok", value=req["value"])

    def handle(req):
        try:
            return proto.dispatch(req, acquire, release, extend)
        except (tooz.ToozError, etcd3gw_exc.Etcd3Exception) as e:
            if never_sent(e):
                proto.reply(req, "fail", detail="n1 refused the connection: nothing was sent (%s)" % type(e).__name__)
            else:
                proto.reply(req, "unknown", detail="%s: %s" % (type(e).__name__, e))
        return None

    def read_key(lock):
        """The lock key's metadata while it holds the lock's uuid (None
        else), and what became of it: ours, gone or another's."""
        kvs = coord.client.get(lock._key, metadata=True)
        if not kvs:
            return None, "gone"
        if kvs[0][0] != base64.b64decode(lock._uuid):
            return None, "another's"
        return kvs[0][1], "ours"

    # The after-replies point: the transaction that creates the key
    # answered, acquire() has not returned yet. Requests run on threads of
    # their own (sbdriver.serve): only an acquire's thread stops there.
    acquiring = threading.local()
    transaction = coord.client.transaction

    def pointed(txn):
        result = transaction(txn)
        if getattr(acquiring, "on", False) and result.get("succeeded") is True:
            proto.point("after-replies")
        return result
    coord.client.transaction = pointed

    def acquire(req, key):
        lock = coord.get_lock(key.encode())
        acquiring.on = True
        try:
            # One attempt, or wait for the lock as retries attempts would.
            got = lock.acquire(blocking=attempts * ttl if attempts > 1 else False)
        except tenacity.RetryError:
            # A blocking acquire that ran out of time (tooz's retry
            # gives up with tenacity's error, not False).
            got = False
        finally:
            acquiring.on = False
        if not got:
            proto.reply(req, "fail", detail="acquire() returned False: the key exists")
            return None
        value = "%x" % lock._lease.id
        try:
            meta, became = read_key(lock)
        except (tooz.ToozError, etcd3gw_exc.Etcd3Exception) as e:
            # Granted (acquire() returned True), but no token: give it
            # back. If the release fails too, the lock stays among tooz's
            # held ones, its lease refreshed by the heartbeat: the grant's
            # outcome is unknown, never a refusal.
            try:
                released = "returned %s" % lock.release()
            except (tooz.ToozError, etcd3gw_exc.Etcd3Exception) as e2:
                released = "raised %s: %s" % (type(e2).__name__, e2)
            proto.reply(req, "unknown", detail="acquire() returned True, but reading the key's revision failed (%s: %s), "
                        "and release() %s" % (type(e).__name__, e, released))
            return None
        # A user who fences reads the revision of the key it created: if
        # its lease ran out between the transaction and this read (the
        # client stopped), the key is gone or another's, and so is the
        # lock, whatever tooz says.
        if meta is None:
            proto.reply(req, "fail", detail="acquire() returned True, but the lock key is %s by the time its revision was read "
                        "(its lease expired)" % became)
            return None
        held.put(value, lock)
        proto.point("after-acquire")
        proto.reply(req, "ok", value=value, token=int(meta["create_revision"]), detail="lease %s" % value)

        # Given up (answered unknown) before it was granted: the harness
        # took the grant for unknown, and nobody will release it.
        def undo():
            return held.take(value) and lock.release()
        return undo

    # etcd3gw's requests wait without bound (see the top): a request
    # still blocked after twice the lock timeout (at least 4 s, at most
    # 8 s, under the harness's 10) is answered unknown.
    proto.serve(handle, min(max(2 * lock_timeout, 4), 8))
    # stop() releases what is held and joins the heartbeat thread, which
    # may be in a request to a member that stood still (a CI run here
    # was killed so): at most 1 s of the harness's 2 s grace.
    exit_after(coord.stop, 1.0)


if __name__ == "__main__":
    main()
