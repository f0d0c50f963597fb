package driver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/cluster"
)

// An etcd hello carries the client's TLS material as files (every run's
// etcd takes TLS clients of the run's authority only, and a driver in
// another language cannot draw them from the password as the harness
// does): in a private folder of the run's registry entry, a certificate
// that the run's authority signed and whose key matches, with no common
// name (etcd's gateway refuses one), gone once the driver exited. A
// Redis hello carries none.
func TestEtcdHelloCarriesTLSFiles(t *testing.T) {
	t.Parallel()
	live, _, err := cluster.RegisterLive(t.TempDir(), "drvtest-"+cluster.RandomHex(4))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Remove() }()
	for _, tc := range []struct {
		server  string
		wantTLS bool
	}{{ServerEtcd, true}, {ServerRedis, false}, {ServerZooKeeper, false}} {
		t.Run(tc.server, func(t *testing.T) {
			helloFile := filepath.Join(t.TempDir(), "hello")
			// The driver keeps its hello and waits for its stdin's end.
			script := `read hello; printf '%s' "$hello" > ` + helloFile + `; echo '{"op":"ready","name":"fake"}'; while read x; do :; done`
			p, err := Start(context.Background(), Config{Command: []string{"sh", "-c", script}, Client: "c1", Server: tc.server,
				Nodes: []Node{{Name: "n1", Addr: "127.0.0.1:1"}}, Password: "secret", Live: live, StartTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = p.Stop(context.Background()) }()
			data, err := os.ReadFile(helloFile)
			if err != nil {
				t.Fatal(err)
			}
			var hello Request
			if err := json.Unmarshal(data, &hello); err != nil {
				t.Fatalf("hello %s: %v", data, err)
			}
			if !tc.wantTLS {
				if hello.TLS != nil || strings.Contains(string(data), `"tls"`) {
					t.Errorf("a %s hello carries TLS material: %s", tc.server, data)
				}
				return
			}
			f := hello.TLS
			if f == nil {
				t.Fatalf("an etcd hello without tls: %s", data)
			}
			if f.ServerName != cluster.EtcdServerName {
				t.Errorf("server_name %q, want %q", f.ServerName, cluster.EtcdServerName)
			}
			dir := filepath.Dir(f.CAFile)
			if !strings.HasPrefix(dir, live.Dir()+"/") {
				t.Errorf("TLS files in %s, want under the registry entry %s", dir, live.Dir())
			}
			for path, want := range map[string]os.FileMode{dir: 0o700, f.CAFile: 0o600, f.CertFile: 0o600, f.KeyFile: 0o600} {
				if info, err := os.Stat(path); err != nil {
					t.Error(err)
				} else if info.Mode().Perm() != want {
					t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
				}
			}
			pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
			if err != nil {
				t.Fatalf("the certificate and key are no pair: %v", err)
			}
			leaf, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			caPEM, err := os.ReadFile(f.CAFile)
			if err != nil {
				t.Fatal(err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caPEM) {
				t.Fatal("no certificate in the CA file")
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("the client certificate does not verify against the run's authority: %v", err)
			}
			if leaf.Subject.CommonName != "" {
				t.Errorf("client certificate names %q, want no common name (etcd's gateway refuses one)", leaf.Subject.CommonName)
			}
			if err := p.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			<-p.Exited()
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("TLS folder left after the driver exited: %v", err)
			}
		})
	}
}
