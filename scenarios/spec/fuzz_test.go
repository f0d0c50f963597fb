package spec

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: no input makes the parser panic, every rejection is a located
// error, and every accepted scenario is one the runner can play.
func FuzzParse(f *testing.F) {
	for _, name := range Builtin() {
		data, err := builtin.ReadFile("builtin/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(good))
	f.Add([]byte(good + "  - clock: {node: n2, jump: -2s..3s}\n  - wait: 1s\n  - heal: all\n"))
	f.Add([]byte(good + "  - extend: {client: c1, expect: extended}\n  - wait: {until: expired, client: c1, timeout: 3s}\n" +
		"  - wait: {until: down, node: n2}\n  - acquire: {client: c2, expect: refused}\n"))
	f.Add([]byte(strings.Replace(generated, "{ttl: 1s}", "{ttl: 1s, retries: 3, extend: on}", 1)))
	f.Add([]byte("name: [unclosed\n"))
	f.Add([]byte("steps:\n  - {}\n  - []\n  - cut: 7\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %v (%T) is not a located spec.Errors", err, err)
			}
			for _, e := range es {
				if e.File != "fuzz.yaml" || !strings.HasPrefix(e.Error(), "fuzz.yaml") {
					t.Fatalf("error %q does not name the file", e)
				}
			}
			return
		}
		if sc.Nodes < 1 || len(sc.Clients) < 1 || sc.Lock.TTL <= 0 || len(sc.Steps) == 0 && !sc.Workload.Generated() {
			t.Fatalf("accepted an unplayable scenario: %+v", sc)
		}
		if len(sc.Locks) == 0 || sc.Lock.Kind != sc.Locks[0] || len(sc.Plays()) != len(sc.Locks) {
			t.Fatalf("locks %v, kind %s: want at least one, the kind the first, a play per lock", sc.Locks, sc.Lock.Kind)
		}
		known := map[string]bool{}
		for _, c := range sc.Clients {
			known[c] = true
		}
		for _, st := range sc.Steps {
			if st.Client != "" && !known[st.Client] {
				t.Fatalf("step %+v names unknown client", st)
			}
			if (st.Until == UntilUp || st.Until == UntilDown) && st.Node == "" || st.Until == UntilExpired && st.Client == "" {
				t.Fatalf("wait %+v has no target", st)
			}
			if st.Span.Max < st.Span.Min {
				t.Fatalf("step %+v has an inverted range", st)
			}
		}
	})
}
