package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"splitbrain/history"
)

// Endpoint is a node as the network sees it.
type Endpoint struct {
	Name string
	Addr string // host:port the node listens on
}

// Net puts one TCP proxy on every (client, node) link, so that a partition
// can be any set of cut links (a "grudge"), in either direction, without
// touching the kernel's tables. The proxies are toxiproxy's, embedded as a
// library: its toxics already model dropped, reset and delayed bytes.
type Net struct {
	server *toxiproxy.ApiServer

	mu       sync.Mutex
	proxies  map[history.Link]*toxiproxy.Proxy
	closed   bool
	toxicSeq int
}

// NewNet starts a proxy on a free loopback port for every client × node.
func NewNet(clients []string, nodes []Endpoint) (_ *Net, err error) {
	logger := zerolog.Nop()
	n := &Net{
		server:  toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger),
		proxies: map[history.Link]*toxiproxy.Proxy{},
	}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	for _, c := range clients {
		for _, node := range nodes {
			link := history.Link{Client: c, Node: node.Name}
			if _, dup := n.proxies[link]; dup {
				return nil, fmt.Errorf("net: link %s given twice", link)
			}
			p := toxiproxy.NewProxy(n.server, c+"-"+node.Name, "127.0.0.1:0", node.Addr)
			if err := p.Start(); err != nil {
				return nil, fmt.Errorf("net: proxy for %s: %w", link, err)
			}
			n.proxies[link] = p
		}
	}
	return n, nil
}

// Addr is the address client must dial to reach node.
func (n *Net) Addr(client, node string) (string, error) {
	p, err := n.proxy(history.Link{Client: client, Node: node})
	if err != nil {
		return "", err
	}
	return p.Listen, nil
}

// UnknownLinkError names a link the Net does not proxy.
type UnknownLinkError struct{ Link history.Link }

func (e *UnknownLinkError) Error() string {
	return fmt.Sprintf("net: no link %s (unknown client or node)", e.Link)
}

func (n *Net) proxy(l history.Link) (*toxiproxy.Proxy, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("net: closed")
	}
	p, ok := n.proxies[l]
	if !ok {
		return nil, &UnknownLinkError{l}
	}
	return p, nil
}

// Links lists every proxied link, sorted.
func (n *Net) Links() []history.Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]history.Link, 0, len(n.proxies))
	for l := range n.proxies {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Client != out[j].Client {
			return out[i].Client < out[j].Client
		}
		return out[i].Node < out[j].Node
	})
	return out
}

// toxic adds a named toxic to a link's proxy.
func (n *Net) addToxic(l history.Link, name, kind, stream, attrs string) error {
	p, err := n.proxy(l)
	if err != nil {
		return err
	}
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, kind, stream, attrs)
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("net: %s on %s: %w", kind, l, err)
	}
	return nil
}

// removeToxic removes a toxic; removing one that is not there is not an
// error, so a heal can be repeated.
func (n *Net) removeToxic(ctx context.Context, l history.Link, name string) error {
	p, err := n.proxy(l)
	if err != nil {
		return err
	}
	if err := p.Toxics.RemoveToxic(ctx, name); err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
		return fmt.Errorf("net: healing %s: %w", l, err)
	}
	return nil
}

// Close stops every proxy and closes their connections.
func (n *Net) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.closed = true
	for _, p := range n.proxies {
		p.Stop()
	}
}

func (n *Net) nextToxicID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.toxicSeq++
	return n.toxicSeq
}
