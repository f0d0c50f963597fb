<?php
// A splitbrain lock driver for Laravel's cache lock on Redis — what
// Cache::lock() returns with the redis cache store and the phpredis client
// (Illuminate\Cache\PhpRedisLock), built without the framework from
// Debian's php-illuminate-cache and php-illuminate-redis: one instance,
// SET NX EX with the owner's random token, release by Lua. The protocol
// (docs/driver-protocol.md, version 2) is in sbdriver.php.
//
// Belief: get() returns true and nothing about time, so its user counts
// the lock's seconds from get()'s return. Laravel counts a lock's life in
// whole seconds (SET ... EX): a TTL under a second is one second, a
// longer one is rounded up — the lock lives as long as the user asked for
// at the least. Its Lock has no extension (unsupported extend); release()
// says whether the token was still there.

set_include_path(get_include_path() . PATH_SEPARATOR . '/usr/share/php');
require_once 'Illuminate/Cache/autoload.php';
require_once 'Illuminate/Redis/autoload.php';
require_once __DIR__ . '/sbdriver.php';

use Illuminate\Cache\PhpRedisLock;
use Illuminate\Redis\Connections\PhpRedisConnection;

$proto = new Protocol();
$library = 'illuminate/cache ' . debianVersion('php-illuminate-cache');
$ready = ['op' => 'ready', 'name' => 'Laravel RedisLock ' . $library,
    'points' => ['after-replies', 'after-acquire', 'before-release'],
    'servers' => ['redis'], 'deployments' => ['one'], 'unsupported' => ['extend'],
    'library' => $library, 'client_library' => 'phpredis ' . phpversion('redis')];

/**
 * Laravel's phpredis lock with the after-replies point: the SET's reply is
 * in, acquire() has not returned yet.
 */
final class PointedLock extends PhpRedisLock
{
    public static ?Protocol $proto = null;

    public function acquire()
    {
        $got = parent::acquire();
        if ($got) {
            self::$proto->point('after-replies');
        }
        return $got;
    }
}
PointedLock::$proto = $proto;

$hello = $proto->hello($ready);
// With its connector, as Laravel's PhpRedisConnector builds it: Laravel
// reconnects through it when phpredis says the server went away (a
// restart); without one it keeps the dead connection for good.
$connector = fn () => connectRedis($hello, $hello['nodes'][0]['addr']);
$redis = new PhpRedisConnection($connector(), $connector);
$proto->send($ready);

$held = []; // lease value (the owner token) => lock
while (($req = $proto->next()) !== null) {
    $op = $req['op'] ?? '';
    try {
        switch ($op) {
            case 'acquire':
                $seconds = max(1, (int) ceil($req['ttl_ms'] / 1000));
                $lock = new PointedLock($redis, $req['key'], $seconds);
                if (!attempts($hello, fn () => $lock->get())) {
                    $proto->reply($req, 'fail', ['detail' => 'get() returned false: the key is held']);
                    break;
                }
                $deadline = hrtime(true) / 1e9 + $seconds;
                $held[$lock->owner()] = $lock;
                $proto->point('after-acquire');
                $proto->reply($req, 'ok', ['value' => $lock->owner(), 'validity_ms' => ($deadline - hrtime(true) / 1e9) * 1000,
                    'detail' => "SET NX EX $seconds"]);
                break;
            case 'release':
                $proto->point('before-release');
                if (($lock = takeHeld($proto, $held, $req)) === null) {
                    break;
                }
                if ($lock->release()) {
                    $proto->reply($req, 'ok');
                } else {
                    $proto->reply($req, 'fail', ['detail' => 'release() returned false: the key is not this owner\'s']);
                }
                break;
            case 'extend':
                $proto->reply($req, 'fail', ['detail' => 'Laravel\'s lock has no extension']);
                break;
            default:
                $proto->reply($req, 'unknown', ['detail' => "unknown op '$op'"]);
        }
    } catch (\Throwable $e) {
        // A timeout or a lost connection: the command may have run.
        $proto->reply($req, 'unknown', ['detail' => get_class($e) . ': ' . $e->getMessage()]);
    }
}
