"""The splitbrain lock driver protocol (docs/driver-protocol.md, version 2)
for the Python drivers shipped with splitbrain: JSON lines on stdin and
stdout, one request at a time, points announced and held until the
go-ahead. A driver reads hello(), answers with send(ready), then serves
each request of requests() with reply()."""

import json
import os
import queue
import sys
import threading
import time


class Protocol:
    def __init__(self):
        self._out = threading.Lock()
        self._requests = queue.Queue()
        # The go-aheads by request id: a request given up (serve's
        # deadline) may still reach a point while the next one runs.
        self._gos = {}
        self._gos_lock = threading.Lock()
        self._closed = threading.Event()
        self._local = threading.local()
        self._replied = set()
        # Requests waiting at a point: their time there is the harness's.
        self._at_point = set()
        threading.Thread(target=self._read, daemon=True).start()

    def send(self, msg):
        with self._out:
            self._write(msg)

    def _write(self, msg):
        sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def _go(self, id):
        with self._gos_lock:
            return self._gos.setdefault(id, threading.Event())

    def _read(self):
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            msg = json.loads(line)
            if msg.get("op") == "go":
                self._go(msg.get("id")).set()
            else:
                self._requests.put(msg)
        self._closed.set()
        self._requests.put(None)  # stdin closed: exit

    def hello(self):
        """The hello, or None when stdin closed first."""
        return self._requests.get()

    def start(self, ready):
        """The real hello, or None when there is none to serve: stdin
        closed first, or a describe hello, answered with ready."""
        hello = self.hello()
        if hello is not None and hello.get("describe"):
            self.send(ready)
            return None
        return hello

    def dispatch(self, req, acquire, release, extend):
        """Serve req by its op: acquire(req, key) (what it returns is
        serve's undo), release(req), extend(req); any other op is
        answered unknown."""
        op = req.get("op")
        if op == "acquire":
            return acquire(req, req.get("key"))
        if op == "release":
            release(req)
        elif op == "extend":
            extend(req)
        else:
            self.reply(req, "unknown", detail="unknown op %r" % op)
        return None

    def release_held(self, req, held, release, done, refused, missing):
        """Serve a release of a lease in held: announce before-release,
        take the lease's lock out, and answer by what release(lock)
        returns — done, refused or missing as the detail."""
        self.point("before-release")
        lock = held.take(req["value"])
        if lock is None:
            self.reply(req, "fail", detail=missing)
        elif release(lock):
            self.reply(req, "ok", detail=done)
        else:
            self.reply(req, "fail", detail=refused)

    def requests(self):
        """Each request until stdin closes."""
        while True:
            req = self._requests.get()
            if req is None:
                return
            self._local.id = req["id"]
            yield req

    def point(self, name):
        """Announce a point of the request this thread serves and wait for
        the go-ahead. Announce each point once per attempt: the harness
        refuses a point announced twice in one request."""
        id = self._local.id
        with self._out:
            if id in self._replied:
                return  # answered already (given up): nothing more of it may reach the harness
            self._write({"op": "point", "id": id, "point": name})
        go = self._go(id)
        self._at_point.add(id)
        try:
            while not go.wait(0.5):
                if self._closed.is_set():
                    sys.exit(0)
            go.clear()
        finally:
            self._at_point.discard(id)

    def reply(self, req, result, **fields):
        """Answer req, once: a reply to a request already answered (given
        up by serve) is dropped."""
        # Stamped with the monotonic clock (CLOCK_MONOTONIC), so that the
        # harness counts a validity from the reply's writing.
        msg = {"op": "reply", "id": req["id"], "result": result, "mono_ns": time.monotonic_ns()}
        msg.update(fields)
        with self._out:
            if req["id"] in self._replied:
                return False
            self._replied.add(req["id"])
            self._write(msg)
        return True

    def serve(self, handle, deadline):
        """Serve every request with handle(req) on a thread of its own. A
        request not answered within deadline seconds is answered unknown
        (the lock's call is still blocked); handle's own reply to it is
        then dropped, and what handle returned — a function that undoes
        what the late call did, or None — is called."""
        for req in self.requests():
            done = threading.Event()
            undo = []

            def run(req=req, done=done, undo=undo):
                self._local.id = req["id"]
                try:
                    undo.append(handle(req))
                except Exception as e:  # a driver's bug: say so, go on
                    self.reply(req, "unknown", detail="%s: %s" % (type(e).__name__, e))
                done.set()
            threading.Thread(target=run, daemon=True).start()
            if self._wait(req["id"], done, deadline):
                continue
            if self.reply(req, "unknown", detail="the lock's call was still blocked after %gs: it waits for its servers "
                          "without bound; answered unknown, the call runs on" % deadline):
                def later(done=done, undo=undo):
                    done.wait()
                    if undo and undo[0] is not None:
                        undo[0]()
                threading.Thread(target=later, daemon=True).start()


    def _wait(self, id, done, deadline):
        """Wait until done, or until the request spent deadline seconds
        neither at a point (the harness holds it there) nor stopped (a
        SIGSTOP of the harness's: the loop's ticks stop with it)."""
        last = time.monotonic()
        busy = 0.0
        while not done.wait(0.1):
            now = time.monotonic()
            gap, last = now - last, now
            if id in self._at_point or gap > 1.0:
                continue
            busy += gap
            if busy > deadline:
                return False
        return True


class Held:
    """The leases a driver's lock handed out, by value, shared by the
    requests' threads (and a state listener's): hold mutex to read
    by_value as a whole."""

    def __init__(self):
        self.mutex = threading.Lock()
        self.by_value = {}

    def put(self, value, lock):
        with self.mutex:
            self.by_value[value] = lock

    def get(self, value):
        with self.mutex:
            return self.by_value.get(value)

    def take(self, value):
        """The lock of value, no longer held; None if none was."""
        with self.mutex:
            return self.by_value.pop(value, None)


def addr(a):
    """host:port as (host, port)."""
    host, port = a.rsplit(":", 1)
    return host, int(port)


def exit_after(stop, within):
    """Exit with status 0 once stop() returned, or after within seconds
    if it has not: the harness kills a driver that has not exited 2 s
    after its stdin closed (docs/driver-protocol.md). A library's stop
    that talks to its servers (tooz's joins its heartbeat thread, which
    may be in a request that waits without bound) can outlast that on a
    loaded machine; what it leaves undone — a lease not released — runs
    out on the servers as a crashed client's would. os._exit, not
    sys.exit: the interpreter's own shutdown joins the library's worker
    threads, which may be blocked the same way."""
    done = threading.Event()

    def run():
        try:
            stop()
        except Exception as e:  # the library's: say so, exit anyway
            print("stop(): %s: %s" % (type(e).__name__, e), file=sys.stderr)
        done.set()
    threading.Thread(target=run, daemon=True).start()
    if not done.wait(within):
        print("stop() was still blocked after %gs: exiting without it" % within, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
