package paired

import (
	"strings"
	"testing"
	"time"

	"splitbrain/history"
	"splitbrain/history/historytest"
)

func TestSortNaturalAndLabels(t *testing.T) {
	names := []string{"c10", "c2", "c1", "nemesis", "c02x"}
	SortNatural(names)
	if got := strings.Join(names, ","); got != "c1,c2,c02x,c10,nemesis" {
		t.Errorf("sorted = %s", got)
	}
	if got := FaultLabel(history.Fault{Kind: "clock-jump", Nodes: []string{"n3"}, Offset: -int64(1500 * time.Millisecond)}); got != "clock-jump n3 -1.5s" {
		t.Errorf("label = %q", got)
	}
	for ns, want := range map[int64]string{0: "0s", historytest.Sec(2.314): "2.31s", historytest.Sec(0.74): "0.740s", int64(3200 * time.Microsecond): "3.2ms"} {
		if got := Seconds(ns); got != want {
			t.Errorf("Seconds(%d) = %q, want %q", ns, got, want)
		}
	}
}
