"""A splitbrain lock driver for redis-py's redis.lock.Lock (Debian's
python3-redis): one instance, SET NX PX with a random token, release and
extend by Lua, no elapsed-time check, no fencing. The protocol is
docs/driver-protocol.md; this file is also its example in a second
language.

Belief: redis-py's acquire() returns True and nothing about time, so its
user counts the TTL from the moment acquire() returned (extend: from its
return). The validity reported is what is left of that at the reply.
"""

import json
import queue
import sys
import threading
import time

import redis
from redis.exceptions import LockError, LockNotOwnedError
from redis.lock import Lock

out_lock = threading.Lock()


def send(msg):
    line = json.dumps(msg, separators=(",", ":"))
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


requests = queue.Queue()
go_aheads = queue.Queue()


def read_stdin():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if msg.get("op") == "go":
            go_aheads.put(msg)
        else:
            requests.put(msg)
    requests.put(None)  # stdin closed: exit
    go_aheads.put(None)


current = {"id": 0}


def point(name):
    """Announce a point of the current request; wait for the go-ahead."""
    send({"op": "point", "id": current["id"], "point": name})
    while True:
        msg = go_aheads.get()
        if msg is None:
            sys.exit(0)
        if msg.get("id") == current["id"]:
            return


class PointedLock(Lock):
    """redis-py's Lock with the after-replies point: the SET's reply is in,
    acquire() has not returned yet."""

    def do_acquire(self, token):
        ok = super().do_acquire(token)
        if ok:
            point("after-replies")
        return ok


def main():
    threading.Thread(target=read_stdin, daemon=True).start()
    hello = requests.get()
    if hello is None:
        return
    node = hello["nodes"][0]
    host, port = node["addr"].rsplit(":", 1)
    timeout = hello.get("node_timeout_ms") or 1000
    conn = redis.Redis(host=host, port=int(port), password=hello.get("password"),
                       socket_timeout=timeout / 1000, socket_connect_timeout=1,
                       retry_on_timeout=False)
    send({"op": "ready", "name": "redis-py " + redis.__version__,
          "points": ["after-replies", "after-acquire", "before-release"]})
    deadlines = {}  # lease value -> deadline on time.monotonic()
    while True:
        req = requests.get()
        if req is None:
            return
        current["id"] = req["id"]
        op, key = req.get("op"), req.get("key")
        ttl = req.get("ttl_ms", 0) / 1000
        reply = {"op": "reply", "id": req["id"]}
        try:
            if op == "acquire":
                lock = PointedLock(conn, key, timeout=ttl, thread_local=False)
                # retries attempts, 10ms apart, as redislock's LimitRetry.
                got = lock.acquire(blocking=False)
                for _ in range(max(1, hello.get("retries", 1)) - 1):
                    if got:
                        break
                    time.sleep(0.01)
                    got = lock.acquire(blocking=False)
                if got:
                    deadline = time.monotonic() + ttl
                    value = lock.local.token.decode()
                    deadlines[value] = deadline
                    point("after-acquire")
                    reply.update(result="ok", value=value,
                                 validity_ms=(deadline - time.monotonic()) * 1000)
                else:
                    reply.update(result="fail", detail="SET NX refused: the key is held")
            elif op == "release":
                point("before-release")
                lock = Lock(conn, key, thread_local=False)
                lock.local.token = req["value"].encode()
                deadlines.pop(req["value"], None)
                try:
                    lock.release()
                    reply.update(result="ok")
                except LockNotOwnedError as e:
                    reply.update(result="fail", detail=str(e))
            elif op == "extend":
                lock = Lock(conn, key, timeout=ttl, thread_local=False)
                lock.local.token = req["value"].encode()
                try:
                    lock.extend(ttl, replace_ttl=True)
                    deadline = time.monotonic() + ttl
                    deadlines[req["value"]] = deadline
                    reply.update(result="ok", value=req["value"],
                                 validity_ms=(deadline - time.monotonic()) * 1000)
                except LockNotOwnedError as e:
                    reply.update(result="fail", detail=str(e))
            else:
                reply.update(result="unknown", detail="unknown op %r" % op)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
            # The command may have run: the outcome is unknown.
            reply.update(result="unknown", detail="%s: %s" % (type(e).__name__, e))
        except (redis.exceptions.RedisError, LockError) as e:
            reply.update(result="unknown", detail="%s: %s" % (type(e).__name__, e))
        send(reply)


if __name__ == "__main__":
    main()
