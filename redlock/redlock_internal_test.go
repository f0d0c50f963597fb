package redlock

import (
	"encoding/hex"
	"math"
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
			want: Options{NodeTimeout: DefaultNodeTimeout, DriftFactor: DefaultDriftFactor, DriftConst: DefaultDriftConst},
		},
		{
			name: "explicit values kept",
			in:   Options{NodeTimeout: 10 * time.Millisecond, DriftFactor: 0.05, DriftConst: time.Millisecond},
			want: Options{NodeTimeout: 10 * time.Millisecond, DriftFactor: 0.05, DriftConst: time.Millisecond},
		},
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
			if got.NodeTimeout != tt.want.NodeTimeout || got.DriftFactor != tt.want.DriftFactor || got.DriftConst != tt.want.DriftConst {
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
