// A splitbrain lock driver for Apache Curator's InterProcessMutex (Debian's
// libcurator-recipes-java on libzookeeper-java), the ZooKeeper lock recipe
// Kleppmann recommends in place of Redlock. One JVM per client for the
// whole play. The protocol is docs/driver-protocol.md, version 2.
//
// Belief: acquire() returns true and nothing about time; Curator's
// documentation asks its user to watch the connection's state (SUSPENDED,
// LOST) and stop trusting the lock then, which InterProcessMutex itself
// does not. The driver reports no validity: the belief lasts until the
// release. release() deletes the lock znode and ignores a znode already
// gone (ready: unreported release).
//
// Fencing token: the lock znode's creation zxid (czxid), read once the
// lock is ours (one more request). Not its version: a lock znode is never
// written after its creation, so its version is 0 for every holder.
// zxids grow with every write to the ensemble, so a later holder's znode,
// created later, has a larger czxid — Kleppmann's suggestion for
// ZooKeeper. Curator hands out no token itself.
//
// Every request runs on one worker thread (InterProcessMutex belongs to
// the thread that acquired it); a request still blocked after a deadline
// (the ZooKeeper client waits for its servers while none answers) is
// answered unknown, and a grant that comes later is released.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.PredicateResults;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;

public final class CuratorDriver {
    static final PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    static final LinkedBlockingQueue<Map<String, Object>> requests = new LinkedBlockingQueue<>();
    static final Map<Long, LinkedBlockingQueue<Boolean>> gos = new ConcurrentHashMap<>();
    static final Map<Long, Boolean> replied = new ConcurrentHashMap<>();
    /** Requests waiting at a point: their time there is the harness's. */
    static final Map<Long, Boolean> atPoint = new ConcurrentHashMap<>();
    static volatile boolean closed;
    static final ThreadLocal<Long> current = ThreadLocal.withInitial(() -> 0L);

    /** The version in a jar's Maven pom.properties (Debian's jars have no Implementation-Version). */
    static String version(Class<?> c, String group, String artifact) {
        try (java.io.InputStream in = c.getResourceAsStream("/META-INF/maven/" + group + "/" + artifact + "/pom.properties")) {
            java.util.Properties p = new java.util.Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (Exception e) {
            return "unknown";
        }
    }

    /**
     * Run with "listener" (lock kind curator-listener), the driver is the
     * user Curator's error-handling note asks for: a ConnectionStateListener
     * says, of every lock it holds, that it is lost (the protocol's lost)
     * the moment the connection goes SUSPENDED or LOST ("If a SUSPENDED
     * state is reported you cannot be certain that you still hold the lock
     * unless you subsequently receive a RECONNECTED state. If a LOST state
     * is reported it is certain that you no longer hold the lock"), and the
     * user stops believing there.
     */
    static boolean listener;

    static Map<String, Object> ready() {
        Map<String, Object> m = new LinkedHashMap<>();
        String lib = "curator " + version(InterProcessMutex.class, "org.apache.curator", "curator-recipes");
        m.put("op", "ready");
        m.put("name", "Curator InterProcessMutex " + lib + (listener ? " with a state listener" : ""));
        m.put("points", List.of("after-replies", "after-acquire", "before-release"));
        m.put("servers", List.of("zookeeper"));
        m.put("fenced", true);
        m.put("unreported", List.of("release"));
        if (listener) {
            m.put("lost", true);
        }
        m.put("library", lib);
        m.put("client_library", "zookeeper " + version(org.apache.zookeeper.ZooKeeper.class, "org.apache.zookeeper", "zookeeper"));
        return m;
    }

    static synchronized void send(Map<String, Object> m) {
        out.print(Json.write(m) + "\n");
        out.flush();
    }

    static synchronized boolean reply(long id, String result, Object... kv) {
        if (replied.putIfAbsent(id, true) != null) {
            return false;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("op", "reply");
        m.put("id", id);
        m.put("result", result);
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        send(m);
        return true;
    }

    /** Announce a point of the request this thread serves; wait for the go-ahead. */
    static void point(String name) throws InterruptedException {
        long id = current.get();
        synchronized (CuratorDriver.class) {
            if (replied.containsKey(id)) {
                return; // answered already (given up): nothing more of it may reach the harness
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("op", "point");
            m.put("id", id);
            m.put("point", name);
            send(m);
        }
        LinkedBlockingQueue<Boolean> q = gos.computeIfAbsent(id, k -> new LinkedBlockingQueue<>());
        atPoint.put(id, true);
        try {
            while (q.poll(500, TimeUnit.MILLISECONDS) == null) {
                if (closed) {
                    System.exit(0);
                }
            }
        } finally {
            atPoint.remove(id);
        }
    }

    static void readStdin() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                line = line.trim();
                if (line.isEmpty()) {
                    continue;
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> msg = (Map<String, Object>) Json.parse(line);
                if ("go".equals(msg.get("op"))) {
                    gos.computeIfAbsent(num(msg.get("id")), k -> new LinkedBlockingQueue<>()).add(true);
                } else {
                    requests.add(msg);
                }
            }
        } catch (Exception e) {
            System.err.println("curator driver: reading stdin: " + e);
        }
        closed = true;
        requests.add(Map.of("op", "closed"));
    }

    static long num(Object o) {
        return o == null ? 0 : ((Number) o).longValue();
    }

    /**
     * The lock driver with the after-replies point: its znode is made and the lock's children are read, acquire() has
     * not acted on them yet. Announced where acquire() decides: ours is the lowest (granted), or, for one attempt (no
     * wait), it is not — refused, and the znode is deleted next (guaranteed(): see docs/locks.md on kazoo's). A waiting
     * acquire reads the children again at each wake-up and announces only its grant; a single attempt reads them again
     * when the node it would watch went meanwhile (Curator's internalLockLoop), and announces only the first read: a
     * point once per attempt. A driver serves one acquire of a mutex (a Mutex per acquire).
     */
    static final class PointedDriver extends StandardLockInternalsDriver {
        private final boolean once;
        private boolean announced;

        PointedDriver(boolean once) {
            this.once = once;
        }

        @Override
        public PredicateResults getsTheLock(CuratorFramework client, List<String> children, String sequenceNodeName, int maxLeases) throws Exception {
            PredicateResults r = super.getsTheLock(client, children, sequenceNodeName, maxLeases);
            if ((r.getsTheLock() || once) && !announced) {
                announced = true;
                point("after-replies");
            }
            return r;
        }
    }

    /** InterProcessMutex with its lock znode's path in view; once: its acquires are single attempts (no wait). */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path, boolean once) {
            super(client, path, new PointedDriver(once));
        }

        String path() {
            return getLockPath();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--train")) {
            // For the class-data archive: load what a play loads, connect to nothing.
            CuratorFramework c = CuratorFrameworkFactory.builder().connectString("127.0.0.1:1")
                .retryPolicy(new ExponentialBackoffRetry(1000, 3)).build();
            new Mutex(c, "/locks/train", true);
            Json.write(ready());
            Json.parse("{\"a\":[1,2.5,\"x\",{\"b\":null,\"c\":true}]}");
            return;
        }
        listener = args.length > 0 && args[0].equals("listener");
        Thread reader = new Thread(CuratorDriver::readStdin, "stdin");
        reader.setDaemon(true);
        reader.start();
        Map<String, Object> hello = requests.take();
        if (closed && !"hello".equals(hello.get("op"))) {
            return;
        }
        if (Boolean.TRUE.equals(hello.get("describe"))) {
            send(ready());
            return;
        }
        StringBuilder hosts = new StringBuilder();
        for (Object n : (List<?>) hello.get("nodes")) {
            if (hosts.length() > 0) {
                hosts.append(',');
            }
            hosts.append(((Map<?, ?>) n).get("addr"));
        }
        String auth = hello.get("user") + ":" + hello.get("password");
        int session = (int) Math.max(num(hello.get("session_timeout_ms")), 1000);
        List<ACL> acl = ZooDefs.Ids.CREATOR_ALL_ACL;
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(hosts.toString())
            .sessionTimeoutMs(session)
            .connectionTimeoutMs(session)
            // Curator's getting-started retry policy.
            .retryPolicy(new ExponentialBackoffRetry(1000, 3))
            .authorization("digest", auth.getBytes(StandardCharsets.UTF_8))
            .aclProvider(new ACLProvider() {
                public List<ACL> getDefaultAcl() { return acl; }
                public List<ACL> getAclForPath(String path) { return acl; }
            })
            .build();
        // By lease value; the listener reads it from Curator's event thread.
        Map<String, Mutex> held = new ConcurrentHashMap<>();
        Set<String> told = ConcurrentHashMap.newKeySet();
        // Set once the harness closed stdin: the client's own close is no
        // lock's loss to tell.
        AtomicBoolean stopping = new AtomicBoolean();
        client.getConnectionStateListenable().addListener((c, state) -> {
            System.err.println("curator: connection state " + state);
            if (!listener || stopping.get() || (state != ConnectionState.SUSPENDED && state != ConnectionState.LOST)) {
                return;
            }
            for (String value : held.keySet()) {
                if (told.add(value)) {
                    send(Map.<String, Object>of("op", "lost", "value", value, "detail", "the connection went " + state));
                }
            }
        });
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("curator driver: no connection to " + hosts + " within 30s");
            System.exit(1);
        }
        send(ready());

        double ttl = Math.max(num(hello.get("ttl_ms")), 1) / 1000.0;
        int attempts = (int) Math.max(1, num(hello.get("retries")));
        ExecutorService worker = Executors.newSingleThreadExecutor();
        // The ZooKeeper client waits, without bound, for a server to answer
        // while none does: a request still blocked after twice the session
        // timeout (at least 4 s, at most 8 s, under the harness's 10) is
        // answered unknown. At least 4 s: continued after a SIGSTOP on a
        // loaded machine, this JVM once took over 2 s (twice a 1 s
        // session) to reconnect and answer a release (driver check,
        // "release of a lost lease", a fresh-clone CI run).
        long deadline = Math.min(Math.max(2L * session, 4000L), 8000L);
        while (true) {
            Map<String, Object> req = requests.take();
            if ("closed".equals(req.get("op"))) {
                break;
            }
            long id = num(req.get("id"));
            final boolean[] givenUp = {false};
            Future<?> f = worker.submit(() -> {
                current.set(id);
                Mutex late = serve(client, req, id, held, told, ttl, attempts);
                synchronized (givenUp) {
                    if (givenUp[0] && late != null) {
                        // Granted after it was answered unknown: nobody will release it.
                        held.values().remove(late);
                        try {
                            late.release();
                        } catch (Exception e) {
                            System.err.println("curator driver: releasing a late grant: " + e);
                        }
                    }
                }
                return null;
            });
            if (!finishes(f, id, deadline)) {
                synchronized (givenUp) {
                    // Given up only if this reply is the one the harness reads.
                    givenUp[0] = reply(id, "unknown", "detail", "the lock's call was still blocked after " + deadline
                        + "ms: the ZooKeeper client waits for its servers; answered unknown, the call runs on");
                }
            }
        }
        stopping.set(true);
        worker.shutdownNow();
        client.close();
    }

    /**
     * Waits until f is done, or until the request spent deadline ms neither
     * at a point (the harness holds it there) nor stopped (a SIGSTOP of the
     * harness's: the loop's ticks stop with it).
     */
    static boolean finishes(Future<?> f, long id, long deadline) throws InterruptedException {
        long last = System.nanoTime();
        long busy = 0;
        while (true) {
            try {
                f.get(100, TimeUnit.MILLISECONDS);
                return true;
            } catch (TimeoutException e) {
                long now = System.nanoTime();
                long gap = (now - last) / 1_000_000;
                last = now;
                if (atPoint.containsKey(id) || gap > 1000) {
                    continue;
                }
                busy += gap;
                if (busy > deadline) {
                    return false;
                }
            } catch (java.util.concurrent.ExecutionException e) {
                return true;
            }
        }
    }

    /** Serves one request; returns the mutex it granted, if any. */
    static Mutex serve(CuratorFramework client, Map<String, Object> req, long id, Map<String, Mutex> held, Set<String> told, double ttl, int attempts) {
        String op = (String) req.get("op");
        try {
            switch (op) {
                case "acquire": {
                    // One attempt (no wait), or wait as retries attempts would.
                    long wait = attempts > 1 ? (long) (attempts * ttl * 1000) : 0;
                    Mutex m = new Mutex(client, "/locks/" + req.get("key"), wait == 0);
                    if (!m.acquire(wait, TimeUnit.MILLISECONDS)) {
                        reply(id, "fail", "detail", "acquire() returned false: held");
                        return null;
                    }
                    String path = m.path();
                    Stat st;
                    try {
                        st = client.checkExists().forPath(path);
                    } catch (Exception e) {
                        m.release();
                        reply(id, "unknown", "detail", "acquired, but reading the lock znode's zxid failed: " + e);
                        return null;
                    }
                    if (st == null) {
                        reply(id, "fail", "detail", "acquired, but the lock znode " + path + " is gone (session expired)");
                        return null;
                    }
                    String value = path.substring(path.lastIndexOf('/') + 1);
                    held.put(value, m);
                    if (listener && !client.getZookeeperClient().isConnected() && told.add(value)) {
                        // The connection went while the znode was read: the
                        // listener has spoken already, of the locks it knew.
                        send(Map.<String, Object>of("op", "lost", "value", value, "detail", "the connection went as the lock was granted"));
                    }
                    point("after-acquire");
                    reply(id, "ok", "value", value, "token", st.getCzxid(), "detail", path);
                    return m;
                }
                case "release": {
                    point("before-release");
                    Mutex m = held.remove((String) req.get("value"));
                    if (m == null) {
                        reply(id, "fail", "detail", "no lock of this driver has that znode");
                        return null;
                    }
                    try {
                        m.release();
                        reply(id, "ok", "detail", "release() returned (it does for a znode already gone)");
                    } catch (IllegalMonitorStateException e) {
                        reply(id, "fail", "detail", "IllegalMonitorStateException: " + e.getMessage());
                    }
                    return null;
                }
                case "extend": {
                    // The lock lasts as long as its session: nothing to extend.
                    // The driver shows the znode is there.
                    Mutex m = held.get((String) req.get("value"));
                    if (m == null || m.path() == null || client.checkExists().forPath(m.path()) == null) {
                        reply(id, "fail", "detail", "the lock znode is gone");
                    } else {
                        reply(id, "ok", "value", req.get("value"));
                    }
                    return null;
                }
                default:
                    reply(id, "unknown", "detail", "unknown op " + op);
                    return null;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            reply(id, "unknown", "detail", "interrupted");
        } catch (Exception e) {
            // A lost connection, a session expired: the request may have taken effect.
            reply(id, "unknown", "detail", e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        return null;
    }

    /** Just enough JSON for the protocol's lines. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String s) {
            Json j = new Json(s);
            Object v = j.value();
            j.ws();
            if (j.i != s.length()) {
                throw new IllegalArgumentException("trailing data at " + j.i);
            }
            return v;
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        private Object value() {
            ws();
            char c = s.charAt(i);
            switch (c) {
                case '{': {
                    i++;
                    Map<String, Object> m = new LinkedHashMap<>();
                    ws();
                    if (s.charAt(i) == '}') {
                        i++;
                        return m;
                    }
                    while (true) {
                        ws();
                        String k = string();
                        ws();
                        expect(':');
                        m.put(k, value());
                        ws();
                        if (s.charAt(i) == ',') {
                            i++;
                            continue;
                        }
                        expect('}');
                        return m;
                    }
                }
                case '[': {
                    i++;
                    List<Object> l = new ArrayList<>();
                    ws();
                    if (s.charAt(i) == ']') {
                        i++;
                        return l;
                    }
                    while (true) {
                        l.add(value());
                        ws();
                        if (s.charAt(i) == ',') {
                            i++;
                            continue;
                        }
                        expect(']');
                        return l;
                    }
                }
                case '"':
                    return string();
                default:
                    if (s.startsWith("true", i)) {
                        i += 4;
                        return true;
                    }
                    if (s.startsWith("false", i)) {
                        i += 5;
                        return false;
                    }
                    if (s.startsWith("null", i)) {
                        i += 4;
                        return null;
                    }
                    int st = i;
                    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                        i++;
                    }
                    String n = s.substring(st, i);
                    if (n.isEmpty()) {
                        throw new IllegalArgumentException("unexpected '" + c + "' at " + st);
                    }
                    if (n.contains(".") || n.contains("e") || n.contains("E")) {
                        return Double.parseDouble(n);
                    }
                    return Long.parseLong(n);
            }
        }

        private void expect(char c) {
            if (s.charAt(i) != c) {
                throw new IllegalArgumentException("want '" + c + "' at " + i);
            }
            i++;
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                    default: b.append(e);
                }
            }
        }

        static String write(Object o) {
            if (o == null) {
                return "null";
            }
            if (o instanceof String) {
                StringBuilder b = new StringBuilder("\"");
                for (char c : ((String) o).toCharArray()) {
                    if (c == '"' || c == '\\') {
                        b.append('\\').append(c);
                    } else if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
                return b.append('"').toString();
            }
            if (o instanceof Map) {
                StringBuilder b = new StringBuilder("{");
                for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                    if (b.length() > 1) {
                        b.append(',');
                    }
                    b.append(write(e.getKey())).append(':').append(write(e.getValue()));
                }
                return b.append('}').toString();
            }
            if (o instanceof List) {
                StringBuilder b = new StringBuilder("[");
                for (Object e : (List<?>) o) {
                    if (b.length() > 1) {
                        b.append(',');
                    }
                    b.append(write(e));
                }
                return b.append(']').toString();
            }
            return String.valueOf(o);
        }
    }
}
