package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/scenarios/spec"
	"splitbrain/workload"
)

func (r *runner) play(ctx context.Context) error {
	if r.sc.Workload.Generated() {
		return r.playGenerated(ctx)
	}
	return r.playSteps(ctx, 0, len(r.sc.Steps))
}

// playSteps plays steps [from, to).
func (r *runner) playSteps(ctx context.Context, from, to int) error {
	for i := from; i < to; i++ {
		st := r.sc.Steps[i]
		if ctx.Err() != nil {
			r.logf("interrupted before step %d", i+1)
			return nil
		}
		if err := r.step(ctx, st); err != nil {
			var ee *ExpectError
			if errors.As(err, &ee) {
				ee.Step, ee.File = i+1, r.sc.File
				return ee
			}
			return fmt.Errorf("%s:%d: step %d (%s): %w", r.sc.File, st.Line, i+1, st.Kind, err)
		}
	}
	return nil
}

func (r *runner) step(ctx context.Context, st spec.Step) error {
	key := st.Key
	if key == "" {
		key = r.sc.Lock.Key
	}
	switch st.Kind {
	case spec.StepAcquire:
		return r.acquire(ctx, st, key)
	case spec.StepExtend:
		return r.extend(ctx, st, key)
	case spec.StepRelease:
		c := r.clients[st.Client]
		if st.Again {
			// The user's retry of a release that went unanswered, with
			// the lock object it had: not a release of the lease the
			// client may hold now, so not one in the history.
			switch err := c.RetryRelease(ctx, key); {
			case errors.Is(err, workload.ErrNoUnsureRelease):
				r.logf("%s release %q again: %v, skipped", st.Client, key, err)
			case err != nil:
				r.logf("%s release %q again, the lease whose release went unanswered: %v", st.Client, key, firstLine(err))
			default:
				r.logf("%s release %q again, the lease whose release went unanswered: released", st.Client, key)
			}
			return nil
		}
		if !c.Holds(key) {
			r.logf("%s release %q: holds no lease, skipped", st.Client, key)
			return nil
		}
		if err := c.Release(ctx, key); err != nil {
			r.logf("%s release %q: %v", st.Client, key, firstLine(err))
		} else {
			r.logf("%s release %q: released", st.Client, key)
		}
		return nil
	case spec.StepWait:
		if st.Until != "" {
			return r.waitUntil(ctx, st, key)
		}
		d := st.Span.Draw(r.wlRand)
		r.logf("wait %v", d)
		workload.Sleep(ctx, d)
		return nil
	default:
		return r.faultStep(ctx, st)
	}
}

func (r *runner) heal(ctx context.Context, what string) error {
	var errs []error
	for _, kind := range healKindsFor(what) {
		if kind == fault.KindStarve && what != "all" {
			// Nodes and clients both starve: each heal ends its own.
			clients := what == "clients"
			errs = append(errs, r.nem.StopMatching(ctx, func(f history.Fault) bool {
				return f.Kind == kind && len(f.Nodes) == 1 && slices.Contains(r.sc.Clients, f.Nodes[0]) == clients
			}))
			continue
		}
		errs = append(errs, r.nem.StopKind(ctx, kind))
	}
	return errors.Join(errs...)
}
