package spec

import (
	"strings"
	"testing"
	"time"
)

// Parse, which built-ins and tests call with bytes already in memory,
// keeps the file limit too; the limits of a file's parts are checked in
// cmd/splitbrain's TestUnboundedInput, through the binary.
func TestParseLimits(t *testing.T) {
	head := "name: x\nexpect: any\ncluster: {nodes: 3}\n"
	for _, tt := range []struct {
		name, data, want string
	}{
		{"oversized", head + "steps:\n  - wait: 1ms\n" + strings.Repeat("#\n", MaxFileSize/2), "more than the 256 KiB a scenario file may have"},
		{"a description not text", head + "description: [a, b]\nsteps:\n  - wait: 1ms\n", "x.yaml:4: description: want text"},
		{"net delay over a day", head + "workload: {clients: 1}\nsteps:\n  - net: {client: c1, nodes: [n1], fault: delay, delay: 25h}\n", "steps[0].net.delay: \"25h\" is too long; want at most 24h"},
		{"a fault's for", head + "steps:\n  - kill: {node: n1, for: 48h}\n", "steps[0].kill.for: \"48h\" is too long"},
		{"a wait's timeout", head + "steps:\n  - wait: {until: up, node: n1, timeout: 1000h}\n", "steps[0].wait.timeout: \"1000h\" is too long"},
		// Issue 33, hardening 5: a 285-byte scenario drew 86 million
		// faults and took 24 GB; 10 000 waits of a day were accepted.
		{"a schedule drawing too many faults", head + "workload: {kind: counter, clients: 1}\nsteps:\n  - random: {faults: [clock], interval: 1ms, duration: 1ms, for: 24h}\n",
			"draws 86400001 faults, more than the 10000 a schedule may draw"},
		{"waits longer than a day in all", head + "steps:\n  - wait: 20h\n  - wait: 1ms\n  - wait: 4h\n  - wait: 24h\n",
			"x.yaml:7: steps[2]: the steps up to here take up to 24h0m0.001s, more than the 24h a run may take"},
		{"waits and a schedule longer than a day", head + "workload: {kind: counter, clients: 1}\nsteps:\n  - wait: 12h\n  - random: {faults: [kill], interval: 1h, duration: 1s, for: 13h}\n",
			"steps[1]: the steps up to here take up to 25h0m0s"},
		// Issue 33, hardening 8: a lock key of 250 KB made 850 MB of
		// files in a 2 s run.
		{"a long lock key", head + "lock: {key: " + strings.Repeat("k", 250_000) + "}\nsteps:\n  - wait: 1ms\n",
			"x.yaml:4: lock.key: 250000 bytes, more than the 128 a lock key may have"},
		{"a long key on a step", head + "steps:\n  - acquire: {client: c1, key: " + strings.Repeat("k", MaxKey+1) + "}\n",
			"x.yaml:5: steps[0].acquire.key: 129 bytes, more than the 128"},
		{"a long key on a wait", head + "steps:\n  - wait: {until: expired, client: c1, key: " + strings.Repeat("k", MaxKey+1) + "}\n",
			"x.yaml:5: steps[0].wait.key: 129 bytes, more than the 128"},
		{"a lock key not text", head + "lock: {key: [a, b]}\nsteps:\n  - wait: 1ms\n", "x.yaml:4: lock.key: want a key name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: %v, want an error saying %q", err, tt.want)
			}
		})
	}
	// The longest of each is still a scenario.
	key := strings.Repeat("k", MaxKey)
	ok := head + "description: " + strings.Repeat("x", MaxDescription) + "\nlock: {key: " + key + "}\nsteps:\n  - acquire: {client: c1, key: " + key + "}\n  - wait: 24h\n  - clock: {node: n1, jump: -24h}\n  - kill: {node: n1, for: 24h}\n"
	if _, err := Parse([]byte(ok), "x.yaml"); err != nil {
		t.Errorf("a scenario at the limits: %v", err)
	}
	most := head + "workload: {kind: counter, clients: 1}\nsteps:\n  - wait: 10h\n  - random: {faults: [kill], interval: 100ms, duration: 50ms, for: 999900ms}\n"
	if _, err := Parse([]byte(most), "x.yaml"); err != nil {
		t.Errorf("a schedule of 9 999 faults after a wait: %v", err)
	}
	if err := CheckDuration(MaxDuration); err != nil {
		t.Errorf("CheckDuration(%v) = %v", MaxDuration, err)
	}
	if err := CheckDuration(MaxDuration + time.Millisecond); err == nil {
		t.Errorf("CheckDuration(%v) = nil", MaxDuration+time.Millisecond)
	}
}
