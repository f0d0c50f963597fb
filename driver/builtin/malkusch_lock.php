<?php
// A splitbrain lock driver for malkusch/lock's PHPRedisMutex (Debian's
// php-malkusch-lock, on phpredis): the Redlock the Redlock page lists for
// PHP as "PHPRedisMutex", over one connection per node. The protocol
// (docs/driver-protocol.md, version 2) is in sbdriver.php.
//
// What the library does (classes/mutex/RedisMutex.php, SpinlockMutex.php):
// a mutex of timeout T (whole seconds, at least 1) sets its key with
// SET NX EX T + 1 on every node, grants when a majority said yes and the
// attempt took at most T + 1 seconds (the key's TTL, not the TTL less the
// time taken, and no drift), and otherwise deletes its key everywhere.
// lock() retries that until T seconds have passed; unlock() refuses to
// delete when more than T seconds passed since the grant's attempt began
// (ExecutionOutsideLockException) and says LockReleaseException unless a
// majority deleted the key. The driver maps the story's TTL to T + 1: the
// key lives the TTL the harness knows (a story's TTL must be 2 s or more,
// whole seconds: locks.MalkuschRedlock).
//
// Belief: until the grant's attempt began + T, the deadline unlock()
// checks — the library's own idea of how long the lock is held
// (synchronized() runs the user's code without looking at the time and
// says afterwards). An attempt that took more than T seconds is granted
// already past it: the validity is then negative.
//
// One attempt: the harness asks for one (or `retries`), and lock() loops
// until its timeout, so the driver runs the body of lock()'s loop once
// per attempt, in SpinlockMutex's own scope (it keeps the key, the
// timeout and the grant's time private), and unlock() as the library has
// it.

require_once '/usr/share/php/Malkusch/Lock/autoload.php';
require_once __DIR__ . '/sbdriver.php';

use malkusch\lock\exception\ExecutionOutsideLockException;
use malkusch\lock\exception\LockAcquireException;
use malkusch\lock\exception\LockReleaseException;
use malkusch\lock\mutex\PHPRedisMutex;
use malkusch\lock\mutex\SpinlockMutex;
use Psr\Log\AbstractLogger;

$proto = new Protocol();

/**
 * The mutex with the after-replies point: every node has answered the
 * attempt's SET (or failed), the library has not judged the majority and
 * the time taken yet. RedisMutex calls add() once per node in order.
 */
final class PointedMutex extends PHPRedisMutex
{
    private int $added = 0;

    /** @param array<\Redis> $apis */
    public function __construct(private array $apis, string $name, int $timeout, private Protocol $proto, private NodeLog $log)
    {
        parent::__construct($apis, $name, $timeout);
        $this->setLogger($log);
    }

    protected function add($redisAPI, string $key, string $value, int $expire): bool
    {
        try {
            return parent::add($redisAPI, $key, $value, $expire);
        } finally {
            if (++$this->added === count($this->apis)) {
                $this->added = 0;
                $this->proto->point('after-replies');
            }
        }
    }

    /** One pass of SpinlockMutex::lock()'s loop: its body, in its scope. */
    public function attempt(): bool
    {
        $this->log->errors = 0;
        return \Closure::bind(function (): bool {
            $this->acquired = microtime(true);
            return $this->acquire($this->key, $this->timeout + 1);
        }, $this, SpinlockMutex::class)();
    }

    /** The deadline unlock() checks: the attempt's start + the timeout. */
    public function deadline(): float
    {
        return \Closure::bind(fn (): float => $this->acquired + $this->timeout, $this, SpinlockMutex::class)();
    }

    /** unlock(), as synchronized() calls it after the user's code. */
    public function free(): void
    {
        $this->log->errors = 0;
        $this->unlock();
    }
}

/**
 * The library's logger: RedisMutex logs a node whose SET or delete failed
 * (a timeout, a lost connection) and goes on; the driver counts them, to
 * tell a release that a majority refused from one it could not reach.
 */
final class NodeLog extends AbstractLogger
{
    public int $errors = 0;

    public function log($level, $message, array $context = []): void
    {
        $this->errors++;
        $e = $context['exception'] ?? null;
        fwrite(STDERR, "malkusch/lock: $level: " . strtr((string) $message, ['{key}' => $context['key'] ?? '',
            '{index}' => $context['index'] ?? '', '{token}' => '…']) .
            ($e instanceof \Throwable ? ' (' . $e->getMessage() . ($e->getPrevious() ? ': ' . $e->getPrevious()->getMessage() : '') . ')' : '') . "\n");
    }
}

$library = 'malkusch/lock ' . debianVersion('php-malkusch-lock');
$ready = ['op' => 'ready', 'name' => 'malkusch/lock PHPRedisMutex ' . $library,
    'points' => ['after-replies', 'after-acquire', 'before-release'],
    'servers' => ['redis'], 'deployments' => ['masters'], 'unsupported' => ['extend'],
    'library' => $library, 'client_library' => 'phpredis ' . phpversion('redis')];

$hello = $proto->hello($ready);
$apis = connectNodes($hello);
$log = new NodeLog();
$proto->send($ready);

$held = []; // lease value => PointedMutex
$n = 0;
while (($req = $proto->next()) !== null) {
    $op = $req['op'] ?? '';
    try {
        switch ($op) {
            case 'acquire':
                $ttl = $req['ttl_ms'] / 1000;
                if ($ttl < 2 || fmod($ttl, 1.0) != 0.0) {
                    $proto->reply($req, 'fail', ['detail' => "a key lives the mutex's timeout + 1 s, a whole number of seconds of at least 2: a TTL of {$ttl} s cannot be asked"]);
                    break;
                }
                // The lock's name is the key without the library's prefix.
                $mutex = new PointedMutex($apis, $req['key'], (int) $ttl - 1, $proto, $log);
                if (!attempts($hello, fn () => $mutex->attempt())) {
                    $proto->reply($req, 'fail', ['detail' => 'no majority within the key\'s TTL: the attempt deleted its key everywhere']);
                    break;
                }
                $value = sprintf('%s-%d', $req['key'], ++$n);
                $held[$value] = $mutex;
                $proto->point('after-acquire');
                $proto->reply($req, 'ok', ['value' => $value, 'validity_ms' => ($mutex->deadline() - microtime(true)) * 1000]);
                break;
            case 'release':
                $proto->point('before-release');
                if (($mutex = takeHeld($proto, $held, $req)) === null) {
                    break;
                }
                $mutex->free();
                $proto->reply($req, 'ok', ['detail' => 'unlock() returned: a majority deleted the key']);
                break;
            case 'extend':
                $proto->reply($req, 'fail', ['detail' => 'a mutex has no call to extend a lock']);
                break;
            default:
                $proto->reply($req, 'unknown', ['detail' => "unknown op '$op'"]);
        }
    } catch (ExecutionOutsideLockException $e) {
        // unlock() found the grant older than the timeout and deleted
        // nothing: the user is told its code ran outside the lock.
        $proto->reply($req, 'fail', ['detail' => 'ExecutionOutsideLockException: ' . $e->getMessage()]);
    } catch (LockReleaseException $e) {
        // No majority deleted the key: a majority had it no more (the
        // lease was gone), or some nodes could not be asked (then the
        // delete may have run where they are).
        $proto->reply($req, $log->errors > 0 ? 'unknown' : 'fail',
            ['detail' => 'LockReleaseException: ' . $e->getMessage() . " ({$log->errors} node(s) not reached)"]);
    } catch (LockAcquireException $e) {
        // Half the nodes or more failed: the SETs may have run there.
        $proto->reply($req, 'unknown', ['detail' => 'LockAcquireException: ' . $e->getMessage() . ($e->getPrevious() ? ' (' . $e->getPrevious()->getMessage() . ')' : '')]);
    } catch (\Throwable $e) {
        $proto->reply($req, 'unknown', ['detail' => get_class($e) . ': ' . $e->getMessage()]);
    }
}
