package workload

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/shopspring/decimal"

	"splitbrain/history"
)

// The steps of critical sections on the protected resource, each recorded in
// the history (formats: history/values.go). A client must hold the key's
// lease — or believe it does: a lease whose validity ran out during a pause is
// still used, which is the point (Kleppmann's figure 1). Writes carry the
// lease's fencing token.

// ErrNoLease means the client called a critical-section step on a key it
// does not hold: a mistake of the caller, not an outcome, so nothing is
// recorded.
var ErrNoLease = errors.New("workload: the client holds no lease on this key")

// Lease returns the lease the client believes it holds on key, or nil.
func (c *Client) Lease(key string) *Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leases[key]
}

// ReadCounter reads the counter key under the client's lease.
func (c *Client) ReadCounter(ctx context.Context, st *Storage, key string) (int64, error) {
	var v int64
	err := c.read(ctx, key, func() (any, error) {
		var err error
		v, err = st.Counter(ctx, key)
		return v, err
	})
	return v, err
}

// WriteCounter writes v to the counter key under the client's lease.
func (c *Client) WriteCounter(ctx context.Context, st *Storage, key string, v int64) error {
	return c.write(ctx, st, history.Write, key, v, func(token *int64) (int64, error) {
		return st.SetCounter(ctx, key, token, v)
	})
}

// ReadBalances reads the bank key under the client's lease.
func (c *Client) ReadBalances(ctx context.Context, st *Storage, key string) (map[string]decimal.Decimal, error) {
	var b map[string]decimal.Decimal
	err := c.read(ctx, key, func() (any, error) {
		var err error
		b, err = st.Balances(ctx, key)
		return balancesValue(b), err
	})
	return b, err
}

// Transfer moves amount from one account to another of the bank key, by
// writing the two new balances computed from read — the balances the client
// read under its lease, stale if its lease ran out meanwhile.
func (c *Client) Transfer(ctx context.Context, st *Storage, key string, read map[string]decimal.Decimal, from, to string, amount decimal.Decimal) error {
	nb := map[string]decimal.Decimal{from: read[from].Sub(amount), to: read[to].Add(amount)}
	v := history.TransferValue{From: from, To: to, Amount: amount.StringFixed(2), Balances: balancesValue(nb)}
	return c.write(ctx, st, history.Transfer, key, v, func(token *int64) (int64, error) {
		return st.SetBalances(ctx, key, token, nb)
	})
}

// ReadSet reads the set key under the client's lease. The history records
// only the set's size (see history.SetRead).
func (c *Client) ReadSet(ctx context.Context, st *Storage, key string) ([]int64, error) {
	var s []int64
	err := c.read(ctx, key, func() (any, error) {
		var err error
		s, err = st.Set(ctx, key)
		return history.SetRead{Size: len(s)}, err
	})
	return s, err
}

// AddToSet writes back read with elem added: the whole set, so a stale read
// loses whatever was added since.
func (c *Client) AddToSet(ctx context.Context, st *Storage, key string, read []int64, elem int64) error {
	next := append(append(make([]int64, 0, len(read)+1), read...), elem)
	return c.write(ctx, st, history.Add, key, elem, func(token *int64) (int64, error) {
		return st.WriteSet(ctx, key, token, next)
	})
}

// read records one read. A failed read changed nothing, so it is a fail,
// never info: the client keeps its process.
func (c *Client) read(ctx context.Context, key string, do func() (any, error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leases[key] == nil && !c.harness() {
		if c.lost[key] {
			return ErrLeaseLost
		}
		return ErrNoLease
	}
	c.record(history.Invoke, history.Read, key, c.leaseOf(key))
	v, err := do()
	if err != nil {
		c.record(history.Fail, history.Read, key, func(e *history.Event) { e.Err = err.Error() })
		return err
	}
	c.record(history.OK, history.Read, key, func(e *history.Event) { e.Value = history.MustValue(v) })
	return nil
}

// write records one write with the lease's token: ok with the storage's seq,
// fail when fencing rejected it (certainly not applied), info otherwise.
func (c *Client) write(ctx context.Context, st *Storage, f history.Func, key string, value any, do func(token *int64) (int64, error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var token *int64
	if !c.harness() {
		lease := c.leases[key]
		if lease == nil {
			if c.lost[key] {
				// The user was told and stopped before its write.
				return ErrLeaseLost
			}
			return ErrNoLease
		}
		token = lease.Token
		if st.Fencing() && token == nil {
			return ErrNoToken
		}
	}
	named := c.leaseOf(key)
	c.record(history.Invoke, f, key, func(e *history.Event) {
		named(e)
		e.Value = history.MustValue(value)
		e.Token = token
		e.Fencing = c.name == history.ProcessInit && st.Fencing()
	})
	seq, err := do(token)
	var rej *RejectedError
	switch {
	case err == nil:
		c.record(history.OK, f, key, func(e *history.Event) {
			e.Value = history.MustValue(history.Ack{Seq: seq})
			e.Token = token
		})
	case errors.As(err, &rej):
		hi := rej.Highest
		c.record(history.Fail, f, key, func(e *history.Event) {
			e.Value = history.MustValue(history.Ack{Highest: &hi})
			e.Token = token
			e.Err = err.Error()
		})
	default:
		c.record(history.Info, f, key, func(e *history.Event) {
			e.Token = token
			e.Err = err.Error()
		})
	}
	return err
}

// leaseOf names, on an operation's invoke, the lease the client believes
// it holds on key (none for the harness's processes): the checker ties the
// operation to that lease by it, whatever process the client continues as
// and whether or not the lease was still valid.
func (c *Client) leaseOf(key string) func(*history.Event) {
	return func(e *history.Event) {
		if l := c.leases[key]; l != nil {
			e.Lease = l.Value
		}
	}
}

// harness reports whether c is one of the harness's own processes (initial
// writes, final reads), which act outside any lease.
func (c *Client) harness() bool {
	return c.name == history.ProcessInit || c.name == history.ProcessFinal
}

func balancesValue(b map[string]decimal.Decimal) history.Balances {
	out := make(history.Balances, len(b))
	for a, v := range b {
		out[a] = v.StringFixed(2)
	}
	return out
}

// Kind names a generated workload.
type Kind string

const (
	// Mutex: acquire, hold for the think time, release; lock-level only.
	Mutex Kind = "mutex"
	// Counter: read a counter, think, write it back +1.
	Counter Kind = "counter"
	// Bank: read all balances, think, move a random amount between two
	// accounts, never below zero.
	Bank Kind = "bank"
	// Set: read a set, think, write it back with a unique element added.
	Set Kind = "set"
)

// Kinds lists the generated workloads.
var Kinds = []Kind{Mutex, Counter, Bank, Set}

// HasResource reports whether the workload uses the storage.
func (k Kind) HasResource() bool { return k == Counter || k == Bank || k == Set }

// InitialBalance is what every bank account starts with.
var InitialBalance = decimal.New(10000, -2)

// Init writes the resource key's initial state as process "init", outside
// any lease and unfenced: counter 0, empty set, accounts a1..aN at
// InitialBalance.
func Init(ctx context.Context, rec Recorder, st *Storage, kind Kind, key string, accounts int) error {
	c := NewClient(history.ProcessInit, nil, rec)
	var err error
	switch kind {
	case Counter:
		err = c.write(ctx, st, history.Write, key, 0, func(*int64) (int64, error) {
			return st.write(ctx, key, nil, false, "string", "0")
		})
	case Set:
		err = c.write(ctx, st, history.Write, key, []int64{}, func(*int64) (int64, error) {
			return st.write(ctx, key, nil, false, "string", "")
		})
	case Bank:
		if accounts < 2 {
			return fmt.Errorf("workload: a bank needs at least 2 accounts, got %d", accounts)
		}
		b := map[string]decimal.Decimal{}
		for i := 1; i <= accounts; i++ {
			b[fmt.Sprintf("a%d", i)] = InitialBalance
		}
		err = c.write(ctx, st, history.Write, key, balancesValue(b), func(*int64) (int64, error) {
			return st.write(ctx, key, nil, false, "hash", balanceArgs(b)...)
		})
	default:
		return fmt.Errorf("workload: %q has no resource to initialise", kind)
	}
	if err != nil {
		return fmt.Errorf("workload: initialising %s %q: %w", kind, key, err)
	}
	return nil
}

// FinalRead reads the resource key as process "final", after the run's
// faults are healed; set reads record every element.
func FinalRead(ctx context.Context, rec Recorder, st *Storage, kind Kind, key string) error {
	c := NewClient(history.ProcessFinal, nil, rec)
	var err error
	switch kind {
	case Counter:
		_, err = c.ReadCounter(ctx, st, key)
	case Bank:
		_, err = c.ReadBalances(ctx, st, key)
	case Set:
		err = c.read(ctx, key, func() (any, error) {
			s, err := st.Set(ctx, key)
			sorted := append([]int64(nil), s...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
			return history.SetRead{Size: len(s), Elements: sorted}, err
		})
	default:
		return fmt.Errorf("workload: %q has no resource to read", kind)
	}
	if err != nil {
		return fmt.Errorf("workload: final read of %s %q: %w", kind, key, err)
	}
	return nil
}
