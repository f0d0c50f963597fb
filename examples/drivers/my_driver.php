<?php
// The walk-through driver of docs/driver-protocol.md: a lock of one Redis
// deployment on phpredis. Run: php -d display_errors=stderr my_driver.php
function send(array $m): void { fwrite(STDOUT, json_encode($m) . "\n"); fflush(STDOUT); }
function next_line(): ?array {
    while (($l = fgets(STDIN)) !== false) { if (trim($l) !== '') return json_decode($l, true); }
    return null;                                   // stdin closed: exit
}
$ready = ['op' => 'ready', 'name' => 'my lock', 'points' => ['after-acquire'], 'servers' => ['redis'],
          'deployments' => ['one'], 'unsupported' => ['extend'], 'client_library' => 'phpredis ' . phpversion('redis')];
$hello = next_line();
if (!empty($hello['describe'])) { send($ready); exit(0); }   // 1. claims, no connection
[$host, $port] = explode(':', $hello['nodes'][0]['addr']);    // 2. n1, through its proxy
$r = new Redis();
$r->connect($host, (int) $port, 1.0, null, 0, ($hello['node_timeout_ms'] ?? 1000) / 1000);
$r->auth($hello['password']);
send($ready);
while (($req = next_line()) !== null) {                        // 3. one request at a time
    $id = $req['id'];
    try {
        if ($req['op'] === 'acquire') {
            $token = bin2hex(random_bytes(16));
            $ok = $r->set($req['key'], $token, ['nx', 'px' => (int) $req['ttl_ms']]);
            if (!$ok) { send(['op' => 'reply', 'id' => $id, 'result' => 'fail']); continue; }
            $deadline = hrtime(true) / 1e9 + $req['ttl_ms'] / 1000; // 4. my user counts from here
            send(['op' => 'point', 'id' => $id, 'point' => 'after-acquire']);
            next_line();                                            //    the go-ahead
            send(['op' => 'reply', 'id' => $id, 'result' => 'ok', 'value' => $token,
                  'validity_ms' => ($deadline - hrtime(true) / 1e9) * 1000]);
        } elseif ($req['op'] === 'release') {
            $del = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
            $n = $r->eval($del, [$req['key'], $req['value']], 1);
            send(['op' => 'reply', 'id' => $id, 'result' => $n ? 'ok' : 'fail']);
        } else {
            send(['op' => 'reply', 'id' => $id, 'result' => 'fail', 'detail' => 'no extension']);
        }
    } catch (RedisException $e) {                              // 5. a timeout: it may have run
        send(['op' => 'reply', 'id' => $id, 'result' => 'unknown', 'detail' => $e->getMessage()]);
    }
}
