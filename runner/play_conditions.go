package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/history"
	"splitbrain/scenarios/spec"
	"splitbrain/workload"
)

// ExpectError says a scripted acquire or extend did not have the outcome
// its step expects (typically on a loaded machine: a reply slower than the
// node timeout turns a grant into a refusal). The run's story then did not
// happen, so the run stops playing steps and its verdict cannot be valid:
// Run hands the error to the checker as the reason the history is
// incomplete. It is an outcome of the run, not a failure of the harness.
type ExpectError struct {
	// spec.Step is the step's number, from 1; File and Line locate it.
	Step   int
	File   string
	Line   int
	Kind   spec.StepKind
	Client string
	// Want is the step's expect; Got what happened: acquired, extended,
	// refused, unknown (the outcome could not be known), or no lease (an
	// extend by a client that held none).
	Want, Got string
	// Cause is the lock's error, if it gave one.
	Cause error
}

func (e *ExpectError) Error() string {
	msg := fmt.Sprintf("step %d (%s %s): expected %s, was %s", e.Step, e.Kind, e.Client, e.Want, e.Got)
	if e.Cause != nil {
		msg += ": " + firstLine(e.Cause)
	}
	return msg
}

func (e *ExpectError) Unwrap() error { return e.Cause }

// Outcome words for ExpectError.Got beyond the expectable ones.
const (
	outcomeUnknown = "unknown"
	outcomeNoLease = "no lease"
)

// outcome names what a lock call's err means: success, refused (the lock
// certainly said no) or unknown.
func outcome(err, refused error, success string) string {
	switch {
	case err == nil:
		return success
	case errors.Is(err, refused):
		return spec.OutcomeRefused
	}
	return outcomeUnknown
}

// checkOutcome checks got against what st expects of lock kind k.
func checkOutcome(st spec.Step, k, got string, cause error) error {
	want := st.ExpectOf(k)
	if want == "" || want == got {
		return nil
	}
	return &ExpectError{Line: st.Line, Kind: st.Kind, Client: st.Client, Want: want, Got: got, Cause: cause}
}

func (r *runner) acquire(ctx context.Context, st spec.Step, key string) error {
	err := r.clients[st.Client].Acquire(ctx, key, r.sc.Lock.TTL)
	if err != nil {
		r.logf("%s acquire %q: not acquired: %v", st.Client, key, firstLine(err))
	} else {
		r.logf("%s acquire %q: acquired", st.Client, key)
	}
	return checkOutcome(st, r.sc.Lock.Kind, outcome(err, workload.ErrNotAcquired, spec.OutcomeAcquired), err)
}

// extend extends the client's lease on key by the lock's TTL.
func (r *runner) extend(ctx context.Context, st spec.Step, key string) error {
	c := r.clients[st.Client]
	if !c.Holds(key) {
		r.logf("%s extend %q: holds no lease, skipped", st.Client, key)
		return checkOutcome(st, r.sc.Lock.Kind, outcomeNoLease, nil)
	}
	err := c.Extend(ctx, key, r.sc.Lock.TTL)
	if err != nil {
		r.logf("%s extend %q: not extended: %v", st.Client, key, firstLine(err))
	} else if d, _ := c.Deadline(key); d.IsZero() {
		r.logf("%s extend %q: extended (the lock's belief has no deadline)", st.Client, key)
	} else {
		r.logf("%s extend %q: extended, valid for %v more", st.Client, key, time.Until(d).Round(time.Millisecond))
	}
	return checkOutcome(st, r.sc.Lock.Kind, outcome(err, workload.ErrNotExtended, spec.OutcomeExtended), err)
}

// ErrWaitTimeout: a wait step's condition was not met within its timeout.
var ErrWaitTimeout = errors.New("condition not met in time")

// Polling a node for wait until up or down: a node that does not answer a
// PING within pingTimeout counts as down (a paused node accepts the
// connection and never replies), so the timeout is generous: a loaded
// machine must not pass for a dead node.
const (
	pollEvery   = 50 * time.Millisecond
	pingTimeout = time.Second
)

// waitUntil waits for st's condition, or fails with ErrWaitTimeout after
// its timeout; with at_most it goes on after that long instead of failing.
// Cancelling ctx ends the wait without an error: the run is then
// interrupted, which playSteps reports.
func (r *runner) waitUntil(ctx context.Context, st spec.Step, key string) error {
	if st.AtMost == 0 {
		return r.waitCondition(ctx, st, key)
	}
	st.Timeout = st.AtMost
	err := r.waitCondition(ctx, st, key)
	if errors.Is(err, ErrWaitTimeout) {
		r.logf("not met within %v; going on", st.AtMost)
		return nil
	}
	return err
}

// waitCondition waits for st's condition for at most st.Timeout.
func (r *runner) waitCondition(ctx context.Context, st spec.Step, key string) error {
	timeout := st.Timeout
	if st.Until == spec.UntilExpired {
		if timeout == 0 {
			timeout = spec.DefaultWaitTimeout + r.sc.Lock.TTL
		}
		deadline, ok := r.clients[st.Client].Deadline(key)
		if !ok {
			r.logf("wait until %s's lease on %q expired: it holds none", st.Client, key)
			return nil
		}
		if deadline.IsZero() {
			return fmt.Errorf("wait until expired: %s's lease on %q has no deadline (lock %s believes until release): %w",
				st.Client, key, r.sc.Lock.Kind, ErrWaitTimeout)
		}
		left := time.Until(deadline)
		if left > timeout {
			return fmt.Errorf("wait until expired: %s's lease on %q is valid for %v more, past the timeout %v: %w",
				st.Client, key, left.Round(time.Millisecond), timeout, ErrWaitTimeout)
		}
		r.logf("wait until %s's lease on %q expired: %v", st.Client, key, max(left, 0).Round(time.Millisecond))
		workload.Sleep(ctx, left)
		return nil
	}
	if timeout == 0 {
		timeout = spec.DefaultWaitTimeout
	}
	switch st.Until {
	case spec.UntilGone:
		if k := r.sc.LockKind(); k != nil {
			key = k.KeyPrefix + key // the name the lock stores it under
		}
		return r.waitGone(ctx, st.Node, key, timeout)
	case spec.UntilPromoted:
		return r.waitPromoted(ctx, timeout)
	case spec.UntilPaused:
		return r.waitPaused(ctx, st.Client, timeout)
	case spec.UntilWrote:
		return r.waitWrote(ctx, st.Client, timeout)
	}
	want := st.Until == spec.UntilUp
	r.logf("wait until %s is %s (at most %v)", st.Node, st.Until, timeout)
	start := time.Now()
	for {
		if r.answers(ctx, st.Node) == want {
			r.logf("%s is %s after %v", st.Node, st.Until, time.Since(start).Round(time.Millisecond))
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) >= timeout {
			return fmt.Errorf("wait until %s %s: not %s after %v: %w", st.Until, st.Node, st.Until, timeout, ErrWaitTimeout)
		}
		workload.Sleep(ctx, pollEvery)
	}
}

// waitPaused waits until client is stopped at a client pause's point.
func (r *runner) waitPaused(ctx context.Context, client string, timeout time.Duration) error {
	r.logf("wait until %s is paused (at most %v)", client, timeout)
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	g := r.faults.gates[client]
	if g == nil {
		return fmt.Errorf("wait until %s paused: no such client", client)
	}
	if err := g.WaitBlocked(wctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("wait until %s paused: not paused after %v (%w): %w", client, timeout, err, ErrWaitTimeout)
	}
	r.logf("%s is paused after %v", client, time.Since(start).Round(time.Millisecond))
	return nil
}

// waitWrote waits until a write of client's to the storage completes
// (applied or rejected), one invoked after the wait began or still in
// flight then.
func (r *runner) waitWrote(ctx context.Context, client string, timeout time.Duration) error {
	r.logf("wait until %s wrote (at most %v)", client, timeout)
	start := time.Now()
	from := len(r.rec.Events())
	for {
		evs := r.rec.EventsFrom(from)
		from += len(evs)
		for _, e := range evs {
			if history.ClientOf(e.Process) == client && isStorageWrite(e.F) && e.Type != history.Invoke {
				r.logf("%s wrote after %v", client, time.Since(start).Round(time.Millisecond))
				return nil
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) >= timeout {
			return fmt.Errorf("wait until %s wrote: no write completed after %v: %w", client, timeout, ErrWaitTimeout)
		}
		workload.Sleep(ctx, 2*time.Millisecond)
	}
}

// isStorageWrite reports whether f writes the storage.
func isStorageWrite(f history.Func) bool {
	switch f {
	case history.Write, history.Transfer, history.Add:
		return true
	}
	return false
}

// answers reports whether node answers an authenticated PING from the
// harness, over a connection of its own (not through the clients' proxies,
// which faults may cut: the question is whether the node is up, not
// whether it is reachable). It speaks RESP itself rather than through
// go-redis, which logs every refused dial, twenty times a second here.
func (r *runner) answers(ctx context.Context, name string) bool {
	n, err := r.node(name)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if k := n.Kind(); k != cluster.Redis && k != cluster.Sentinel {
		// A consensus server answers when it serves: its kind's probe.
		if p, ok := n.(interface{ Conn() cluster.Conn }); ok {
			_, err := p.Conn().Probe(ctx)
			return err == nil
		}
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", n.Addr())
	if err != nil {
		return false
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	pw := r.cluster.Password()
	var req string
	if pw != "" {
		req = fmt.Sprintf("*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(pw), pw)
	}
	if _, err := conn.Write([]byte(req + "*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	rd := bufio.NewReader(conn)
	if pw != "" {
		if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
			return false
		}
	}
	line, err := rd.ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}

// waitGone waits until key is gone from node (expired, or deleted),
// asking the node itself every millisecond over the harness's own
// connection, so that the next step comes at the first instant another
// client could be granted the node's vote.
func (r *runner) waitGone(ctx context.Context, node, key string, timeout time.Duration) error {
	n, err := r.node(node)
	if err != nil {
		return err
	}
	admin, ok := n.(interface{ Admin() *redis.Client })
	if !ok || admin.Admin() == nil {
		return fmt.Errorf("wait until gone: %s is a %s node, whose keys the harness cannot read; want a Redis node", node, n.Kind().Name)
	}
	r.logf("wait until %q is gone from %s (at most %v)", key, node, timeout)
	start := time.Now()
	for {
		qctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		left, err := admin.Admin().Exists(qctx, key).Result()
		cancel()
		if err == nil && left == 0 {
			r.logf("%q is gone from %s after %v", key, node, time.Since(start).Round(time.Millisecond))
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) >= timeout {
			return fmt.Errorf("wait until gone: %q still on %s after %v (last error: %v): %w", key, node, timeout, err, ErrWaitTimeout)
		}
		workload.Sleep(ctx, time.Millisecond)
	}
}
