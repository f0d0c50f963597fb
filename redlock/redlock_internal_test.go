package redlock

import (
	"encoding/hex"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDriftAndValidity(t *testing.T) {
	tests := []struct {
		name         string
		ttl, elapsed time.Duration
		factor       float64
		constant     time.Duration
		wantDrift    time.Duration
		wantValidity time.Duration
	}{
		{"reference defaults, 10s", 10 * time.Second, 0, 0.01, 2 * time.Millisecond, 102 * time.Millisecond, 10*time.Second - 102*time.Millisecond},
		{"reference defaults, 1s, 5ms elapsed", time.Second, 5 * time.Millisecond, 0.01, 2 * time.Millisecond, 12 * time.Millisecond, 983 * time.Millisecond},
		{"elapsed eats exactly the rest", time.Second, 988 * time.Millisecond, 0.01, 2 * time.Millisecond, 12 * time.Millisecond, 0},
		{"pause longer than ttl", time.Second, 1500 * time.Millisecond, 0.01, 2 * time.Millisecond, 12 * time.Millisecond, -512 * time.Millisecond},
		{"sub-millisecond drift part", 150 * time.Millisecond, time.Millisecond, 0.01, 2 * time.Millisecond, 3500 * time.Microsecond, 145500 * time.Microsecond},
		{"larger factor", 2 * time.Second, 100 * time.Millisecond, 0.1, 0, 200 * time.Millisecond, 1700 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := drift(tt.ttl, tt.factor, tt.constant)
			if d != tt.wantDrift {
				t.Errorf("drift(%v, %v, %v) = %v, want %v", tt.ttl, tt.factor, tt.constant, d, tt.wantDrift)
			}
			if v := validity(tt.ttl, tt.elapsed, d); v != tt.wantValidity {
				t.Errorf("validity(%v, %v, %v) = %v, want %v", tt.ttl, tt.elapsed, d, v, tt.wantValidity)
			}
		})
	}
}

func TestOptionsWithDefaults(t *testing.T) {
	tests := []struct {
		name    string
		in      Options
		want    Options
		wantErr string // substring naming the field; empty means no error
	}{
		{
			name: "zero selects defaults",
			want: Options{NodeTimeout: DefaultNodeTimeout, DriftFactor: DefaultDriftFactor, DriftConst: DefaultDriftConst,
				RetryDelay: DefaultRetryDelay, MaxExtensions: DefaultMaxExtensions},
		},
		{
			name: "explicit values kept",
			in: Options{NodeTimeout: 10 * time.Millisecond, DriftFactor: 0.05, DriftConst: time.Millisecond,
				RetryDelay: time.Second, MaxTries: 3, MaxExtensions: 2, Fencing: FenceTwoRound},
			want: Options{NodeTimeout: 10 * time.Millisecond, DriftFactor: 0.05, DriftConst: time.Millisecond,
				RetryDelay: time.Second, MaxTries: 3, MaxExtensions: 2, Fencing: FenceTwoRound},
		},
		{name: "negative retry delay", in: Options{RetryDelay: -time.Second}, wantErr: "Options.RetryDelay"},
		{name: "negative max tries", in: Options{MaxTries: -1}, wantErr: "Options.MaxTries"},
		{name: "negative max extensions", in: Options{MaxExtensions: -1}, wantErr: "Options.MaxExtensions"},
		{name: "unknown fencing", in: Options{Fencing: Fencing(7)}, wantErr: "Options.Fencing"},
		{name: "negative node timeout", in: Options{NodeTimeout: -time.Millisecond}, wantErr: "Options.NodeTimeout"},
		{name: "negative drift factor", in: Options{DriftFactor: -0.1}, wantErr: "Options.DriftFactor"},
		{name: "drift factor 1", in: Options{DriftFactor: 1}, wantErr: "Options.DriftFactor"},
		{name: "drift factor NaN", in: Options{DriftFactor: math.NaN()}, wantErr: "Options.DriftFactor"},
		{name: "negative drift const", in: Options{DriftConst: -time.Millisecond}, wantErr: "Options.DriftConst"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.withDefaults()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("withDefaults(%+v) error = %v, want one naming %s", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("withDefaults(%+v): %v", tt.in, err)
			}
			if got.NodeTimeout != tt.want.NodeTimeout || got.DriftFactor != tt.want.DriftFactor || got.DriftConst != tt.want.DriftConst ||
				got.RetryDelay != tt.want.RetryDelay || got.MaxTries != tt.want.MaxTries || got.MaxExtensions != tt.want.MaxExtensions ||
				got.Fencing != tt.want.Fencing {
				t.Errorf("withDefaults(%+v) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestNewValue(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		v, err := newValue()
		if err != nil {
			t.Fatal(err)
		}
		b, err := hex.DecodeString(v)
		if err != nil || len(b) < 16 {
			t.Fatalf("value %q: want hex of at least 16 random bytes (err %v)", v, err)
		}
		if seen[v] {
			t.Fatalf("value %q drawn twice", v)
		}
		seen[v] = true
	}
}

func TestRefusal(t *testing.T) {
	tests := []struct {
		name        string
		in          []any
		wantCounter int64
		wantHolder  string
		wantOK      bool
	}{
		{"counter and holder", []any{int64(7), "abc"}, 7, "abc", true},
		{"no counter", []any{int64(0), "abc"}, 0, "abc", true},
		{"holder gone", []any{int64(3), nil}, 3, "", true},
		{"too short", []any{int64(3)}, 0, "", false},
		{"not a counter", []any{"x", "abc"}, 0, "abc", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, h, ok := refusal(tt.in)
			if ok != tt.wantOK || (ok && (n != tt.wantCounter || h != tt.wantHolder)) {
				t.Errorf("refusal(%v) = %d, %q, %v; want %d, %q, %v", tt.in, n, h, ok, tt.wantCounter, tt.wantHolder, tt.wantOK)
			}
		})
	}
}

func TestJitterStaysInRangeAndFollowsTheSeed(t *testing.T) {
	draw := func(seed uint64) []time.Duration {
		l := &Locker{opts: Options{Rand: rand.New(rand.NewPCG(seed, 1))}}
		var out []time.Duration
		for range 100 {
			d := l.jitter(50*time.Millisecond, 150*time.Millisecond)
			if d < 50*time.Millisecond || d >= 150*time.Millisecond {
				t.Fatalf("jitter %v outside [50ms, 150ms)", d)
			}
			out = append(out, d)
		}
		return out
	}
	if a, b := draw(1), draw(1); !slices.Equal(a, b) {
		t.Error("the same seed drew different delays")
	}
	if a, b := draw(1), draw(2); slices.Equal(a, b) {
		t.Error("different seeds drew the same delays")
	}
	l := &Locker{}
	if d := l.jitter(time.Second, time.Second); d != time.Second {
		t.Errorf("empty range: jitter = %v, want its bound", d)
	}
}
