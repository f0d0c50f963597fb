package runner

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"splitbrain/history"
)

// DefaultProgressEvery is how often a generated workload reports while it
// runs: often enough that a long run shows it is alive, rarely enough not
// to bury the steps' lines.
const DefaultProgressEvery = 3 * time.Second

// tally counts a run's operations as the history records them.
type tally struct {
	seen int // events counted so far
	// acquires and writes by outcome: ok, fail, info.
	acquires, writes map[history.Type]int
}

// add counts events, the ones recorded since the last call.
func (t *tally) add(events []history.Event) {
	if t.acquires == nil {
		t.acquires, t.writes = map[history.Type]int{}, map[history.Type]int{}
	}
	for _, e := range events {
		if e.Type == history.Invoke {
			continue
		}
		switch e.F {
		case history.Acquire:
			t.acquires[e.Type]++
		case history.Write, history.Transfer, history.Add:
			// The harness's initial writes are not the clients'.
			if e.Process != history.ProcessInit && e.Process != history.ProcessFinal {
				t.writes[e.Type]++
			}
		}
	}
	t.seen += len(events)
}

// startProgress prints a progress line every opts' interval while a
// generated workload of length total runs, and returns the function that
// stops it; that function returns once no more line can be printed. A
// workload no longer than one interval prints none.
func (r *runner) startProgress(total time.Duration) (stop func()) {
	every := r.progressEvery
	if every == 0 {
		every = DefaultProgressEvery
	}
	if every < 0 || total <= every {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		var counts tally
		for {
			select {
			case <-done:
				return
			case <-t.C:
				// Only what is new: a copy of the whole history every
				// few seconds was most of a long run's memory.
				counts.add(r.rec.EventsFrom(counts.seen))
				r.logf("%s", r.progressLine(time.Since(start), total, &counts))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// progressLine says how far the workload is, what it did so far and which
// faults are active now.
func (r *runner) progressLine(elapsed, total time.Duration, c *tally) string {
	var b strings.Builder
	fmt.Fprintf(&b, "progress %v/%v: acquires %d granted, %d refused, %d unknown",
		elapsed.Round(100*time.Millisecond), total, c.acquires[history.OK], c.acquires[history.Fail], c.acquires[history.Info])
	if r.sc.Workload.HasResource() {
		fmt.Fprintf(&b, "; writes %d applied, %d rejected, %d unknown",
			c.writes[history.OK], c.writes[history.Fail], c.writes[history.Info])
	}
	var faults []string
	for _, f := range r.nem.Active() {
		d := f.Detail
		if d == "" {
			d = f.Kind
		}
		if rs := []rune(d); len(rs) > 60 {
			d = string(rs[:59]) + "…"
		}
		faults = append(faults, d)
	}
	if len(faults) == 0 {
		b.WriteString("; no fault active")
	} else {
		b.WriteString("; faults: " + strings.Join(faults, "; "))
	}
	return b.String()
}
