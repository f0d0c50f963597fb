<?php
// A splitbrain lock driver for Symfony's Lock component (Debian's
// php-symfony-lock, on phpredis): `symfony_lock.php redis` is a Lock on
// one RedisStore (n1), the store most PHP applications use;
// `symfony_lock.php combined` a Lock on a CombinedStore of one RedisStore
// per node with the ConsensusStrategy — Symfony's Redlock. The protocol
// (docs/driver-protocol.md, version 2) is in sbdriver.php.
//
// Belief: Lock::getRemainingLifetime(), the lock's own deadline: acquire()
// saves the key (with the store's initial TTL, 300 s by default) and then
// puts its expiry off to the Lock's TTL, its deadline counted from the
// start of that second phase (microtime, the wall clock), no drift
// subtracted. release() runs the store's delete and ignores its answer:
// it cannot tell a lease already gone (ready: unreported release).
//
// Under Sentinel (the RedisStore only): each acquire connects anew, as a
// request of a PHP application does — asks the sentinels for the master
// and connects to it (connectMaster, the way Symfony's RedisTrait does
// with redis_sentinel; Debian's php-symfony-lock comes without
// symfony/cache, where that code lives) — and its release goes through
// the same connection, the Lock's store.

require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';
require_once __DIR__ . '/sbdriver.php';

use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockExpiredException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\Lock;
use Symfony\Component\Lock\PersistingStoreInterface;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;

$proto = new Protocol();
$mode = $argv[1] ?? '';
if ($mode !== 'redis' && $mode !== 'combined') {
    fwrite(STDERR, "symfony_lock.php: want redis or combined, got '$mode'\n");
    exit(2);
}

/**
 * The store the Lock is given, with the after-replies point: the second
 * phase of acquire() (putOffExpiration, after save) has its answers, the
 * Lock has not judged its deadline yet. The point is announced after the
 * last phase, once per acquire: announced after save too, it would be
 * reached twice in one request.
 */
final class PointedStore implements PersistingStoreInterface
{
    public bool $acquiring = false;

    public function __construct(private PersistingStoreInterface $inner, private Protocol $proto)
    {
    }

    public function save(Key $key)
    {
        $this->inner->save($key);
    }

    public function putOffExpiration(Key $key, float $ttl)
    {
        $this->inner->putOffExpiration($key, $ttl);
        if ($this->acquiring) {
            $this->acquiring = false;
            $this->proto->point('after-replies');
        }
    }

    public function delete(Key $key)
    {
        $this->inner->delete($key);
    }

    public function exists(Key $key)
    {
        return $this->inner->exists($key);
    }
}

$library = 'symfony/lock ' . debianVersion('php-symfony-lock');
$ready = ['op' => 'ready', 'name' => ($mode === 'redis' ? 'Symfony RedisStore ' : 'Symfony CombinedStore ') . $library,
    'points' => ['after-replies', 'after-acquire', 'before-release'],
    'servers' => $mode === 'redis' ? ['redis', 'sentinel'] : ['redis'], 'deployments' => [$mode === 'redis' ? 'one' : 'masters'],
    'unreported' => ['release'],
    'library' => $library, 'client_library' => 'phpredis ' . phpversion('redis')];

$hello = $proto->hello($ready);
$sentinel = ($hello['server'] ?? '') === 'sentinel';
$store = null; // under Sentinel, each acquire's own
if ($sentinel) {
    // An application boots without asking for the master: the first
    // request does.
} elseif ($mode === 'redis') {
    $store = new PointedStore(new RedisStore(connectRedis($hello, $hello['nodes'][0]['addr'])), $proto);
} else {
    $stores = array_map(fn (\Redis $r) => new RedisStore($r), connectNodes($hello));
    $store = new PointedStore(new CombinedStore($stores, new ConsensusStrategy()), $proto);
}
$proto->send($ready);

$held = []; // lease value => Lock
$n = 0;
while (($req = $proto->next()) !== null) {
    $op = $req['op'] ?? '';
    try {
        switch ($op) {
            case 'acquire':
                $ttl = $req['ttl_ms'] / 1000;
                if ($sentinel) {
                    try {
                        $store = new PointedStore(new RedisStore(connectMaster($hello)), $proto);
                    } catch (\Throwable $e) {
                        // Nothing was sent to a master: not granted.
                        $proto->reply($req, 'fail', ['detail' => 'no master: ' . $e->getMessage()]);
                        break;
                    }
                }
                // autoRelease off: the harness releases, not the destructor.
                $lock = new Lock(new Key($req['key']), $store, $ttl, false);
                $got = attempts($hello, function () use ($store, $lock): bool {
                    $store->acquiring = true;
                    return $lock->acquire(false);
                });
                $store->acquiring = false;
                if (!$got) {
                    $proto->reply($req, 'fail', ['detail' => 'acquire() returned false: someone else holds the lock']);
                    break;
                }
                $value = sprintf('%s-%d', $req['key'], ++$n);
                $held[$value] = $lock;
                $proto->point('after-acquire');
                $proto->reply($req, 'ok', ['value' => $value, 'validity_ms' => $lock->getRemainingLifetime() * 1000]);
                break;
            case 'release':
                $proto->point('before-release');
                if (($lock = takeHeld($proto, $held, $req)) === null) {
                    break;
                }
                $lock->release();
                $proto->reply($req, 'ok', ['detail' => 'release() returned (it does for a lease already gone)']);
                break;
            case 'extend':
                $lock = $held[$req['value']] ?? null;
                if ($lock === null) {
                    $proto->reply($req, 'fail', ['detail' => 'no lock of this driver has that value']);
                    break;
                }
                $lock->refresh($req['ttl_ms'] / 1000);
                $proto->reply($req, 'ok', ['value' => $req['value'], 'validity_ms' => $lock->getRemainingLifetime() * 1000]);
                break;
            default:
                $proto->reply($req, 'unknown', ['detail' => "unknown op '$op'"]);
        }
    } catch (LockConflictedException | LockExpiredException $e) {
        // Refused, or granted too late: the Lock released what it got.
        $proto->reply($req, 'fail', ['detail' => get_class($e) . ': ' . $e->getMessage()]);
    } catch (\Throwable $e) {
        // A storage error (a timeout, a lost connection): the command may
        // have run.
        $proto->reply($req, 'unknown', ['detail' => get_class($e) . ': ' . $e->getMessage() . ($e->getPrevious() ? ' (' . $e->getPrevious()->getMessage() . ')' : '')]);
    }
}
