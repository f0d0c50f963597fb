package cluster

import (
	"strings"
	"testing"
)

// Issue 33, hardening 10: etcd logs its initial-cluster-token, and the
// served node logs held the run password's first 8 hex digits. No 8
// digits of the password are in the config now, and the token still
// differs from run to run.
func TestEtcdConfigTellsNothingOfThePassword(t *testing.T) {
	m := Member{Name: "n1", ID: 1, Port: 2379, PeerPorts: []int{2380}}
	seen := map[string]bool{}
	for range 20 {
		pw := RandomHex(16)
		conf := etcdConfig(ServerConfig{Port: 2379, Bind: "127.0.0.1", Password: pw, DataDir: "/d", Member: &m, Ensemble: []Member{m}})
		for i := 0; i+8 <= len(pw); i++ {
			if strings.Contains(conf, pw[i:i+8]) {
				t.Fatalf("the config holds %q of the password:\n%s", pw[i:i+8], conf)
			}
		}
		token := etcdClusterToken(pw)
		if seen[token] || !strings.Contains(conf, token) {
			t.Fatalf("token %s: seen before %v, in the config %v", token, seen[token], strings.Contains(conf, token))
		}
		seen[token] = true
	}
}
