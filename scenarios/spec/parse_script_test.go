package spec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"splitbrain/locks"
)

const generated = `name: g
expect: safe
cluster: {nodes: 3}
lock: {ttl: 1s}
workload: {kind: counter, clients: 2, duration: 1s}
`

func TestParseNewFields(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		check      func(*Scenario) string
	}{
		{"backend docker", strings.Replace(good, "{nodes: 3}", "{nodes: 3, backend: docker}", 1), func(sc *Scenario) string {
			if sc.Backend != BackendDocker {
				return "backend " + sc.Backend
			}
			return ""
		}},
		{"backend absent", good, func(sc *Scenario) string {
			if sc.Backend != "" {
				return "backend " + sc.Backend + ", want empty (the caller's choice)"
			}
			return ""
		}},
		{"retries", strings.Replace(good, "{ttl: 1s}", "{ttl: 1s, retries: 5}", 1), func(sc *Scenario) string {
			if sc.Lock.Retries != 5 {
				return "retries not 5"
			}
			return ""
		}},
		{"extend on", strings.Replace(generated, "{ttl: 1s}", "{ttl: 1s, extend: on}", 1), func(sc *Scenario) string {
			if !sc.Lock.Extend {
				return "extend off"
			}
			return ""
		}},
		{"extend off", strings.Replace(generated, "{ttl: 1s}", "{ttl: 1s, extend: off}", 1), func(sc *Scenario) string {
			if sc.Lock.Extend {
				return "extend on"
			}
			return ""
		}},
		{"steps", good + `  - acquire: {client: c2, key: k, expect: refused}
  - extend: {client: c1, expect: extended}
  - extend: {client: c1, key: k}
  - wait: {until: expired, client: c1, key: k, timeout: 3s}
  - wait: {until: down, node: n2}
  - wait: {until: up, node: n2, timeout: 10s}
  - wait: 1s..2s
`, func(sc *Scenario) string {
			want := []Step{
				{Kind: StepAcquire, Client: "c1"},
				{Kind: StepAcquire, Client: "c2", Key: "k", Outcome: Outcome{Expect: OutcomeRefused}},
				{Kind: StepExtend, Client: "c1", Outcome: Outcome{Expect: OutcomeExtended}},
				{Kind: StepExtend, Client: "c1", Key: "k"},
				{Kind: StepWait, Condition: Condition{Until: UntilExpired, Timeout: 3 * time.Second}, Client: "c1", Key: "k"},
				{Kind: StepWait, Condition: Condition{Until: UntilDown}, Node: "n2"},
				{Kind: StepWait, Condition: Condition{Until: UntilUp, Timeout: 10 * time.Second}, Node: "n2"},
				{Kind: StepWait, Span: Span{time.Second, 2 * time.Second}},
			}
			if len(sc.Steps) != len(want) {
				return "wrong number of steps"
			}
			for i, w := range want {
				g := sc.Steps[i]
				if g.Kind != w.Kind || g.Client != w.Client || g.Key != w.Key || g.Expect != w.Expect ||
					g.Until != w.Until || g.Node != w.Node || g.Timeout != w.Timeout || g.Span != w.Span {
					return "step " + string(rune('0'+i)) + " parsed wrong"
				}
			}
			return ""
		}},
		{"expect per lock", good + `  - acquire: {client: c2, expect: {default: acquired, wait-replicas: refused, rueidislock: any}}
  - extend: {client: c1, expect: {redislock: refused}}
  - acquire: {client: c2, expect: {default: any, redsync: refused}}
`, func(sc *Scenario) string {
			// Against each lock, what its step expects: the lock's entry,
			// else the default, else anything.
			for _, tc := range []struct {
				step       int
				lock, want string
			}{
				{1, locks.WaitReplicas.Name, OutcomeRefused}, {1, locks.Redlock.Name, OutcomeAcquired},
				{2, locks.Redislock.Name, OutcomeRefused}, {2, locks.Redsync.Name, ""},
				// any: unpinned for the lock named, or for every other.
				{1, locks.Rueidislock.Name, ""},
				{3, locks.Redsync.Name, OutcomeRefused}, {3, locks.Redlock.Name, ""},
			} {
				if got := sc.Steps[tc.step].ExpectOf(tc.lock); got != tc.want {
					return fmt.Sprintf("step %d expects %q of %s, want %q", tc.step, got, tc.lock, tc.want)
				}
			}
			return ""
		}},
		{"a session of the client's and a retried release",
			strings.Replace(good, "{ttl: 1s}", "{kind: etcd, ttl: 1s, session: client}", 1) + "  - release: {client: c1, again: true}\n  - release: {client: c1}\n",
			func(sc *Scenario) string {
				if sc.Lock.Session != SessionClient {
					return fmt.Sprintf("session %q, want %q", sc.Lock.Session, SessionClient)
				}
				if !sc.Steps[1].Again || sc.Steps[2].Again {
					return "again not parsed on the retry alone"
				}
				return ""
			}},
		{"a slow disk", good + "  - fsync: {node: n3, delay: 10s, for: 20s}\n", func(sc *Scenario) string {
			st := sc.Steps[1]
			if st.Kind != StepFsync || st.Node != "n3" || st.Delay.Min != 10*time.Second || !st.HasFor {
				return fmt.Sprintf("fsync step parsed as %+v", st)
			}
			return ""
		}},
		{"a session per acquisition, as by default", strings.Replace(good, "{ttl: 1s}", "{kind: etcd, ttl: 1s, session: acquire}", 1),
			func(sc *Scenario) string {
				if sc.Lock.Session != "" {
					return fmt.Sprintf("session %q, want the default", sc.Lock.Session)
				}
				return ""
			}},
		{"wait until up in a generated workload", generated + "steps:\n  - wait: {until: up, node: n1}\n", func(sc *Scenario) string {
			if len(sc.Steps) != 1 || sc.Steps[0].Until != UntilUp {
				return "wait until up not parsed"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(tc.yaml), "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.check(sc); msg != "" {
				t.Errorf("%s: %+v", msg, sc)
			}
		})
	}
}

func TestParseNewFieldsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"bad backend", strings.Replace(good, "{nodes: 3}", "{nodes: 3, backend: kubernetes}", 1),
			[]string{"f.yaml:3", "cluster.backend", `"kubernetes"`, "local, docker"}},
		{"unknown cluster field lists backend", strings.Replace(good, "{nodes: 3}", "{nodes: 3, backnd: docker}", 1),
			[]string{"f.yaml:3", "backnd", "nodes, persistence, replicas, backend"}},
		{"negative retries", strings.Replace(good, "{ttl: 1s}", "{ttl: 1s, retries: -1}", 1),
			[]string{"f.yaml:4", "lock.retries", `"-1"`, "0 to 100"}},
		{"retries not a number", strings.Replace(good, "{ttl: 1s}", "{ttl: 1s, retries: many}", 1),
			[]string{"f.yaml:4", "lock.retries", "whole number"}},
		{"unknown lock field lists the new ones", strings.Replace(good, "{ttl: 1s}", "{ttl: 1s, retry: 3}", 1),
			[]string{"f.yaml:4", "retry", "node_timeout, retries, extend, session"}},
		{"bad extend", strings.Replace(generated, "{ttl: 1s}", "{ttl: 1s, extend: twice}", 1),
			[]string{"f.yaml:4", "lock.extend", `"twice"`, "on", "off"}},
		{"extend as a list", strings.Replace(generated, "{ttl: 1s}", "{ttl: 1s, extend: [on]}", 1),
			[]string{"f.yaml:4", "lock.extend", "want on"}},
		{"extend with steps", strings.Replace(good, "{ttl: 1s}", "{ttl: 1s, extend: on}", 1),
			[]string{"f.yaml:4", "lock.extend", "only for a generated workload", "- extend: {client: c1}"}},
		{"bad acquire expect", good + "  - acquire: {client: c2, expect: extended}\n",
			[]string{"f.yaml:8", "steps[1].acquire.expect", `"extended"`, "acquired, refused"}},
		{"bad expect per lock", good + "  - acquire: {client: c2, expect: {default: acquired, redislock: extended}}\n",
			[]string{"f.yaml:8", "steps[1].acquire.expect.redislock", `"extended" is not valid; want one of acquired, refused, any`}},
		// A step's plain expect names an outcome; leaving it out is any.
		{"any as a plain expect", good + "  - acquire: {client: c2, expect: any}\n",
			[]string{"f.yaml:8", "steps[1].acquire.expect", `"any" is not valid; want one of acquired, refused`}},
		{"expect of an unknown lock", good + "  - acquire: {client: c2, expect: {chubby: refused}}\n",
			[]string{"steps[1].acquire.expect.chubby", `unknown lock kind "chubby"`, "default or one of redlock"}},
		{"expect per lock twice", good + "  - acquire: {client: c2, expect: {redislock: refused, redislock: acquired}}\n",
			[]string{"steps[1].acquire.expect.redislock", "listed twice"}},
		{"bad extend expect", good + "  - extend: {client: c1, expect: acquired}\n",
			[]string{"f.yaml:8", "steps[1].extend.expect", `"acquired"`, "extended, refused"}},
		{"release has no expect", good + "  - release: {client: c1, expect: released}\n",
			[]string{"f.yaml:8", "steps[1].release.expect", "valid fields: client, key, again"}},
		{"bad session", strings.Replace(good, "{ttl: 1s}", "{kind: etcd, ttl: 1s, session: shared}", 1),
			[]string{"f.yaml:4", "lock.session", `"shared"`, "acquire, client"}},
		{"a session of the client's for a Redis lock", strings.Replace(good, "{ttl: 1s}", "{kind: [etcd, redlock], ttl: 1s, session: client}", 1),
			[]string{"f.yaml:4", "lock.session", "only etcd's client mutex", "redlock does not"}},
		{"fsync without a delay", good + "  - fsync: {node: n3}\n",
			[]string{"f.yaml:8", "steps[1].fsync.delay", "missing"}},
		{"fsync delay too long", good + "  - fsync: {node: n3, delay: 2h}\n",
			[]string{"f.yaml:8", "steps[1].fsync.delay", `"2h"`, "want from 1ms to"}},
		{"fsync of an unknown node", good + "  - fsync: {node: n9, delay: 1s}\n",
			[]string{"f.yaml:8", "steps[1].fsync.node", `"n9"`}},
		{"bad again", good + "  - release: {client: c1, again: twice}\n",
			[]string{"f.yaml:8", "steps[1].release.again", `"twice"`, "want true"}},
		{"extend of an unknown client", good + "  - extend: {client: c9}\n",
			[]string{"f.yaml:8", "steps[1].extend.client", `"c9"`, "c1, c2"}},
		{"extend without client", good + "  - extend: {expect: extended}\n",
			[]string{"f.yaml:8", "steps[1].extend.client", "missing"}},
		{"extend in a generated workload", generated + "steps:\n  - extend: {client: c1}\n",
			[]string{"f.yaml:7", "steps[0].extend", "not allowed with workload.kind counter"}},
		{"wait until expired in a generated workload", generated + "steps:\n  - wait: {until: expired, client: c1}\n",
			[]string{"f.yaml:7", "steps[0].wait", "not allowed with workload.kind counter"}},
		{"bad wait condition", good + "  - wait: {until: ready, node: n1}\n",
			[]string{"f.yaml:8", "steps[1].wait.until", `"ready"`, "expired, up, down, paused, wrote"}},
		{"wait without until", good + "  - wait: {node: n1}\n",
			[]string{"f.yaml:8", "steps[1].wait.until", "missing"}},
		{"wait until up without node", good + "  - wait: {until: up}\n",
			[]string{"f.yaml:8", "steps[1].wait.node", "missing"}},
		{"wait until down of an unknown node", good + "  - wait: {until: down, node: n7}\n",
			[]string{"f.yaml:8", "steps[1].wait.node", `"n7"`, "n1, n2, n3"}},
		{"wait until expired without client", good + "  - wait: {until: expired}\n",
			[]string{"f.yaml:8", "steps[1].wait.client", "missing"}},
		{"wait until expired with a node", good + "  - wait: {until: expired, client: c1, node: n1}\n",
			[]string{"f.yaml:8", "steps[1].wait.node", "not used by until expired"}},
		{"wait until up with a client", good + "  - wait: {until: up, node: n1, client: c1}\n",
			[]string{"f.yaml:8", "steps[1].wait.client", "not used by until up"}},
		{"wait until paused without client", good + "  - wait: {until: paused}\n",
			[]string{"f.yaml:8", "steps[1].wait.client", "missing: until paused"}},
		{"wait until wrote with a node", generated + "steps:\n  - wait: {until: wrote, client: c1, node: n1}\n",
			[]string{"f.yaml:7", "steps[0].wait.node", "not used by until wrote"}},
		{"wait until wrote without a resource", good + "  - wait: {until: wrote, client: c1}\n",
			[]string{"f.yaml:8", "steps[1].wait.until", "wrote waits for a write to the storage", "counter, bank or set"}},
		{"bad wait timeout", good + "  - wait: {until: up, node: n1, timeout: soon}\n",
			[]string{"f.yaml:8", "steps[1].wait.timeout", `"soon"`, "such as 1500ms"}},
		{"unknown wait field", good + "  - wait: {until: up, node: n1, for: 1s}\n",
			[]string{"f.yaml:8", "steps[1].wait.for", "valid fields: until, client, key, node, timeout, at_most"}},
		{"wait with timeout and at_most", good + "  - wait: {until: up, node: n1, timeout: 1s, at_most: 1s}\n",
			[]string{"f.yaml:8", "steps[1].wait.at_most", "not both"}},
		{"bad wait duration names both forms", good + "  - wait: later\n",
			[]string{"f.yaml:8", "steps[1].wait", "3s..6s", "{until: expired, client: c1}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "f.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
