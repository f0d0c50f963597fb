package adapter

import (
	"context"
	"strings"
	"testing"

	"splitbrain/locks"
)

// Every kind of the registry names a builder that exists.
func TestEveryKindHasABuilder(t *testing.T) {
	for _, k := range locks.All {
		if Builders[k.Adapter] == nil {
			t.Errorf("kind %s: no builder %q", k.Name, k.Adapter)
		}
	}
	_, err := Build(context.Background(), &locks.Kind{Name: "chubby", Adapter: "chubby"}, Env{})
	if err == nil || !strings.Contains(err.Error(), `no adapter "chubby"`) {
		t.Errorf("unknown adapter: %v", err)
	}
}
