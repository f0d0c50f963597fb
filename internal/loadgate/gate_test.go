package loadgate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseCPULine(t *testing.T) {
	for _, tc := range []struct {
		line            string
		busy, all, nice uint64
		err             string
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"cpu  91206 0 45714 227276 1306 0 8171 77 0 0\n", 91206 + 45714 + 8171 + 77, 91206 + 45714 + 227276 + 1306 + 8171 + 77, 0, ""},
		// Guest time is in user already: not counted twice.
		{"cpu 10 0 0 90 0 0 0 0 7 3", 10, 100, 0, ""},
		// Nice time is busy, and said apart.
		{"cpu 10 20 0 70 0 0 0 0 0 0", 30, 100, 20, ""},
		// Old kernels: four counters.
		{"cpu 1 2 3 4", 6, 10, 2, ""},
		{"cpu0 1 2 3 4 5", 0, 0, 0, `want "cpu"`},
		{"intr 1 2 3 4", 0, 0, 0, `want "cpu"`},
		{"cpu 1 2", 0, 0, 0, `want "cpu"`},
		{"cpu 1 x 3 4", 0, 0, 0, "counter 2"},
		{"cpu 0 0 0 0", 0, 0, 0, "every CPU counter is zero"},
	} {
		s, err := ParseCPULine(tc.line)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseCPULine(%q): err %v, want one saying %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil || s.Busy != tc.busy || s.Total != tc.all || s.Nice != tc.nice {
			t.Errorf("ParseCPULine(%q) = %+v, %v; want busy %d of %d, nice %d", tc.line, s, err, tc.busy, tc.all, tc.nice)
		}
	}
}

func TestReadProcStat(t *testing.T) {
	s, err := ReadProcStat()
	if err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	if s.Total == 0 || s.Busy > s.Total || s.Nice > s.Busy {
		t.Errorf("sample %+v: want nice ≤ busy ≤ total, total > 0", s)
	}
	n, err := ReadProcStatNiceIdle()
	if err != nil || n.Total < s.Total || n.Busy > n.Total {
		t.Errorf("nice as idle: %+v, %v; want a later sample, busy ≤ total", n, err)
	}
}

// counters is a fake /proc/stat: every read advances time by 100 ticks,
// of which busy() are busy.
type counters struct {
	mu   sync.Mutex
	s    Sample
	busy func() uint64
	err  error
}

func (c *counters) read() (Sample, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return Sample{}, c.err
	}
	c.s.Busy += c.busy()
	c.s.Total += 100
	return c.s, nil
}

func running(n int) func() int { return func() int { return n } }

func TestWait(t *testing.T) {
	const wait = 300 * time.Millisecond // bounds a wait that must not end by itself
	for _, tc := range []struct {
		name    string
		busy    uint64 // ticks of 100 busy per reading
		readErr error
		running int
		admit   bool
	}{
		{"idle machine", 10, nil, 5, true},
		{"just below the bound", 79, nil, 5, true},
		{"at the bound", 80, nil, 5, false},
		{"saturated", 100, nil, 5, false},
		// Below the floor the load does not matter: the suite must end
		// on a machine busy with something else.
		{"saturated, below the floor", 100, nil, 1, true},
		// Counters that cannot be read count as an idle machine: the
		// gate then only spaces the starts.
		{"unreadable counters", 0, errors.New("no /proc"), 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &counters{busy: func() uint64 { return tc.busy }, err: tc.readErr}
			g, err := New(Options{Busy: 0.8, Floor: 2, Read: c.read})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), wait)
			defer cancel()
			err = g.Wait(ctx, running(tc.running))
			if tc.admit && err != nil {
				t.Errorf("Wait: %v, want admitted (load %.2f)", err, g.Load())
			}
			if !tc.admit && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Wait: %v, want held until the context ended (load %.2f)", err, g.Load())
			}
		})
	}
}

// A gate that holds work back admits it once the load falls.
func TestWaitAdmitsWhenLoadFalls(t *testing.T) {
	var mu sync.Mutex
	busy := uint64(100)
	c := &counters{busy: func() uint64 { mu.Lock(); defer mu.Unlock(); return busy }}
	g, err := New(Options{Busy: 0.8, Floor: 1, Read: c.read})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait(t.Context(), running(3)) }()
	select {
	case err := <-done:
		t.Fatalf("admitted at full load: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	mu.Lock()
	busy = 0
	mu.Unlock()
	if err := <-done; err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if l := g.Load(); l >= 0.8 {
		t.Errorf("load %.2f when admitted, want below 0.8", l)
	}
}

// Admissions are spaced: two callers at once are not both admitted
// before the spacing has passed.
func TestWaitSpacesAdmissions(t *testing.T) {
	c := &counters{busy: func() uint64 { return 0 }}
	const spacing = 200 * time.Millisecond
	g, err := New(Options{Busy: 0.8, Floor: 0, Spacing: spacing, Read: c.read})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(t.Context(), running(0)); err != nil {
		t.Fatal(err)
	}
	first := time.Now()
	if err := g.Wait(t.Context(), running(1)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(first); d < spacing {
		t.Errorf("second admission %v after the first, want at least the spacing %v", d, spacing)
	}
}

func TestNewRefusesBadBound(t *testing.T) {
	for _, b := range []float64{0, -0.5, 1.5} {
		if _, err := New(Options{Busy: b}); err == nil || !strings.Contains(err.Error(), "want a fraction") {
			t.Errorf("New(busy %v): err %v, want a refusal", b, err)
		}
	}
}
