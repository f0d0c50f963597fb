package workload

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"splitbrain/history"
)

// fakeLock answers from a script: the client's bookkeeping and recording do
// not depend on Redis.
type fakeLock struct {
	acquireErr, releaseErr, extendErr error
	token                             *int64
}

func (f *fakeLock) Acquire(_ context.Context, key string, ttl time.Duration) (*Lease, error) {
	if f.acquireErr != nil {
		return nil, f.acquireErr
	}
	return &Lease{Key: key, Value: "v-" + key, Deadline: time.Now().Add(ttl), Token: f.token, Granted: []string{"n1", "n2"}}, nil
}

func (f *fakeLock) Release(context.Context, *Lease) error { return f.releaseErr }

func (f *fakeLock) Extend(_ context.Context, l *Lease, ttl time.Duration) (*Lease, error) {
	if f.extendErr != nil {
		return nil, f.extendErr
	}
	ext := *l
	ext.Deadline = time.Now().Add(ttl)
	return &ext, nil
}

func TestClientRecordsOutcomes(t *testing.T) {
	seven := int64(7)
	for _, tc := range []struct {
		name        string
		lock        fakeLock
		wantAcquire history.Type
		wantRelease history.Type // "" when no release is recorded
		wantProcess string       // the process after both operations
		wantRemain  []string     // the nodes a refusal names
	}{
		{"granted and released", fakeLock{token: &seven}, history.OK, history.OK, "c1", nil},
		{"lost attempt", fakeLock{acquireErr: errors.Join(ErrNotAcquired, errors.New("2 of 5"))}, history.Fail, "", "c1", nil},
		{"lost attempt that left its key", fakeLock{acquireErr: &RefusedError{Remain: []string{"n4"}, Err: errors.New("rollback unanswered")}},
			history.Fail, "", "c1", []string{"n4"}},
		{"unknown attempt", fakeLock{acquireErr: errors.New("connection reset")}, history.Info, "", "c1.1", nil},
		{"lease lost before release", fakeLock{releaseErr: errors.Join(ErrNotHeld, errors.New("1 of 5"))}, history.OK, history.Fail, "c1", nil},
		{"release outcome unknown", fakeLock{releaseErr: errors.New("timeout")}, history.OK, history.Info, "c1.1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			rec := history.NewRecorder(&buf, time.Now())
			c := NewClient("c1", &tc.lock, rec)
			ctx := context.Background()
			_ = c.Acquire(ctx, "k", time.Second)
			if got := c.Holds("k"); got != (tc.wantAcquire == history.OK) {
				t.Errorf("Holds after acquire = %v", got)
			}
			_ = c.Release(ctx, "k")
			if c.Holds("k") {
				t.Error("still holds k after release")
			}
			events, err := history.Parse(&buf, "mem")
			if err != nil {
				t.Fatal(err)
			}
			var types []history.Type
			for _, e := range events {
				types = append(types, e.Type)
			}
			want := []history.Type{history.Invoke, tc.wantAcquire}
			if tc.wantRelease != "" {
				want = append(want, history.Invoke, tc.wantRelease)
			}
			if len(types) != len(want) {
				t.Fatalf("recorded %v, want %v", types, want)
			}
			for i := range want {
				if types[i] != want[i] {
					t.Fatalf("recorded %v, want %v", types, want)
				}
			}
			if events[0].TTL != int64(time.Second) {
				t.Errorf("acquire invoke records TTL %d, want the %d asked for", events[0].TTL, int64(time.Second))
			}
			ok := events[1]
			if tc.wantAcquire == history.OK {
				if ok.Deadline == nil || *ok.Deadline <= ok.Time || ok.StringValue() != "v-k" || len(ok.Nodes) != 2 {
					t.Errorf("acquire ok event lacks lease details: %+v", ok)
				}
				if tc.lock.token != nil && (ok.Token == nil || *ok.Token != 7) {
					t.Errorf("token not recorded: %+v", ok)
				}
			} else {
				if ok.Err == "" {
					t.Errorf("failed acquire recorded without its error: %+v", ok)
				}
				if !slices.Equal(ok.Nodes, tc.wantRemain) {
					t.Errorf("refusal names nodes %v, want %v", ok.Nodes, tc.wantRemain)
				}
			}
			if c.process != tc.wantProcess {
				t.Errorf("process %q after the run, want %q", c.process, tc.wantProcess)
			}
		})
	}
}

// Every read and write of a client names the lease it believes it holds
// (history.Event.Lease), so the checker ties it to that lease exactly: also
// after an unknown outcome, when the client continues under a new process.
// The harness's own operations name none.
func TestClientRecordsTheLeaseOfEachOperation(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, time.Now())
	c := NewClient("c1", &fakeLock{}, rec)
	ctx := context.Background()
	st := NewStorage(nil, false)
	read := func(c *Client) {
		if err := c.read(ctx, "k", func() (any, error) { return 0, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Acquire(ctx, "k", time.Second); err != nil {
		t.Fatal(err)
	}
	read(c)
	// A write of unknown outcome: c1 continues as c1.1, lease in hand.
	_ = c.write(ctx, st, history.Write, "k", 1, func(*int64) (int64, error) { return 0, errors.New("i/o timeout") })
	_ = c.write(ctx, st, history.Write, "k", 1, func(*int64) (int64, error) { return 2, nil })
	init := NewClient(history.ProcessInit, nil, rec)
	read(init)
	events, err := history.Parse(&buf, "mem")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		if e.Type == history.Invoke && (e.F == history.Read || e.F == history.Write) {
			got = append(got, e.Process+":"+e.Lease)
		}
	}
	want := []string{"c1:v-k", "c1:v-k", "c1.1:v-k", "init:"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("invokes name leases %q, want %q", got, want)
	}
}

// A refused client waits the drawn backoff before its next attempt: over
// a run of 300 ms with a backoff of 100 ms it makes at most four
// attempts, each wait drawn from its own stream.
func TestRunWaitsTheBackoff(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, time.Now())
	c := NewClient("c1", &fakeLock{acquireErr: ErrNotAcquired}, rec)
	draws := 0
	cfg := Config{Kind: Mutex, Keys: []string{"k"}, TTL: time.Second, Duration: 300 * time.Millisecond,
		Think: func(*rand.Rand) time.Duration { return time.Millisecond },
		Backoff: func(*rand.Rand) time.Duration {
			draws++
			return 100 * time.Millisecond
		}}
	if err := Run(t.Context(), cfg, []Worker{{Client: c, Rand: rand.New(rand.NewPCG(1, 2))}}); err != nil {
		t.Fatal(err)
	}
	events, err := history.Parse(&buf, "mem")
	if err != nil {
		t.Fatal(err)
	}
	attempts := 0
	for _, e := range events {
		if e.Type == history.Invoke && e.F == history.Acquire {
			attempts++
		}
	}
	if attempts < 1 || attempts > 4 {
		t.Errorf("%d attempts in 300 ms with a 100 ms backoff, want 1 to 4", attempts)
	}
	if draws != attempts {
		t.Errorf("%d backoffs drawn for %d refused attempts, want one each", draws, attempts)
	}
}

// releaseLog is a fakeLock that remembers the leases it was asked to
// release.
type releaseLog struct {
	fakeLock
	released []string
}

func (r *releaseLog) Release(ctx context.Context, l *Lease) error {
	r.released = append(r.released, l.Value)
	return r.fakeLock.Release(ctx, l)
}

// RetryRelease sends the release of the last lease whose release went
// unanswered once more — with that lease, whatever the client holds now —
// and records nothing; with no such release there is nothing to retry.
func TestRetryRelease(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, time.Now())
	l := &releaseLog{fakeLock: fakeLock{releaseErr: errors.New("timeout")}}
	c := NewClient("c1", l, rec)
	ctx := context.Background()
	if err := c.RetryRelease(ctx, "k"); !errors.Is(err, ErrNoUnsureRelease) {
		t.Fatalf("RetryRelease with nothing unknown: %v, want ErrNoUnsureRelease", err)
	}
	_ = c.Acquire(ctx, "k", time.Second)
	_ = c.Release(ctx, "k") // unknown
	l.releaseErr = nil
	_ = c.Acquire(ctx, "k", time.Second)
	events := strings.Count(buf.String(), "\n")
	if err := c.RetryRelease(ctx, "k"); err != nil {
		t.Fatalf("RetryRelease: %v", err)
	}
	if got := strings.Count(buf.String(), "\n"); got != events {
		t.Errorf("RetryRelease recorded %d event(s); want none", got-events)
	}
	if !c.Holds("k") {
		t.Error("the retry ended the client's belief in the lease it holds now")
	}
	if want := []string{"v-k", "v-k"}; !slices.Equal(l.released, want) {
		t.Errorf("released %v, want %v", l.released, want)
	}
	if err := c.RetryRelease(ctx, "k"); !errors.Is(err, ErrNoUnsureRelease) {
		t.Errorf("a second RetryRelease: %v, want ErrNoUnsureRelease (one retry per unknown release)", err)
	}
}
