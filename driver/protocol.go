// Package driver runs a lock under test as a child process — a "lock
// driver", in any language — and speaks to it in JSON lines on its stdin
// and stdout (docs/driver-protocol.md). Lock adapts one driver process to
// workload.Lock; each client of a run gets its own process, which the
// harness can pause for real with SIGSTOP/SIGCONT.
package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Version is the protocol version the harness speaks; hello carries it.
// Version 2 added the kind of server in hello (server, deployment, user,
// sentinel, session_timeout_ms, ttl_ms), the describe hello, and what a
// driver claims in ready (servers, deployments, fenced, unreported,
// library, client_library). A driver of version 1 ignores the new fields
// of hello and gives none of ready's: it is taken for a Redis lock over
// every node, as version 1 had it (V1Claims).
const Version = 2

// Operations the harness sends.
const (
	OpHello   = "hello"
	OpAcquire = "acquire"
	OpRelease = "release"
	OpExtend  = "extend"
	OpGo      = "go"
)

// Messages the driver sends.
const (
	OpReady = "ready"
	OpReply = "reply"
	OpPoint = "point"
	// OpLost is a driver's word, at any time, that its lock told its
	// user a lease is over (rueidislock cancels the context it handed
	// out; a ZooKeeper client's session is lost): the harness's client
	// stops believing at once, as a user who stops when told, and
	// releases. Only a driver whose ready claims "lost" sends it.
	OpLost = "lost"
)

// Results of a reply.
const (
	ResultOK      = "ok"
	ResultFail    = "fail"
	ResultUnknown = "unknown"
)

// The kinds of server a driver's client talks to (hello's server, ready's
// servers): Redis nodes themselves, Redis through Sentinel, a ZooKeeper
// ensemble, an etcd cluster.
const (
	ServerRedis     = "redis"
	ServerSentinel  = "sentinel"
	ServerZooKeeper = "zookeeper"
	ServerEtcd      = "etcd"
)

// Servers are the kinds of server, in the order a driver's columns take
// them.
var Servers = []string{ServerRedis, ServerSentinel, ServerZooKeeper, ServerEtcd}

// Deployments of a lock on Redis (hello's deployment, ready's
// deployments): over every node as independent masters (a quorum lock,
// Redlock's), or on one deployment, n1 with whatever replicas it has.
// ZooKeeper and etcd locks have one deployment, the ensemble.
const (
	DeployMasters  = "masters"
	DeployOne      = "one"
	DeployEnsemble = "ensemble"
)

// Deployments are the deployments a ready may claim.
var Deployments = []string{DeployMasters, DeployOne}

// Unreportable are the requests whose outcome a lock may not report
// (ready's unreported): a release that returns quietly for a lease
// already gone, an extension that cannot tell.
var Unreportable = []string{OpRelease, OpExtend}

// Unsupportable are the requests a lock may have no call for (ready's
// unsupported).
var Unsupportable = []string{OpExtend}

// Node is a server the driver's lock uses, as the driver reaches it.
type Node struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// SentinelInfo is what a client that finds the master through Sentinel
// needs (hello's sentinel, with server "sentinel").
type SentinelInfo struct {
	// Master is the name of the master set the sentinels watch.
	Master string `json:"master"`
	// Nodes are the sentinels, as this client reaches them.
	Nodes []Node `json:"nodes"`
	// Routes maps each address the sentinels hand out (a Redis server's
	// own host:port) to the address this client reaches it at: connect
	// there, or the story's network faults miss the connection.
	Routes map[string]string `json:"routes"`
}

// TLSFiles is a client's TLS material, as files of the run's private
// folder that live as long as the driver's process (hello's tls, with
// server etcd: every member takes TLS connections only, from clients with
// a certificate of the run's own authority).
type TLSFiles struct {
	// CAFile is the run's authority (PEM): check the servers against it.
	CAFile string `json:"ca_file"`
	// CertFile and KeyFile are the client's certificate and key (PEM; the
	// key is ed25519, PKCS #8): present them.
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	// ServerName is the name the servers' certificates carry (they also
	// name 127.0.0.1, where the nodes' addresses are): check it when
	// dialling any other address.
	ServerName string `json:"server_name"`
}

// Request is one line the harness writes to the driver.
type Request struct {
	Op string `json:"op"`
	ID int64  `json:"id,omitempty"`
	// hello
	Protocol int    `json:"protocol,omitempty"`
	Client   string `json:"client,omitempty"`
	// Describe: answer ready with what the driver claims, connect to
	// nothing; the harness then closes stdin. No other field is set.
	Describe bool `json:"describe,omitempty"`
	// Server is the kind of server the client talks to (Servers), and
	// Deployment how the lock's nodes are deployed (Deployments, or
	// ensemble for ZooKeeper and etcd).
	Server     string `json:"server,omitempty"`
	Deployment string `json:"deployment,omitempty"`
	Nodes      []Node `json:"nodes,omitempty"`
	// User is who the client authenticates as with Password, where the
	// server kind has users: ZooKeeper's digest user, etcd's user.
	User     string        `json:"user,omitempty"`
	Password string        `json:"password,omitempty"`
	Sentinel *SentinelInfo `json:"sentinel,omitempty"`
	TLS      *TLSFiles     `json:"tls,omitempty"`
	// SessionTimeoutMS is the ZooKeeper session timeout to ask for: the
	// story's TTL, within what the servers grant.
	SessionTimeoutMS float64 `json:"session_timeout_ms,omitempty"`
	NodeTimeoutMS    float64 `json:"node_timeout_ms,omitempty"`
	Retries          int     `json:"retries,omitempty"`
	// acquire, release, extend (and hello: the story's lock.ttl)
	Key   string  `json:"key,omitempty"`
	TTLMS float64 `json:"ttl_ms,omitempty"`
	Value string  `json:"value,omitempty"`
	// go
	Point string `json:"point,omitempty"`
}

// Message is one line the driver writes: ready (to hello), a point it
// waits at, the reply to a request, or a lease lost.
type Message struct {
	Op string `json:"op"`
	ID int64  `json:"id,omitempty"`
	// ready
	Name   string   `json:"name,omitempty"`
	Points []string `json:"points,omitempty"`
	// Servers are the kinds of server the driver's lock can use, and
	// Deployments its deployments on Redis; none: a version 1 driver, a
	// Redis lock over every node.
	Servers     []string `json:"servers,omitempty"`
	Deployments []string `json:"deployments,omitempty"`
	// Fenced: an ok acquire carries a fencing token.
	Fenced bool `json:"fenced,omitempty"`
	// Unreported are the requests whose outcome the lock does not report
	// to its user (Unreportable): its ok says the call returned, not that
	// the lease was still held.
	Unreported []string `json:"unreported,omitempty"`
	// Unsupported are the requests the lock has no call for (Laravel's
	// lock cannot be extended): the driver answers them fail, and the
	// stories that make them do not fit it.
	Unsupported []string `json:"unsupported,omitempty"`
	// Lost: the lock tells its user when a lease it handed out is over,
	// and the driver says so with a lost message naming the lease's
	// value (each lease a value of its own).
	Lost bool `json:"lost,omitempty"`
	// Library and ClientLibrary name the lock's library and the server
	// client it runs on, with their versions ("symfony/lock 5.4.53",
	// "phpredis 5.3.7"): a finding is about a version.
	Library       string `json:"library,omitempty"`
	ClientLibrary string `json:"client_library,omitempty"`
	// point
	Point string `json:"point,omitempty"`
	// reply (and lost: Value names the lease)
	Result string `json:"result,omitempty"`
	Value  string `json:"value,omitempty"`
	// ValidityMS is the lease's remaining validity when the reply was
	// written, in milliseconds; absent on an ok: the lock tells its user
	// no deadline, and the belief lasts until the release.
	ValidityMS *float64 `json:"validity_ms,omitempty"`
	// MonoNS is the driver's CLOCK_MONOTONIC, in nanoseconds, when it
	// wrote the reply (PHP hrtime(true), Python time.monotonic_ns(),
	// Go Monotonic): the harness reads the same clock (the kernel's, one
	// per machine) and so knows when the validity was counted, instead
	// of when it read the reply.
	MonoNS *int64 `json:"mono_ns,omitempty"`
	Token  *int64 `json:"token,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// MaxLine bounds one line from a driver; a longer one is garbage.
const MaxLine = 64 << 10

// ParseMessage reads one line from a driver. The error says what is wrong
// with it in words; the caller quotes the line.
func ParseMessage(line []byte) (Message, error) {
	var m Message
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("not a JSON object of the protocol: %v", err)
	}
	if dec.More() {
		return m, fmt.Errorf("more than one JSON value on the line")
	}
	switch m.Op {
	case OpReady:
		// The name and the points reach the terminal, the reports and the
		// matrix: text a terminal would act on (escape sequences) or a
		// name too long to read is refused.
		if err := checkLabel("name", m.Name); err != nil {
			return m, err
		}
		for _, p := range m.Points {
			if err := checkLabel("points", p); err != nil {
				return m, err
			}
		}
		for _, l := range []struct{ field, s string }{{"library", m.Library}, {"client_library", m.ClientLibrary}} {
			if err := checkLabel(l.field, l.s); err != nil {
				return m, err
			}
		}
		if err := checkWords("servers", m.Servers, Servers); err != nil {
			return m, err
		}
		if err := checkWords("deployments", m.Deployments, Deployments); err != nil {
			return m, err
		}
		if err := checkWords("unreported", m.Unreported, Unreportable); err != nil {
			return m, err
		}
		if err := checkWords("unsupported", m.Unsupported, Unsupportable); err != nil {
			return m, err
		}
		redis := slices.Contains(m.Servers, ServerRedis)
		switch {
		case len(m.Deployments) > 0 && !redis:
			return m, fmt.Errorf(`"deployments" %v without redis in "servers": a deployment is of Redis nodes`, m.Deployments)
		case redis && len(m.Deployments) == 0:
			return m, fmt.Errorf(`"servers" holds redis and "deployments" is empty; want masters (a lock over every node), one (a lock on n1) or both`)
		case slices.Contains(m.Servers, ServerSentinel) && !slices.Contains(m.Deployments, DeployOne):
			// A client that finds the master through Sentinel can be
			// given the master's address instead: it is a lock of one
			// deployment, which the stories without Sentinel play.
			return m, fmt.Errorf(`"servers" holds sentinel, and "deployments" lacks one: a lock that finds the master through Sentinel is a lock of one deployment`)
		}
	case OpPoint:
		if m.ID <= 0 || m.Point == "" {
			return m, fmt.Errorf(`a point needs "id" (the request it is part of) and "point" (its name)`)
		}
		if err := checkLabel("point", m.Point); err != nil {
			return m, err
		}
	case OpReply:
		if m.ID <= 0 {
			return m, fmt.Errorf(`a reply needs "id", the request's`)
		}
		switch m.Result {
		case ResultOK, ResultFail, ResultUnknown:
		default:
			return m, fmt.Errorf(`"result" %q; want ok, fail or unknown`, m.Result)
		}
	case OpLost:
		if m.Value == "" || m.ID != 0 {
			return m, fmt.Errorf(`a lost needs "value" (the lease's, as its acquire answered it) and no "id": it answers no request`)
		}
	case "":
		return m, fmt.Errorf(`no "op"; want ready, point, reply or lost`)
	default:
		return m, fmt.Errorf(`"op" %q; want ready, point, reply or lost`, m.Op)
	}
	return m, nil
}

// checkWords refuses a list with a word not among valid, or one twice.
func checkWords(field string, got, valid []string) error {
	for i, w := range got {
		if !slices.Contains(valid, w) {
			return fmt.Errorf("%q holds %q; want some of %s", field, w, strings.Join(valid, ", "))
		}
		if slices.Contains(got[:i], w) {
			return fmt.Errorf("%q holds %q twice", field, w)
		}
	}
	return nil
}

// maxLabel bounds a name or point a driver gives.
const maxLabel = 100

// checkLabel refuses a name or point with a control character (an escape
// sequence among them) or longer than maxLabel.
func checkLabel(field, s string) error {
	if len(s) > maxLabel {
		return fmt.Errorf("%q is %d bytes long; want at most %d", field, len(s), maxLabel)
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' {
			return fmt.Errorf("%q %s holds a control or unprintable character; want printable text", field, Quote([]byte(s)))
		}
	}
	return nil
}

// Monotonic is the kernel's CLOCK_MONOTONIC in nanoseconds, the clock a
// reply's mono_ns is read on; 0 if it cannot be read.
func Monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// Validity is the reply's validity as a duration.
func (m Message) Validity() (time.Duration, bool) {
	if m.ValidityMS == nil {
		return 0, false
	}
	return time.Duration(*m.ValidityMS * float64(time.Millisecond)), true
}

// Quote shows a line from a driver in an error: quoted, control characters
// escaped, cut to a readable length.
func Quote(line []byte) string {
	const max = 200
	s := string(line)
	cut := ""
	if len(s) > max {
		s, cut = s[:max], fmt.Sprintf("… (%d bytes in all)", len(line))
	}
	return fmt.Sprintf("%q%s", strings.ToValidUTF8(s, "\uFFFD"), cut)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
