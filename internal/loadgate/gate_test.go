package loadgate

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
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

// Gates given one shared file decide as one: the spacing holds between
// admissions of different gates (as of different processes: each gate
// opens the file itself, and flock locks an open file, not a process),
// and a gate that cannot read the counters decides from the load another
// read. Gates with files of their own do neither.
func TestSharedGate(t *testing.T) {
	const spacing = 400 * time.Millisecond
	idle := func() *counters { return &counters{busy: func() uint64 { return 0 }} }
	for _, tc := range []struct {
		name   string
		shared bool
	}{{"one file", true}, {"a file each", false}} {
		t.Run(tc.name+": spacing", func(t *testing.T) {
			dir := t.TempDir()
			g1 := newShared(t, Options{Busy: 0.8, Spacing: spacing, Read: idle().read}, dir+"/gate")
			name2 := dir + "/gate"
			if !tc.shared {
				name2 = dir + "/other"
			}
			g2 := newShared(t, Options{Busy: 0.8, Spacing: 20 * spacing, Read: idle().read}, name2)
			if err := g1.Wait(t.Context(), running(0)); err != nil {
				t.Fatal(err)
			}
			first := time.Now()
			// Unshared, g2 has admitted nothing yet: it admits at once;
			// shared, not before g1's admission is g2's spacing old.
			ctx, cancel := context.WithTimeout(t.Context(), 10*spacing)
			defer cancel()
			err := g2.Wait(ctx, running(0))
			switch {
			case tc.shared && !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("second gate's Wait %v after the first's admission: %v, want held past its spacing", time.Since(first), err)
			case !tc.shared && err != nil:
				t.Errorf("second gate's Wait: %v, want admitted at once", err)
			}
			// And g1 itself waits its own spacing after g2's admission
			// or its own: a lower bound only, never a timed upper one.
			if err := g1.Wait(t.Context(), running(0)); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(first); d < spacing {
				t.Errorf("g1's second admission %v after its first, want at least %v", d, spacing)
			}
		})
		t.Run(tc.name+": load", func(t *testing.T) {
			dir := t.TempDir()
			saturated := &counters{busy: func() uint64 { return 100 }}
			g1 := newShared(t, Options{Busy: 0.8, Read: saturated.read}, dir+"/gate")
			for range 3 { // readings enough to measure a load
				ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
				_ = g1.Wait(ctx, running(5))
				cancel()
			}
			if l := g1.Load(); l < 0.8 {
				t.Fatalf("g1 measured load %.2f on saturated counters, want ≥ 0.8", l)
			}
			name2 := dir + "/gate"
			if !tc.shared {
				name2 = dir + "/other"
			}
			// g2 cannot read the counters: alone it counts the load as
			// low; shared, it decides from the load g1 measured.
			blind := &counters{busy: func() uint64 { return 0 }, err: errors.New("no /proc")}
			g2 := newShared(t, Options{Busy: 0.8, Read: blind.read}, name2)
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			err := g2.Wait(ctx, running(5))
			switch {
			case tc.shared && !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("g2 sharing g1's file: Wait %v (load %.2f), want held by g1's load", err, g2.Load())
			case !tc.shared && err != nil:
				t.Errorf("g2 alone: Wait %v, want admitted", err)
			}
		})
	}
}

func newShared(t *testing.T, o Options, name string) *Gate {
	t.Helper()
	o.Shared = name
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// A shared gate's file is a regular file reached through no link; a file
// of another content is a gate that has read nothing yet.
func TestSharedGateFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/target", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir+"/target", dir+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(dir+"/fifo", 0o600); err != nil {
		t.Fatal(err)
	}
	open := dir + "/open"
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	for _, name := range []string{dir + "/link", dir + "/fifo", dir, dir + "/none/gate", open + "/gate"} {
		if g, err := New(Options{Busy: 0.5, Shared: name}); err == nil {
			g.Close()
			t.Errorf("New(shared %s): no error, want a refusal", name)
		} else if !strings.Contains(err.Error(), "shared gate's file") {
			t.Errorf("New(shared %s): %v, want one naming the shared gate's file", name, err)
		}
	}
	if err := os.WriteFile(dir+"/junk", []byte("not a gate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newShared(t, Options{Busy: 0.5, Read: (&counters{busy: func() uint64 { return 0 }}).read}, dir+"/junk")
	if err := g.Wait(t.Context(), running(0)); err != nil {
		t.Fatalf("Wait on a file of other content: %v", err)
	}
	b, err := os.ReadFile(dir + "/junk")
	if err != nil || strings.Count(string(b), " ") != 4 || !strings.HasSuffix(string(b), "\n") {
		t.Errorf("the file after an admission: %q, %v; want the gate's one line", b, err)
	}
}

// A gate never waits for the shared file's lock: held by another (a
// process stopped while it decided), the floor still admits, and above
// it the caller is held until its context ends, not for ever.
func TestSharedGateLockHeld(t *testing.T) {
	name := t.TempDir() + "/gate"
	holder, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	idle := &counters{busy: func() uint64 { return 0 }}
	g := newShared(t, Options{Busy: 0.8, Floor: 1, Read: idle.read}, name)
	if err := g.Wait(t.Context(), running(0)); err != nil {
		t.Errorf("below the floor, the lock held elsewhere: %v, want admitted", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx, running(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("at the floor, the lock held elsewhere: %v, want held until the context ended", err)
	}
	// Let go, the idle machine admits.
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(t.Context(), running(1)); err != nil {
		t.Errorf("the lock let go: %v, want admitted", err)
	}
}
