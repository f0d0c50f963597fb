package runner

import (
	"context"
	"errors"
)

// tearDown heals every fault and stops everything the run started, in the
// reverse order of setUp, whatever state setUp reached.
func (r *runner) tearDown(ctx context.Context) error {
	var errs []error
	r.sentinel.stopWatch()
	if r.nem != nil {
		errs = append(errs, r.nem.HealAll(ctx))
	}
	errs = append(errs, r.drivers.close(ctx))
	for _, c := range r.conns {
		_ = c.Close()
	}
	for _, c := range r.closers {
		c()
	}
	if r.net != nil {
		r.net.Close()
	}
	if r.cluster != nil {
		errs = append(errs, r.cluster.Close(ctx))
	}
	errs = append(errs, r.closeStorage(ctx))
	return errors.Join(errs...)
}
