package stall

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The process stopped (SIGSTOP) for 300 ms is a stall of about that
// length; one that stood still for less than min is none. A child stops
// and continues this test process: its only test, so nothing else here
// stands still with it.
func TestWatchSeesTheProcessStopped(t *testing.T) {
	for _, tc := range []struct {
		name string
		min  time.Duration
		want bool
	}{
		{"a stop past min", 100 * time.Millisecond, true},
		{"min above the stop", 5 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var got []time.Duration
			done := make(chan struct{})
			go func() {
				defer close(done)
				Watch(ctx, 10*time.Millisecond, tc.min, func(d time.Duration) {
					mu.Lock()
					got = append(got, d)
					mu.Unlock()
				})
			}()
			time.Sleep(50 * time.Millisecond)
			pid := strconv.Itoa(os.Getpid())
			stop := exec.Command("sh", "-c", "kill -STOP "+pid+"; sleep 0.3; kill -CONT "+pid)
			if out, err := stop.CombinedOutput(); err != nil {
				t.Fatalf("stopping this process: %v: %s", err, out)
			}
			time.Sleep(50 * time.Millisecond)
			cancel()
			<-done
			mu.Lock()
			defer mu.Unlock()
			longest := time.Duration(0)
			for _, d := range got {
				longest = max(longest, d)
			}
			switch {
			case tc.want && longest < 250*time.Millisecond:
				t.Errorf("stalls %v, want one of about 300ms", got)
			case !tc.want && len(got) > 0:
				t.Errorf("stalls %v, want none at least %v", got, tc.min)
			}
		})
	}
}
