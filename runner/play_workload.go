package runner

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"splitbrain/fault"
	"splitbrain/scenarios/spec"
	"splitbrain/workload"
)

// streamClients is the first PCG stream of the generated workload's
// clients: client i draws from streamClients+i.
const streamClients = 1000

// finalReadTimeout bounds the final reads, which run even after Ctrl-C.
const finalReadTimeout = 10 * time.Second

func (r *runner) workloadConfig() workload.Config {
	w := r.sc.Workload
	var backoff func(*rand.Rand) time.Duration
	if w.Backoff != nil {
		backoff = w.Backoff.Draw
	}
	return workload.Config{
		Kind:     workload.Kind(w.Kind),
		Keys:     r.sc.Keys(),
		TTL:      r.sc.Lock.TTL,
		Duration: w.Duration,
		Think:    w.Think.Draw,
		Backoff:  backoff,
		Extend:   r.sc.Lock.Extend,
	}
}

// playGenerated runs the generated workload and the fault steps side by
// side, heals every fault, then reads every resource a last time.
func (r *runner) playGenerated(ctx context.Context) error {
	w := r.sc.Workload
	cfg := r.workloadConfig()
	harness := workload.NewStorage(r.wl.harness, w.Fencing)
	if r.wl.harness != nil {
		if err := workload.Setup(ctx, r.rec, harness, cfg); err != nil {
			return err
		}
	}
	fencing := "off"
	if w.Fencing {
		fencing = "on"
	}
	backoff := spec.Span{Min: workload.BackoffMin, Max: workload.BackoffMax}
	if w.Backoff != nil {
		backoff = *w.Backoff
	}
	r.logf("workload %s: %d client(s) on %d key(s) for %v, think %v, backoff %s, fencing %s",
		w.Kind, len(r.sc.Clients), len(cfg.Keys), w.Duration, w.Think, backoff, fencing)
	workers := make([]workload.Worker, len(r.sc.Clients))
	for i, name := range r.sc.Clients {
		workers[i] = workload.Worker{
			Client:  r.clients[name],
			Storage: r.wl.storages[name],
			Rand:    rand.New(rand.NewPCG(uint64(r.seed), streamClients+uint64(i))),
		}
		if gate := r.faults.gates[name]; gate != nil && w.HasResource() {
			workers[i].BeforeWrite = func(ctx context.Context) { gate.At(ctx, fault.BeforeWrite) }
		}
	}
	// The steps before the first wait set the stage (arm a client pause,
	// cut a client off) before the workload's first operation: started
	// together, a client could pass the hook a pause was meant for.
	lead := len(r.sc.Steps)
	for i, st := range r.sc.Steps {
		if st.Kind == spec.StepWait {
			lead = i
			break
		}
	}
	if err := r.playSteps(ctx, 0, lead); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var wlErr, stepErr error
	stopProgress := r.startProgress(w.Duration)
	wg.Go(func() { wlErr = workload.Run(ctx, cfg, workers) })
	wg.Go(func() { stepErr = r.playSteps(ctx, lead, len(r.sc.Steps)) })
	wg.Wait()
	stopProgress()
	r.logf("workload %s done", w.Kind)
	if err := errors.Join(wlErr, stepErr); err != nil {
		return err
	}
	if r.wl.harness == nil {
		return nil
	}
	// Final reads see the state every fault left behind, so they come
	// after the heal; they run even after Ctrl-C, to judge what was done.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalReadTimeout)
	defer cancel()
	if err := r.nem.HealAll(fctx); err != nil {
		return err
	}
	return workload.FinalReads(fctx, r.rec, harness, cfg)
}
