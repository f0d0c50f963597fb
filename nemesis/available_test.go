package nemesis_test

import (
	"testing"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/nemesis"
)

// A link fault says itself whether its links' nodes take link faults, as
// a node fault does for its node: refused with the kind's words when one
// of them does not, taken on the links of a node of no kind (the
// storage).
func TestLinkFaultsAvailable(t *testing.T) {
	t.Parallel()
	unlinked := &cluster.Kind{Name: "unlinked", Faults: []fault.Capability{fault.Pause}}
	net, err := nemesis.NewDirectNet(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []nemesis.Endpoint{
		{Name: "n1", Addr: "127.0.0.1:1", Kind: cluster.Redis},
		{Name: "n2", Addr: "127.0.0.1:2", Kind: unlinked},
		{Name: "storage", Addr: "127.0.0.1:3"},
	} {
		if _, err := net.AddLink("c1", ep); err != nil {
			t.Fatal(err)
		}
	}
	ok := []history.Link{{Client: "c1", Node: "n1"}, {Client: "c1", Node: "storage"}}
	bad := append(ok, history.Link{Client: "c1", Node: "n2"})
	faults := func(links []history.Link) []nemesis.Limited {
		return []nemesis.Limited{
			nemesis.Cut{Net: net, Links: links},
			nemesis.Reset{Net: net, Links: links},
			nemesis.Refuse{Net: net, Links: links},
			nemesis.Delay{Net: net, Links: links},
			nemesis.Partition{Net: net, Links: links},
		}
	}
	for _, f := range faults(ok) {
		if err := f.Available(); err != nil {
			t.Errorf("%s on links that take it: %v", f.Describe().Kind, err)
		}
	}
	const want = "node n2: unlinked nodes do not support link faults"
	for _, f := range faults(bad) {
		if err := f.Available(); err == nil || err.Error() != want {
			t.Errorf("%s on n2: %v, want %q", f.Describe().Kind, err, want)
		}
	}
}
