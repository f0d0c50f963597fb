package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"splitbrain/history"
)

// Cut drops every byte on a set of client↔node links, in both directions,
// like an iptables DROP: connections stay open and hang, new connections
// are accepted by the proxy but nothing gets through. Healing closes the
// connections that were cut (toxiproxy does so when the toxic goes), so
// clients reconnect afresh.
type Cut struct {
	Net   *Net
	Links []history.Link
}

// Describe implements Fault.
func (c Cut) Describe() history.Fault {
	return history.Fault{Kind: "cut", Links: c.Links, Detail: describeLinks(c.Links)}
}

// Inject implements Fault.
func (c Cut) Inject(ctx context.Context) (Heal, error) {
	if len(c.Links) == 0 {
		return nil, errors.New("cut: no links given")
	}
	name := fmt.Sprintf("cut-%d", c.Net.nextToxicID())
	var done []history.Link
	heal := func(ctx context.Context) error {
		var errs []error
		for _, l := range done {
			for _, dir := range []string{"upstream", "downstream"} {
				errs = append(errs, c.Net.removeToxic(ctx, l, name+"-"+dir))
			}
		}
		return errors.Join(errs...)
	}
	for _, l := range c.Links {
		done = append(done, l)
		for _, dir := range []string{"upstream", "downstream"} {
			// timeout 0: drop the data and never close the connection.
			if err := c.Net.addToxic(l, name+"-"+dir, "timeout", dir, `{"timeout":0}`); err != nil {
				return nil, errors.Join(err, heal(ctx))
			}
		}
	}
	return heal, nil
}

// describeLinks groups links by client: "c1 ✂ n4,n5; c2 ✂ n1".
func describeLinks(links []history.Link) string {
	byClient := map[string][]string{}
	var clients []string
	for _, l := range links {
		if _, ok := byClient[l.Client]; !ok {
			clients = append(clients, l.Client)
		}
		byClient[l.Client] = append(byClient[l.Client], l.Node)
	}
	sort.Strings(clients)
	parts := make([]string, len(clients))
	for i, c := range clients {
		parts[i] = c + " ✂ " + strings.Join(byClient[c], ",")
	}
	return strings.Join(parts, "; ")
}
