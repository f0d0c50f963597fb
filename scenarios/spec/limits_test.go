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
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: %v, want an error saying %q", err, tt.want)
			}
		})
	}
	// The longest of each is still a scenario.
	ok := head + "description: " + strings.Repeat("x", MaxDescription) + "\nsteps:\n  - wait: 24h\n  - clock: {node: n1, jump: -24h}\n"
	if _, err := Parse([]byte(ok), "x.yaml"); err != nil {
		t.Errorf("a scenario at the limits: %v", err)
	}
	if err := CheckDuration(MaxDuration); err != nil {
		t.Errorf("CheckDuration(%v) = %v", MaxDuration, err)
	}
	if err := CheckDuration(MaxDuration + time.Millisecond); err == nil {
		t.Errorf("CheckDuration(%v) = nil", MaxDuration+time.Millisecond)
	}
}
