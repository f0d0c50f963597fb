package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// request is the command one node gets in a fan-out: plain arguments, or a
// script with its keys and arguments.
type request struct {
	script *script
	keys   []string
	args   []any
}

func (r request) cmd(ctx context.Context, bySHA bool) *redis.Cmd {
	if r.script == nil {
		return redis.NewCmd(ctx, r.args...)
	}
	a := make([]any, 0, 3+len(r.keys)+len(r.args))
	if bySHA {
		a = append(a, "evalsha", r.script.sha)
	} else {
		a = append(a, "eval", r.script.src)
	}
	a = append(a, len(r.keys))
	for _, k := range r.keys {
		a = append(a, k)
	}
	a = append(a, r.args...)
	return redis.NewCmd(ctx, a...)
}

// result is what one node answered: err is nil for a reply, and otherwise
// says why the outcome on that node is unknown.
type result struct {
	sent bool
	val  any
	err  error
}

// int64 returns an integer reply.
func (r result) int64() (int64, bool) {
	n, ok := r.val.(int64)
	return n, ok && r.err == nil
}

// unexpected returns why node i's result is not the integer a script
// returns: its error, or the odd reply.
func (r result) unexpected(i int) error {
	if r.err != nil {
		return r.err
	}
	return fmt.Errorf("node %d: unexpected reply %v", i, r.val)
}

// compared sorts the replies of a script that compares the lock's value
// (release, extend) by node: done where the node held our value, foreign
// where it held another client's, and an error where the outcome is
// unknown.
func compared(res []result) (done, foreign []int, errs []error) {
	errs = make([]error, len(res))
	for i, r := range res {
		n, ok := r.int64()
		switch {
		case !ok:
			errs[i] = r.unexpected(i)
		case n == replyDone:
			done = append(done, i)
		case n == replyForeign:
			foreign = append(foreign, i)
		}
	}
	return done, foreign, errs
}

// fanOut sends req to each node in targets (nil: every node) in parallel
// and waits until each has answered or NodeTimeout has passed (or ctx
// ended), then returns the results in node order. Scripts go by EVALSHA;
// nodes that answer NOSCRIPT get the script's source in a second round.
func (l *Locker) fanOut(ctx context.Context, targets []int, req request) []result {
	res := make([]result, len(l.nodes))
	if targets == nil {
		targets = l.all
	}
	l.sendAndWait(ctx, targets, req, true, res)
	var again []int
	for _, i := range targets {
		if res[i].err != nil && redis.HasErrorPrefix(res[i].err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		l.sendAndWait(ctx, again, req, false, res)
	}
	return res
}

func (l *Locker) sendAndWait(ctx context.Context, targets []int, req request, bySHA bool, res []result) {
	deadline := time.Now().Add(l.opts.NodeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	cmds := make([]*redis.Cmd, len(targets))
	calls := make([]*call, len(targets))
	for j, i := range targets {
		cmds[j] = req.cmd(ctx, bySHA)
		calls[j] = l.nodes[i].send(cmds[j], deadline)
	}
	var timeout <-chan time.Time
	var waitErr error
	for j, i := range targets {
		c := calls[j]
		if waitErr == nil {
			if timeout == nil {
				select {
				case <-c.done:
				default:
					t := time.NewTimer(time.Until(deadline))
					defer t.Stop()
					timeout = t.C
				}
			}
			select {
			case <-c.done:
			case <-timeout:
				waitErr = fmt.Errorf("no reply within %v: %w", l.opts.NodeTimeout, context.DeadlineExceeded)
			case <-ctx.Done():
				waitErr = ctx.Err()
			}
		}
		select {
		case <-c.done:
			// The reply may have come in just as the wait ended; a
			// definite answer is worth more than a timeout.
			res[i] = result{sent: true, val: cmds[j].Val(), err: cmds[j].Err()}
		default:
			// The command may still be applied: the outcome is unknown,
			// and cmds[j] must not be read, since the pipeline may still
			// be writing it.
			res[i] = result{sent: true, err: waitErr}
		}
		if res[i].err != nil {
			res[i].err = fmt.Errorf("node %d: %w", i, res[i].err)
		}
	}
}
