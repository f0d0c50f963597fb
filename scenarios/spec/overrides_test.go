package spec

import (
	"strings"
	"testing"
	"time"

	"splitbrain/locks"
)

// Overrides.Check at both sides of each edge: the values the command line
// and Override both accept, and the first ones they refuse.
func TestOverridesCheck(t *testing.T) {
	all := func(string) bool { return true }
	for _, tc := range []struct {
		name string
		o    Overrides
		want string // "" when valid
	}{
		{"known lock", Overrides{Lock: locks.Redsync.Name, Clients: 1, Duration: time.Millisecond}, ""},
		{"unknown lock", Overrides{Lock: "chubby", Clients: 1, Duration: time.Second}, `--lock "chubby": want one of`},
		{"empty lock given", Overrides{Clients: 1, Duration: time.Second}, `--lock "": want one of`},
		{"no clients", Overrides{Lock: locks.Redsync.Name, Clients: 0, Duration: time.Second}, "--clients 0: want a whole number from 1 to 64"},
		{"most clients", Overrides{Lock: locks.Redsync.Name, Clients: MaxClients, Duration: time.Second}, ""},
		{"one client too many", Overrides{Lock: locks.Redsync.Name, Clients: MaxClients + 1, Duration: time.Second}, "--clients 65"},
		{"time under 1ms", Overrides{Lock: locks.Redsync.Name, Clients: 1, Duration: time.Millisecond - 1}, "want a duration of at least 1ms"},
		{"longest time", Overrides{Lock: locks.Redsync.Name, Clients: 1, Duration: MaxDuration}, ""},
		{"time too long", Overrides{Lock: locks.Redsync.Name, Clients: 1, Duration: MaxDuration + time.Millisecond}, "--time 24h0m0.001s: want at most 24h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Check(all)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	// Set in code, a zero field is unset, not a value to refuse.
	if err := (Overrides{}).Check(Overrides{}.nonZero); err != nil {
		t.Errorf("no overrides: %v", err)
	}
}
