package checker

import (
	"testing"

	"github.com/anishathalye/porcupine"

	"splitbrain/checker/lease"
)

// What porcupine's page puts into innerHTML is escaped, whether the model
// describes it or porcupine's defaults would.
func TestEscapedModel(t *testing.T) {
	const evil = `c1<img src=x onerror=alert(1)>&`
	const want = `c1&lt;img src=x onerror=alert(1)&gt;&amp;`
	described := escapedModel(porcupine.Model{
		DescribeState:             func(s interface{}) string { return s.(string) },
		DescribeOperationMetadata: func(m interface{}) string { return m.(string) },
	})
	defaults := escapedModel(porcupine.Model{})
	for name, m := range map[string]porcupine.Model{"described": described, "defaults": defaults} {
		if got := m.DescribeState(evil); got != want {
			t.Errorf("%s: state %q, want %q", name, got, want)
		}
		if got := m.DescribeOperationMetadata(evil); got != want {
			t.Errorf("%s: metadata %q, want %q", name, got, want)
		}
		if got := m.DescribeOperationMetadata(nil); got != "" {
			t.Errorf("%s: no metadata gives %q", name, got)
		}
	}
	if got := escapedModel(lease.MutexModel()).DescribeState("c1<b>"); got != "held by c1&lt;b&gt;" {
		t.Errorf("mutex state %q", got)
	}
}
