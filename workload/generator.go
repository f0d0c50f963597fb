package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/shopspring/decimal"
)

// Config describes a generated workload: every client loops over acquire,
// critical section, release on keys drawn from Keys, until Duration has
// passed.
type Config struct {
	Kind Kind
	// Keys are the lock keys; the lock named k guards the resource k.
	Keys []string
	TTL  time.Duration
	// Duration is how long clients start new critical sections; the ones
	// under way when it ends are finished.
	Duration time.Duration
	// Think draws the time spent inside a critical section between the
	// read and the write (mutex: the whole hold). A think time longer than
	// the TTL outlives the lease: Kleppmann's pause, without a nemesis.
	Think func(*rand.Rand) time.Duration
	// Backoff draws the wait after a refused acquire; nil means 2–10 ms.
	// It paces the clients that wait for the lock, and so the rate of
	// the whole run: most attempts of contending clients are refused.
	Backoff func(*rand.Rand) time.Duration
	// Accounts is the number of bank accounts; 0 means 3.
	Accounts int
	// Extend makes every critical section extend its lease by TTL once,
	// after the think time and before the write (mutex: halfway through
	// the hold). A refused or unknown extension ends the critical section
	// without the write, as a client that checks its extension would.
	Extend bool
}

// defaultAccounts is 3 because then any two transfers share an account: two
// critical sections that overlap always conflict, so a stale transfer always
// does harm the bank check can see. With more accounts, overlapping
// transfers on disjoint accounts commute, and a run can break mutual
// exclusion without losing a cent.
const defaultAccounts = 3

func (cfg Config) accounts() int {
	if cfg.Accounts == 0 {
		return defaultAccounts
	}
	return cfg.Accounts
}

// Worker is one client of a generated workload.
type Worker struct {
	Client *Client
	// Storage is the client's own connection to the storage (nil for the
	// mutex workload).
	Storage *Storage
	// Rand is the client's stream of the run's seed.
	Rand *rand.Rand
	// BeforeWrite, when set, runs in each critical section after the read
	// and the think time, just before the write: where a harness holds a
	// client for Kleppmann's pause.
	BeforeWrite func(ctx context.Context)
}

func (w *Worker) beforeWrite(ctx context.Context) {
	if w.BeforeWrite != nil {
		w.BeforeWrite(ctx)
	}
}

// BackoffMin and BackoffMax bound the pause after a lost acquire unless
// Config.Backoff draws it, so contending clients do not spin on the lock
// nodes.
const (
	BackoffMin = 2 * time.Millisecond
	BackoffMax = 10 * time.Millisecond
)

func (cfg Config) backoff(r *rand.Rand) time.Duration {
	if cfg.Backoff != nil {
		return cfg.Backoff(r)
	}
	return BackoffMin + time.Duration(r.Int64N(int64(BackoffMax-BackoffMin)))
}

// Setup writes the initial state of every key's resource.
func Setup(ctx context.Context, rec Recorder, st *Storage, cfg Config) error {
	if !cfg.Kind.HasResource() {
		return nil
	}
	for _, k := range cfg.Keys {
		if err := Init(ctx, rec, st, cfg.Kind, k, cfg.accounts()); err != nil {
			return err
		}
	}
	return nil
}

// FinalReads reads every key's resource as process "final".
func FinalReads(ctx context.Context, rec Recorder, st *Storage, cfg Config) error {
	if !cfg.Kind.HasResource() {
		return nil
	}
	var errs []error
	for _, k := range cfg.Keys {
		errs = append(errs, FinalRead(ctx, rec, st, cfg.Kind, k))
	}
	return errors.Join(errs...)
}

// Run drives the workers concurrently until cfg.Duration has passed or ctx
// ends. Lost acquires, failed and rejected writes are outcomes (recorded),
// not errors; the error is for runs that cannot test what they claim to
// (ErrNoToken).
func Run(ctx context.Context, cfg Config, workers []Worker) error {
	if len(cfg.Keys) == 0 {
		return errors.New("workload: no keys")
	}
	if cfg.Think == nil {
		return errors.New("workload: no think time")
	}
	if cfg.Kind.HasResource() {
		for i, w := range workers {
			if w.Storage == nil {
				return fmt.Errorf("workload: worker %d has no storage for the %s workload", i, cfg.Kind)
			}
		}
	}
	until := time.Now().Add(cfg.Duration)
	errs := make([]error, len(workers))
	done := make(chan struct{})
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			errs[i] = workers[i].loop(ctx, stop, cfg, until, int64(i+1))
			if errs[i] != nil {
				cancel() // the run is void; stop the others
			}
		}()
	}
	for range workers {
		<-done
	}
	return errors.Join(errs...)
}

// loop runs critical sections until until or until stop ends. Critical
// sections use ctx, not stop, so that the end of the run lets them finish.
func (w *Worker) loop(ctx, stop context.Context, cfg Config, until time.Time, id int64) error {
	var added int64
	for stop.Err() == nil && time.Now().Before(until) {
		key := cfg.Keys[w.Rand.IntN(len(cfg.Keys))]
		if err := w.Client.Acquire(ctx, key, cfg.TTL); err != nil {
			Sleep(stop, cfg.backoff(w.Rand))
			continue
		}
		think := cfg.Think(w.Rand)
		// keep runs between the think time and the write: the extension,
		// then the harness's BeforeWrite; false ends the critical section
		// there.
		keep := func() bool {
			if cfg.Extend && w.Client.Extend(ctx, key, cfg.TTL) != nil {
				return false
			}
			if cfg.Kind.HasResource() {
				w.beforeWrite(ctx)
			}
			return true
		}
		var err error
		switch cfg.Kind {
		case Mutex:
			Sleep(ctx, think/2)
			if keep() {
				Sleep(ctx, think-think/2)
			}
		case Counter:
			err = w.counter(ctx, key, think, keep)
		case Bank:
			err = w.transfer(ctx, key, think, keep)
		case Set:
			added++
			// Unique across clients: the client's number in the high
			// digits.
			err = w.add(ctx, key, think, keep, id*1_000_000_000+added)
		default:
			err = fmt.Errorf("workload: unknown kind %q", cfg.Kind)
		}
		_ = w.Client.Release(context.WithoutCancel(ctx), key)
		if errors.Is(err, ErrNoToken) || errors.Is(err, ErrNoLease) {
			return err
		}
	}
	return nil
}

func (w *Worker) counter(ctx context.Context, key string, think time.Duration, keep func() bool) error {
	v, err := w.Client.ReadCounter(ctx, w.Storage, key)
	if err != nil {
		return err
	}
	Sleep(ctx, think)
	if !keep() {
		return nil
	}
	return w.Client.WriteCounter(ctx, w.Storage, key, v+1)
}

func (w *Worker) transfer(ctx context.Context, key string, think time.Duration, keep func() bool) error {
	b, err := w.Client.ReadBalances(ctx, w.Storage, key)
	if err != nil {
		return err
	}
	Sleep(ctx, think)
	// Drawn before keep, so that the seed's draws do not depend on
	// whether an extension succeeded.
	from, to, amount, ok := drawTransfer(w.Rand, b)
	if !ok || !keep() {
		return nil
	}
	return w.Client.Transfer(ctx, w.Storage, key, b, from, to, amount)
}

// drawTransfer picks two accounts and an amount of whole cents between 0.01
// and the source's balance; ok is false when no account has money.
func drawTransfer(r *rand.Rand, b map[string]decimal.Decimal) (from, to string, amount decimal.Decimal, ok bool) {
	accts := make([]string, 0, len(b))
	for a := range b {
		accts = append(accts, a)
	}
	if len(accts) < 2 {
		return "", "", decimal.Zero, false
	}
	sort.Strings(accts)
	// Start at a random account and take the first with at least a cent,
	// so a drained account does not end the critical section empty.
	start := r.IntN(len(accts))
	for i := range accts {
		a := accts[(start+i)%len(accts)]
		cents := b[a].Shift(2).IntPart()
		if cents < 1 {
			continue
		}
		to := accts[(start+i+1+r.IntN(len(accts)-1))%len(accts)]
		return a, to, decimal.New(1+r.Int64N(cents), -2), true
	}
	return "", "", decimal.Zero, false
}

func (w *Worker) add(ctx context.Context, key string, think time.Duration, keep func() bool, elem int64) error {
	s, err := w.Client.ReadSet(ctx, w.Storage, key)
	if err != nil {
		return err
	}
	Sleep(ctx, think)
	if !keep() {
		return nil
	}
	return w.Client.AddToSet(ctx, w.Storage, key, s, elem)
}

// Sleep waits d, or until ctx ends, whichever comes first.
func Sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
