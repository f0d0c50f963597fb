package workload

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"
)

// Storage is the resource the lock protects: a Redis node outside the lock
// quorum (Kleppmann: a lock is only as safe as its use). The lock named k
// guards the resource stored under "res:k". Every write goes through one Lua
// script, so a write is applied whole or not at all, and the storage numbers
// the writes it applies to a key (the seq the history records), which orders
// them exactly.
//
// With fencing on, the script rejects a write whose token is lower than the
// highest token it has accepted for the key (Kleppmann's fencing). A token
// equal to the highest is accepted: one lease may write more than once.
type Storage struct {
	rdb     *redis.Client
	fencing bool
}

// NewStorage uses rdb (a connection to the storage node, through the
// client's own proxy when the nemesis may cut it).
func NewStorage(rdb *redis.Client, fencing bool) *Storage {
	return &Storage{rdb: rdb, fencing: fencing}
}

// Fencing reports whether the storage rejects stale tokens.
func (s *Storage) Fencing() bool { return s.fencing }

// RejectedError is a write the storage fenced off.
type RejectedError struct {
	Token, Highest int64
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("write rejected by fencing: token %d is below %d, the highest the storage has accepted", e.Token, e.Highest)
}

// ErrNoToken means fencing is on but the lease has no fencing token: the
// lock under test does not hand them out, so the run cannot test fencing.
var ErrNoToken = errors.New("fencing is on but the lease carries no fencing token (the lock does not hand out tokens)")

// writeScript applies one write unless fencing rejects it.
//
//	KEYS[1] the resource, KEYS[2] its fence (hash: token = highest accepted,
//	seq = writes applied)
//	ARGV[1] "1" when fencing is on, ARGV[2] the token or "", ARGV[3] "string"
//	or "hash", ARGV[4..] the value (string) or field/value pairs (hash)
//
// It returns {1, seq} when applied and {0, highest} when rejected. Tokens are
// compared as Lua numbers (doubles): exact below 2^53.
var writeScript = redis.NewScript(`
local hi = redis.call('HGET', KEYS[2], 'token')
if ARGV[2] ~= '' then
  local tok = tonumber(ARGV[2])
  if ARGV[1] == '1' and hi and tok < tonumber(hi) then
    return {0, hi}
  end
  if not hi or tok > tonumber(hi) then
    redis.call('HSET', KEYS[2], 'token', ARGV[2])
  end
elseif ARGV[1] == '1' then
  return redis.error_reply('NOTOKEN fencing is on and the write carries no token')
end
if ARGV[3] == 'string' then
  redis.call('SET', KEYS[1], ARGV[4])
else
  redis.call('HSET', KEYS[1], unpack(ARGV, 4))
end
return {1, redis.call('HINCRBY', KEYS[2], 'seq', 1)}
`)

func resKey(key string) string   { return "res:" + key }
func fenceKey(key string) string { return "fence:" + key }

// write runs writeScript. fenced is false only for the harness's initial
// writes, which carry no token.
func (s *Storage) write(ctx context.Context, key string, token *int64, fenced bool, mode string, args ...string) (int64, error) {
	tok := ""
	if token != nil {
		tok = strconv.FormatInt(*token, 10)
	} else if fenced && s.fencing {
		return 0, ErrNoToken
	}
	on := "0"
	if fenced && s.fencing {
		on = "1"
	}
	argv := append([]any{on, tok, mode}, toAny(args)...)
	res, err := writeScript.Run(ctx, s.rdb, []string{resKey(key), fenceKey(key)}, argv...).Slice()
	if err != nil {
		return 0, err
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("storage: write script answered %v", res)
	}
	applied, _ := res[0].(int64)
	if applied == 1 {
		seq, ok := res[1].(int64)
		if !ok {
			return 0, fmt.Errorf("storage: write script answered seq %v", res[1])
		}
		return seq, nil
	}
	hi, err := strconv.ParseInt(fmt.Sprint(res[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("storage: write script answered highest token %v", res[1])
	}
	return 0, &RejectedError{Token: *token, Highest: hi}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Counter reads the counter k; a missing counter reads as 0.
func (s *Storage) Counter(ctx context.Context, key string) (int64, error) {
	v, err := s.rdb.Get(ctx, resKey(key)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return v, err
}

// SetCounter writes the counter k and returns the write's seq.
func (s *Storage) SetCounter(ctx context.Context, key string, token *int64, v int64) (int64, error) {
	return s.write(ctx, key, token, true, "string", strconv.FormatInt(v, 10))
}

// Balances reads the bank k: account → balance.
func (s *Storage) Balances(ctx context.Context, key string) (map[string]decimal.Decimal, error) {
	raw, err := s.rdb.HGetAll(ctx, resKey(key)).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]decimal.Decimal, len(raw))
	for acct, v := range raw {
		d, err := decimal.NewFromString(v)
		if err != nil {
			return nil, fmt.Errorf("storage: account %s of %s holds %q: %w", acct, key, v, err)
		}
		out[acct] = d
	}
	return out, nil
}

// SetBalances writes the given accounts of bank k (the others keep their
// balances) and returns the write's seq.
func (s *Storage) SetBalances(ctx context.Context, key string, token *int64, b map[string]decimal.Decimal) (int64, error) {
	return s.write(ctx, key, token, true, "hash", balanceArgs(b)...)
}

func balanceArgs(b map[string]decimal.Decimal) []string {
	accts := make([]string, 0, len(b))
	for a := range b {
		accts = append(accts, a)
	}
	sort.Strings(accts)
	args := make([]string, 0, 2*len(b))
	for _, a := range accts {
		args = append(args, a, b[a].String())
	}
	return args
}

// Set reads the set k. The set is stored whole, as one string, so that
// writing it back after a stale read loses the elements added meanwhile —
// the read-modify-write a lock is meant to protect (Jepsen's lock-set).
func (s *Storage) Set(ctx context.Context, key string) ([]int64, error) {
	v, err := s.rdb.Get(ctx, resKey(key)).Result()
	if errors.Is(err, redis.Nil) || (err == nil && v == "") {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	parts := strings.Split(v, ",")
	out := make([]int64, len(parts))
	for i, p := range parts {
		if out[i], err = strconv.ParseInt(p, 10, 64); err != nil {
			return nil, fmt.Errorf("storage: set %s holds %q: %w", key, p, err)
		}
	}
	return out, nil
}

// WriteSet writes the set k whole and returns the write's seq.
func (s *Storage) WriteSet(ctx context.Context, key string, token *int64, elems []int64) (int64, error) {
	return s.write(ctx, key, token, true, "string", joinInts(elems))
}

func joinInts(elems []int64) string {
	var b strings.Builder
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(e, 10))
	}
	return b.String()
}
