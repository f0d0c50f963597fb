package redlock

import (
	"crypto/sha1"
	"encoding/hex"
)

// script is a Lua script sent by EVALSHA, with EVAL as the fallback when the
// node does not know it (after a restart). NOSCRIPT means the script did not
// run, so the fallback cannot apply anything twice.
type script struct {
	src, sha string
}

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

// Replies of the scripts that compare the lock's value (release, extend).
const (
	replyDone    = 1  // the key held our value and was deleted or extended
	replyAbsent  = 0  // no key: expired, released, or never written
	replyForeign = -1 // the key holds another client's value
)

var (
	// releaseScript deletes the key only if it still holds our value; a
	// plain DEL would delete the key of whoever acquired the lock after our
	// lease expired. When ARGV[2] names a channel, a node where the lock is
	// now free (our key deleted, or gone already) says so there, so that
	// waiting clients retry at once instead of polling; they count these
	// messages and retry once a quorum of nodes is free.
	// KEYS[1] lock; ARGV[1] value, ARGV[2] channel or "".
	releaseScript = newScript(`local v = redis.call("get", KEYS[1])
local r = 0
if v == ARGV[1] then
  redis.call("del", KEYS[1])
  r = 1
elseif v then
  return -1
end
if ARGV[2] ~= "" then redis.call("publish", ARGV[2], ARGV[1]) end
return r`)

	// extendScript moves the expiry of our own key. It never creates the
	// key: extending a lease whose key has expired would re-acquire a lock
	// that someone else may have taken and released in between.
	// KEYS[1] lock; ARGV[1] value, ARGV[2] ttl in ms.
	extendScript = newScript(`local v = redis.call("get", KEYS[1])
if v == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
elseif v then
  return -1
end
return 0`)

	// The acquire scripts are SET NX PX. A grant returns an integer (the
	// fencing counter where there is one); a refusal returns the counter
	// and the holder's value, so that a waiter can tell a lock held by one
	// client on a quorum (wait for its release) from a split vote among
	// contenders (back off and retry). Scripts rather than SET NX GET keep
	// Redis 6 supported. TryLock without fencing sends a plain SET NX PX,
	// which is cheaper and needs to know nothing about the holder.

	// acquireScript is the unfenced acquisition of Lock.
	// KEYS[1] lock; ARGV[1] value, ARGV[2] ttl in ms.
	acquireScript = newScript(`if redis.call("set", KEYS[1], ARGV[1], "nx", "px", ARGV[2]) then
  return 1
end
return {0, redis.call("get", KEYS[1])}`)

	// acquireSimpleScript adds the simple fencing counter: every attempt
	// increments the key's counter, granted or not, and the node returns
	// it either way, so that the token can be the maximum over every node
	// that answered (see FenceSimple for why, and where it breaks).
	// KEYS[1] lock, KEYS[2] counter; ARGV[1] value, ARGV[2] ttl in ms.
	acquireSimpleScript = newScript(`local n = redis.call("incr", KEYS[2])
if redis.call("set", KEYS[1], ARGV[1], "nx", "px", ARGV[2]) then
  return n
end
return {n, redis.call("get", KEYS[1])}`)

	// acquireReadScript returns, on a grant, the counter as it stands: the
	// first round of the two-round scheme.
	// KEYS[1] lock, KEYS[2] counter; ARGV[1] value, ARGV[2] ttl in ms.
	acquireReadScript = newScript(`if redis.call("set", KEYS[1], ARGV[1], "nx", "px", ARGV[2]) then
  return tonumber(redis.call("get", KEYS[2]) or "0")
end
return {0, redis.call("get", KEYS[1])}`)

	// fenceWriteScript raises the counter to the token unless it is already
	// higher, and returns the counter as it then stands: the second round
	// of the two-round scheme. A counter never goes down.
	// KEYS[1] counter; ARGV[1] token.
	fenceWriteScript = newScript(`local c = tonumber(redis.call("get", KEYS[1]) or "0")
local t = tonumber(ARGV[1])
if t > c then
  redis.call("set", KEYS[1], ARGV[1])
  return t
end
return c`)
)
