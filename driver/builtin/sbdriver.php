<?php
// The splitbrain lock driver protocol (docs/driver-protocol.md, version 2)
// for the PHP drivers shipped with splitbrain: JSON lines on stdin and
// stdout, one request at a time, points announced and held until the
// go-ahead. Run with -d display_errors=stderr: PHP prints its warnings to
// stdout by default, which would break the protocol.

final class Protocol
{
    /** @var array<int, array> requests read while waiting at a point */
    private array $pending = [];
    private int $current = 0;

    public function send(array $msg): void
    {
        fwrite(STDOUT, json_encode($msg, JSON_UNESCAPED_SLASHES | JSON_PRESERVE_ZERO_FRACTION) . "\n");
        fflush(STDOUT);
    }

    /** The next message from the harness, or null once stdin closed. */
    private function read(): ?array
    {
        while (($line = fgets(STDIN)) !== false) {
            $line = trim($line);
            if ($line !== '') {
                return json_decode($line, true, 512, JSON_THROW_ON_ERROR);
            }
        }
        return null;
    }

    /** The next request (hello first); null once stdin closed. */
    public function next(): ?array
    {
        $req = array_shift($this->pending) ?? $this->read();
        if ($req !== null && isset($req['id'])) {
            $this->current = $req['id'];
        }
        return $req;
    }

    /** Announce a point of the current request and wait for the go-ahead:
     *  once per attempt (the harness refuses a point announced twice). */
    public function point(string $name): void
    {
        $this->send(['op' => 'point', 'id' => $this->current, 'point' => $name]);
        while (($msg = $this->read()) !== null) {
            if (($msg['op'] ?? '') === 'go') {
                if (($msg['id'] ?? 0) === $this->current) {
                    return;
                }
                continue; // a go-ahead of a request given up
            }
            $this->pending[] = $msg;
        }
        exit(0);
    }

    /** The hello: a describe is answered with $ready, and the driver
     *  exits, as it does when stdin closes first. */
    public function hello(array $ready): array
    {
        $hello = $this->next();
        if ($hello === null) {
            exit(0);
        }
        if (!empty($hello['describe'])) {
            $this->send($ready);
            exit(0);
        }
        return $hello;
    }

    /** A reply, stamped with the monotonic clock (hrtime: CLOCK_MONOTONIC)
     *  so that the harness counts a validity from its writing. */
    public function reply(array $req, string $result, array $fields = []): void
    {
        $this->send(['op' => 'reply', 'id' => $req['id'], 'result' => $result, 'mono_ns' => hrtime(true)] + $fields);
    }
}

/** An acquire of hello's `retries` attempts (one at the least): $try
 *  until it says true, 10 ms apart. */
function attempts(array $hello, callable $try): bool
{
    $n = max(1, $hello['retries'] ?? 1);
    for ($i = 0; $i < $n; $i++) {
        if ($i > 0) {
            usleep(10000);
        }
        if ($try()) {
            return true;
        }
    }
    return false;
}

/** The lease a release names, taken out of $held (value => lease); null,
 *  with the fail reply sent, when the driver holds none of that value. */
function takeHeld(Protocol $proto, array &$held, array $req): mixed
{
    $lease = $held[$req['value']] ?? null;
    unset($held[$req['value']]);
    if ($lease === null) {
        $proto->reply($req, 'fail', ['detail' => 'no lock of this driver has that value']);
    }
    return $lease;
}

/** host:port as [host, port]. */
function hostPort(string $addr): array
{
    $i = strrpos($addr, ':');
    return [substr($addr, 0, $i), (int) substr($addr, $i + 1)];
}

/** A Debian package's version, as dpkg knows it: the version a finding is
 *  about. Read from dpkg's status file itself, not through dpkg-query: no
 *  shell and no second process per driver start, and the runner image
 *  (docs/fanout.md), which has neither, carries the file. */
function debianVersion(string $package): string
{
    $db = @file_get_contents('/var/lib/dpkg/status');
    if (!is_string($db)) {
        return 'unknown';
    }
    // Stanzas are separated by blank lines; a package's stanza starts
    // with its Package field, its Version field is on a line of its own.
    foreach (preg_split('/\n\n+/', $db) as $stanza) {
        if (preg_match('/^Package: ' . preg_quote($package, '/') . '$/m', $stanza)
            && preg_match('/^Status: .* installed$/m', $stanza)
            && preg_match('/^Version: (\S+)$/m', $stanza, $m)) {
            return $m[1];
        }
    }
    return 'unknown';
}

/** phpredis connected to every node of hello, in its order. */
function connectNodes(array $hello): array
{
    return array_map(fn (array $node) => connectRedis($hello, $node['addr']), $hello['nodes']);
}

/** phpredis connected to addr, authenticated, with hello's timeouts,
 *  trying for $patience seconds. */
function connectRedis(array $hello, string $addr, float $patience = 5.0): \Redis
{
    [$host, $port] = hostPort($addr);
    $timeout = ($hello['node_timeout_ms'] ?? 1000) / 1000;
    // A node paused, killed or cut while the driver starts (a random
    // schedule's first fault) made connect or AUTH throw, and the driver
    // died before it said ready; an application retries its connection at
    // boot, and so does the driver, for a few seconds.
    $deadline = microtime(true) + $patience;
    for (;;) {
        $r = new \Redis();
        try {
            // connect(host, port, connect timeout, reserved, retry interval, read timeout)
            if ($r->connect($host, $port, 1.0, null, 0, $timeout) && $r->auth($hello['password'])) {
                return $r;
            }
            $err = new \RedisException("connect or AUTH to $addr failed");
        } catch (\RedisException $e) {
            $err = $e;
        }
        if (microtime(true) >= $deadline) {
            throw $err;
        }
        usleep(100000);
    }
}

/**
 * Under Sentinel (hello's server "sentinel"): phpredis connected to the
 * master the sentinels name, as Symfony's RedisTrait connects with its
 * redis_sentinel option — each sentinel in turn until one names the
 * master, then one connection to it — through the route hello gives for
 * the address named (the sentinels hand out the servers' own addresses).
 * One try: the caller is an acquire, and an application's request that
 * finds no master fails.
 */
function connectMaster(array $hello): \Redis
{
    $s = $hello['sentinel'];
    $timeout = ($hello['node_timeout_ms'] ?? 1000) / 1000;
    $errors = [];
    foreach ($s['nodes'] as $node) {
        [$host, $port] = hostPort($node['addr']);
        try {
            // (host, port, connect timeout, persistent id, retry interval,
            // read timeout, auth): the seventh argument came in phpredis
            // 5.3.2 and is missing from its own stubs.
            $sentinel = new \RedisSentinel($host, $port, $timeout, null, 0, $timeout, $hello['password']);
            $addr = $sentinel->getMasterAddrByName($s['master']);
        } catch (\RedisException $e) {
            $errors[] = $node['addr'] . ': ' . $e->getMessage();
            continue;
        }
        if (!is_array($addr)) {
            $errors[] = $node['addr'] . ': names no master ' . $s['master'];
            continue;
        }
        $own = $addr[0] . ':' . $addr[1];
        $route = $s['routes'][$own] ?? null;
        if ($route === null) {
            throw new \RuntimeException("the sentinels name $own, which hello gave no route to");
        }
        return connectRedis($hello, $route, 0.0);
    }
    throw new \RedisException('no sentinel named the master (' . implode('; ', $errors) . ')');
}
