package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"splitbrain/cluster"
	"splitbrain/fault"
	"splitbrain/history"
)

// Endpoint is a node as the network sees it.
type Endpoint struct {
	Name string
	Addr string // host:port the node listens on
	// Kind is the node's kind of server, which says whether its links
	// take link faults (fault.Link); nil: a node of no backend's (the
	// storage), whose links always do.
	Kind *cluster.Kind
	// Patience, when not zero, puts a patient relay between the link's
	// proxy and the node (patient.go): a connection the node refuses is
	// dialled again for up to this long instead of being closed under
	// its dialer, as a peer that retries refused connects expects.
	Patience time.Duration
}

// Net puts one TCP proxy on every (client, node) link, so that a partition
// can be any set of cut links (a "grudge"), in either direction, without
// touching the kernel's tables. The proxies are toxiproxy's, embedded as a
// library: its toxics already model dropped, reset and delayed bytes.
// A direct Net (NewDirectNet) has no proxy at all.
type Net struct {
	server *toxiproxy.ApiServer

	mu      sync.Mutex
	proxies map[history.Link]*toxiproxy.Proxy
	// direct holds the links of a direct Net (NewDirectNet), each with
	// the address its client dials: the node's own. Nil for a Net of
	// proxies.
	direct map[history.Link]string
	// relays are the patient relays behind the proxies of the links
	// whose Endpoint asked for patience.
	relays map[history.Link]*patientRelay
	// kinds are the kinds of the links' nodes (Endpoint.Kind), for the
	// link faults' Available.
	kinds map[history.Link]*cluster.Kind
	// cuts counts the cuts in force on each link (Cut), for Blackholed.
	cuts     map[history.Link]int
	closed   bool
	toxicSeq int
	// atClose are run once the proxies have stopped: what toxics must
	// end that toxiproxy does not end itself.
	atClose []func()
}

var registerOnce sync.Once

// registerToxics adds the project's own toxics to toxiproxy's registry
// (refuse.go, delay.go).
func registerToxics() {
	registerOnce.Do(func() {
		toxics.Register(refuseToxicType, new(refuseToxic))
		toxics.Register(delayToxicType, new(delayToxic))
		toxics.Register(lostReplyToxicType, new(lostReplyToxic))
	})
}

// NewNet starts a proxy on a free loopback port for every client × node.
func NewNet(clients []string, nodes []Endpoint) (_ *Net, err error) {
	registerToxics()
	logger := zerolog.Nop()
	n := &Net{
		server:  toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger),
		proxies: map[history.Link]*toxiproxy.Proxy{},
		relays:  map[history.Link]*patientRelay{},
		kinds:   map[history.Link]*cluster.Kind{},
	}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	for _, c := range clients {
		for _, node := range nodes {
			if _, err := n.AddLink(c, node); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// NewDirectNet is a Net without proxies, for a run in which no fault can
// touch a link: every client dials its nodes directly. Proxies double
// every round trip's system calls: in the random schedules of node, clock
// and client faults they were a tenth to a sixth of a play's CPU, servers
// included, and changed nothing there. A link fault asked of a direct Net
// fails with a *DirectLinkError instead of silently doing nothing.
func NewDirectNet(clients []string, nodes []Endpoint) (*Net, error) {
	n := &Net{direct: map[history.Link]string{}, kinds: map[history.Link]*cluster.Kind{}}
	for _, c := range clients {
		for _, node := range nodes {
			if _, err := n.AddLink(c, node); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// available is the refusal, with a *cluster.UnsupportedError, of a link
// fault on links whose node's kind takes none (fault.Link); the links of
// a node of no kind (the storage) take every one.
func (n *Net) available(links []history.Link) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range links {
		if k := n.kinds[l]; k != nil {
			if err := k.Refuse(l.Node, fault.Link); err != nil {
				return err
			}
		}
	}
	return nil
}

// Direct reports whether n is a direct Net (NewDirectNet).
func (n *Net) Direct() bool { return n.direct != nil }

// DirectLinkError is a fault asked of a link of a direct Net, which has
// no proxy to fault it with.
type DirectLinkError struct{ Link history.Link }

func (e *DirectLinkError) Error() string {
	return fmt.Sprintf("net: link %s has no proxy to fault: this run dials its nodes directly, as no fault of its story was to touch a link", e.Link)
}

// AddLink puts a proxy on one more link and returns the address from dial
// to reach node through it. The "client" is whoever dials: a harness client,
// or a replica whose replication link to its master should be cuttable
// (then its "node" is the master).
func (n *Net) AddLink(client string, node Endpoint) (string, error) {
	link := history.Link{Client: client, Node: node.Name}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", errors.New("net: closed")
	}
	_, proxied := n.proxies[link]
	_, direct := n.direct[link]
	if proxied || direct {
		return "", fmt.Errorf("net: link %s given twice", link)
	}
	if node.Kind != nil {
		n.kinds[link] = node.Kind
	}
	if n.direct != nil {
		n.direct[link] = node.Addr
		return node.Addr, nil
	}
	upstream := node.Addr
	var relay *patientRelay
	if node.Patience > 0 {
		r, err := newPatientRelay(node.Addr, node.Patience)
		if err != nil {
			return "", fmt.Errorf("net: proxy for %s: %w", link, err)
		}
		relay, upstream = r, r.Addr()
	}
	p := toxiproxy.NewProxy(n.server, client+"-"+node.Name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		if relay != nil {
			_ = relay.Close()
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			// Binding port 0 fails so only when the whole range is taken.
			return "", fmt.Errorf("net: proxy for %s: no free loopback port: the ephemeral port range is exhausted "+
				"(too many open connections on this machine; see sysctl net.ipv4.ip_local_port_range): %w", link, err)
		}
		return "", fmt.Errorf("net: proxy for %s: %w", link, err)
	}
	n.proxies[link] = p
	if relay != nil {
		n.relays[link] = relay
	}
	return p.Listen, nil
}

// Upstream is the address a link's proxy forwards to (of a direct link,
// the address its client dials).
func (n *Net) Upstream(l history.Link) (string, error) {
	if addr, ok := n.directAddr(l); ok {
		return addr, nil
	}
	p, err := n.proxy(l)
	if err != nil {
		return "", err
	}
	if r := n.relay(l); r != nil {
		return r.Target(), nil
	}
	p.Lock()
	defer p.Unlock()
	return p.Upstream, nil
}

// Retarget points a link's proxy at another node, on the same listening
// address, as a failover (Sentinel, a DNS change) points clients at a
// promoted replica. Connections open on the link are closed; toxics stay.
//
// toxiproxy moves a proxy by closing its listener and listening again on
// the same port. In that instant the port is free, and on a busy machine a
// connection being opened elsewhere can take it as its local port (a client
// redialling the closed proxy can even connect to itself). Such a socket
// goes away once its owner sees it is useless, so the listen is tried
// again until ctx ends or retargetPatience passes: clients must keep
// dialling the address they were given.
func (n *Net) Retarget(ctx context.Context, l history.Link, addr string) error {
	p, err := n.proxy(l)
	if err != nil {
		return err
	}
	if r := n.relay(l); r != nil {
		// The proxy stays on the relay; the relay moves and closes the
		// link's open connections, and with them the proxy's.
		r.Retarget(addr)
		return nil
	}
	p.Lock()
	listen := p.Listen
	p.Unlock()
	err = p.Update(&toxiproxy.Proxy{Listen: listen, Upstream: addr, Enabled: true})
	if err == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, retargetPatience)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for errors.Is(err, syscall.EADDRINUSE) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("net: retarget %s to %s: %s stayed taken for %v: %w", l, addr, listen, retargetPatience, err)
		case <-tick.C:
		}
		// Update left the proxy stopped with its new upstream.
		if err = p.Start(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("net: retarget %s to %s: %w", l, addr, err)
}

// retargetPatience bounds how long Retarget waits for its port.
const retargetPatience = 5 * time.Second

// Addr is the address client must dial to reach node.
func (n *Net) Addr(client, node string) (string, error) {
	if addr, ok := n.directAddr(history.Link{Client: client, Node: node}); ok {
		return addr, nil
	}
	p, err := n.proxy(history.Link{Client: client, Node: node})
	if err != nil {
		return "", err
	}
	// A retarget restarts the proxy, which rewrites Listen under the lock.
	p.Lock()
	defer p.Unlock()
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
	if _, ok := n.direct[l]; ok {
		return nil, &DirectLinkError{l}
	}
	p, ok := n.proxies[l]
	if !ok {
		return nil, &UnknownLinkError{l}
	}
	return p, nil
}

// relay is the patient relay behind l's proxy, if it has one.
func (n *Net) relay(l history.Link) *patientRelay {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.relays[l]
}

// markCut counts a cut on links in (by +1) or out (by -1).
func (n *Net) markCut(links []history.Link, by int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cuts == nil {
		n.cuts = map[history.Link]int{}
	}
	for _, l := range links {
		n.cuts[l] += by
		if n.cuts[l] <= 0 {
			delete(n.cuts, l)
		}
	}
}

// Blackholed says whether addr is the proxy of a link that a cut holds,
// in either direction (a connect needs both): a new connection there
// would not be set up on a real network, its SYN or the reply dropped.
// False for an address no proxy listens on.
func (n *Net) Blackholed(addr string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for l := range n.cuts {
		p, ok := n.proxies[l]
		if !ok {
			continue
		}
		p.Lock()
		listen := p.Listen
		p.Unlock()
		if listen == addr {
			return true
		}
	}
	return false
}

// directAddr is the address of a direct link, if l is one.
func (n *Net) directAddr(l history.Link) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	addr, ok := n.direct[l]
	return addr, ok && !n.closed
}

// Links lists every link, sorted: of a direct Net too, so that a
// partition drawn over them fails as a *DirectLinkError rather than
// cutting nothing.
func (n *Net) Links() []history.Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]history.Link, 0, len(n.proxies)+len(n.direct))
	for l := range n.proxies {
		out = append(out, l)
	}
	for l := range n.direct {
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

// addToxic adds a named toxic to a link's proxy.
func (n *Net) addToxic(l history.Link, name, kind, stream, attrs string) (*toxics.ToxicWrapper, error) {
	p, err := n.proxy(l)
	if err != nil {
		return nil, err
	}
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, kind, stream, attrs)
	w, err := p.Toxics.AddToxicJson(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("net: %s on %s: %w", kind, l, err)
	}
	return w, nil
}

// streams maps a direction onto toxiproxy's stream names.
func streams(d fault.Direction) ([]string, error) {
	switch d {
	case "", fault.Both:
		return []string{"upstream", "downstream"}, nil
	case fault.ToNode:
		return []string{"upstream"}, nil
	case fault.ToClient:
		return []string{"downstream"}, nil
	}
	return nil, fmt.Errorf("net: direction %q, want both, to-node or to-client", d)
}

// poison adds one toxic per link and stream and returns the heal that
// removes them all. On error, what was added is removed again. arm, if
// set, runs on each toxic once it is in place.
func (n *Net) poison(ctx context.Context, prefix string, links []history.Link, dir fault.Direction,
	kind, attrs string, arm func(*toxics.ToxicWrapper)) (Heal, error) {
	if len(links) == 0 {
		return nil, fmt.Errorf("%s: no links given", prefix)
	}
	streams, err := streams(dir)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-%d", prefix, n.nextToxicID())
	type added struct {
		link   history.Link
		stream string
	}
	var done []added
	heal := func(ctx context.Context) error {
		var errs []error
		for _, a := range done {
			errs = append(errs, n.removeToxic(ctx, a.link, name+"-"+a.stream))
		}
		return errors.Join(errs...)
	}
	for _, l := range links {
		for _, st := range streams {
			w, err := n.addToxic(l, name+"-"+st, kind, st, attrs)
			if err != nil {
				return nil, errors.Join(err, heal(ctx))
			}
			done = append(done, added{l, st})
			if arm != nil {
				arm(w)
			}
		}
	}
	return heal, nil
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
	for _, r := range n.relays {
		_ = r.Close()
	}
	for _, f := range n.atClose {
		f()
	}
	n.atClose = nil
}

// onClose runs f when the Net closes, or at once if it has.
func (n *Net) onClose(f func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		f()
		return
	}
	n.atClose = append(n.atClose, f)
}

func (n *Net) nextToxicID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.toxicSeq++
	return n.toxicSeq
}
