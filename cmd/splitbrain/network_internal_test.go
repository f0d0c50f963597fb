package main

import (
	"strings"
	"testing"
)

// The worker in a private network namespace plays locally and refuses
// Docker; elsewhere it refuses to play locally, saying why and what to
// set, unless the user opted for the shared loopback.
func TestNetworkReadiness(t *testing.T) {
	defer func(n string) { network = n }(network)
	for _, tc := range []struct {
		name, network, optOut string
		local, docker         string // "" ready, else a part of the refusal
	}{
		{"private", netPrivate, "", "", "private network namespace"},
		{"unavailable", netShared + ": the kernel refused a network namespace (operation not permitted)", "",
			"the kernel refused a network namespace (operation not permitted). In a container made for the harness alone, whose network no other user shares, set SPLITBRAIN_OWN_NETWORK=1; to run unprotected anyway, set SPLITBRAIN_SHARED_LOOPBACK=1", ""},
		{"no supervisor", "", "", "runs without its supervisor", ""},
		{"opted out", netShared + ": x", "1", "", ""},
		{"own", netOwn, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			network = tc.network
			t.Setenv(sharedLoopbackEnv, tc.optOut)
			for _, c := range []struct {
				what string
				err  error
				want string
			}{{"local", localNetworkReady(), tc.local}, {"docker", dockerNetworkReady(), tc.docker}} {
				switch {
				case c.want == "" && c.err != nil:
					t.Errorf("%s: %v, want ready", c.what, c.err)
				case c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want)):
					t.Errorf("%s: %v, want a refusal saying %q", c.what, c.err, c.want)
				}
			}
		})
	}
}

// The supervisor gives a private network to the commands that play on
// the local backend only.
func TestWantsPrivateNetwork(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"run", "clock-jump", "--seed", "1"}, true},
		{[]string{"run", "clock-jump", "--backend", "docker"}, false},
		{[]string{"run", "clock-jump", "--backend=local"}, true},
		{[]string{"suite", "--all"}, true},
		{[]string{"suite", "--backend", "docker"}, false},
		{[]string{"driver", "check", "redis-py"}, true},
		{[]string{"shrink", "no/such/run"}, true},
		{[]string{"shrink", "no/such/run", "--backend", "docker"}, false},
		{[]string{"serve"}, false},
		{[]string{"check", "some/run"}, false},
		{[]string{"run", "--no-such-flag"}, true},
	} {
		if got := wantsPrivateNetwork(tc.args); got != tc.want {
			t.Errorf("wantsPrivateNetwork(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
	t.Setenv(sharedLoopbackEnv, "1")
	if wantsPrivateNetwork([]string{"run", "clock-jump"}) {
		t.Errorf("with %s=1, run still asks for a private network", sharedLoopbackEnv)
	}
}
