"""A splitbrain lock driver for redis-py's redis.lock.Lock (Debian's
python3-redis): one instance, SET NX PX with a random token, release and
extend by Lua, no elapsed-time check, no fencing. It talks to n1, or, in
the Sentinel stories, to the master redis-py's Sentinel client finds. The
protocol (docs/driver-protocol.md, version 2) is in sbdriver.py beside it.

Belief: redis-py's acquire() returns True and nothing about time, so its
user counts the TTL from the moment acquire() returned (extend: from its
return). The validity reported is what is left of that at the reply.
"""

import time

import redis
import redis.sentinel
from redis.exceptions import LockError, LockNotOwnedError
from redis.lock import Lock

from sbdriver import Protocol, addr

proto = Protocol()


class PointedLock(Lock):
    """redis-py's Lock with the after-replies point: the SET's reply is in,
    acquire() has not returned yet."""

    def do_acquire(self, token):
        ok = super().do_acquire(token)
        if ok:
            proto.point("after-replies")
        return ok


class RoutedSentinel(redis.sentinel.Sentinel):
    """redis-py's Sentinel client, whose master's address (a server's own,
    as the sentinels hand it out) is replaced by the address this client
    reaches it at: hello's sentinel.routes."""

    def __init__(self, routes, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.routes = routes

    def discover_master(self, service_name):
        host, port = super().discover_master(service_name)
        via = self.routes.get("%s:%s" % (host, port))
        if via is None:
            raise redis.exceptions.ConnectionError(
                "the sentinels name %s:%s, which hello gave no route to" % (host, port))
        return addr(via)


# What the driver claims: its ready, to every hello (a describe hello
# connects to nothing).
READY = {"op": "ready", "name": "redis-py " + redis.__version__,
         "points": ["after-replies", "after-acquire", "before-release"],
         "servers": ["redis", "sentinel"], "deployments": ["one"],
         "library": "redis-py " + redis.__version__}


def connect(hello):
    timeout = hello.get("node_timeout_ms") or 1000
    opts = dict(password=hello.get("password"), socket_timeout=timeout / 1000,
                socket_connect_timeout=1, retry_on_timeout=False)
    if hello.get("server") == "sentinel":
        s = hello["sentinel"]
        sentinel = RoutedSentinel(s["routes"], [addr(n["addr"]) for n in s["nodes"]],
                                  sentinel_kwargs={"password": hello.get("password"),
                                                   "socket_timeout": timeout / 1000,
                                                   "socket_connect_timeout": 1},
                                  **opts)
        return sentinel.master_for(s["master"], **opts)
    host, port = addr(hello["nodes"][0]["addr"])
    return redis.Redis(host=host, port=port, **opts)


def main():
    hello = proto.start(READY)
    if hello is None:
        return
    conn = connect(hello)
    # Connected now, as the harness connects the clients of the locks it
    # runs itself: the first acquire measures the lock, not the handshake
    # (or, under Sentinel, the sentinels' answer), and keeps its
    # connection to the master it found.
    deadline = time.monotonic() + 10
    while True:
        try:
            conn.ping()
            break
        except redis.exceptions.RedisError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    proto.send(READY)
    attempts = max(1, hello.get("retries", 1))
    for req in proto.requests():
        op, key = req.get("op"), req.get("key")
        ttl = req.get("ttl_ms", 0) / 1000
        try:
            if op == "acquire":
                lock = PointedLock(conn, key, timeout=ttl, thread_local=False)
                # retries attempts, 10ms apart, as redislock's LimitRetry.
                got = lock.acquire(blocking=False)
                for _ in range(attempts - 1):
                    if got:
                        break
                    time.sleep(0.01)
                    got = lock.acquire(blocking=False)
                if got:
                    deadline = time.monotonic() + ttl
                    proto.point("after-acquire")
                    proto.reply(req, "ok", value=lock.local.token.decode(),
                                validity_ms=(deadline - time.monotonic()) * 1000)
                else:
                    proto.reply(req, "fail", detail="SET NX refused: the key is held")
            elif op == "release":
                proto.point("before-release")
                lock = Lock(conn, key, thread_local=False)
                lock.local.token = req["value"].encode()
                try:
                    lock.release()
                    proto.reply(req, "ok")
                except LockNotOwnedError as e:
                    proto.reply(req, "fail", detail=str(e))
            elif op == "extend":
                lock = Lock(conn, key, timeout=ttl, thread_local=False)
                lock.local.token = req["value"].encode()
                try:
                    lock.extend(ttl, replace_ttl=True)
                    deadline = time.monotonic() + ttl
                    proto.reply(req, "ok", value=req["value"],
                                validity_ms=(deadline - time.monotonic()) * 1000)
                except LockNotOwnedError as e:
                    proto.reply(req, "fail", detail=str(e))
            else:
                proto.reply(req, "unknown", detail="unknown op %r" % op)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
            # The command may have run: the outcome is unknown.
            proto.reply(req, "unknown", detail="%s: %s" % (type(e).__name__, e))
        except (redis.exceptions.RedisError, LockError) as e:
            proto.reply(req, "unknown", detail="%s: %s" % (type(e).__name__, e))


if __name__ == "__main__":
    main()
