package cluster

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// etcd 3.4 answers some requests without authentication (LeaseLeases,
// LeaseKeepAlive: issue 33 saw another user keep a run's leases alive),
// and before the harness turns authentication on (Kind.Secure) it answers
// anyone. So every port of a run's etcd member, the clients' and the
// peers', takes TLS connections only, from clients with a certificate of
// the run's own authority (client-cert-auth): a process that does not
// know the run's password cannot get a word in, from the member's first
// start on, on either backend.
//
// Every key is drawn from the password (ed25519 from a hash of it), and
// every certificate is signed deterministically with fixed fields: the
// members, the harness and the lock clients each make the same authority
// and certificates from the password alone, so nothing more than the
// password goes from the harness to the clients, and no file of keys
// outlives the run.

// EtcdServerName is the name every member's certificate carries and
// every client checks: clients dial proxies and containers by address,
// and the name stays the same whichever.
const EtcdServerName = "etcd.splitbrain.invalid"

// The files of a member's TLS material, in its data folder (Kind.Files).
const (
	etcdCAFile   = "splitbrain-ca.pem"
	etcdCertFile = "splitbrain-cert.pem"
	etcdKeyFile  = "splitbrain-key.pem"
)

// etcdKey is the ed25519 key for purpose, drawn from password.
func etcdKey(password, purpose string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("splitbrain etcd " + purpose + "\x00" + password))
	return ed25519.NewKeyFromSeed(seed[:])
}

// etcdValidity is every certificate's: fixed, so that the same password
// makes the same certificate, and wide, so that a clock the nemesis moves
// never puts one out of date.
var etcdValidity = [2]time.Time{
	time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC),
}

// etcdCA is the run's authority: its certificate and key.
func etcdCA(password string) (*x509.Certificate, ed25519.PrivateKey, error) {
	key := etcdKey(password, "ca")
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "splitbrain run authority"},
		NotBefore:             etcdValidity[0],
		NotAfter:              etcdValidity[1],
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("etcd: the run's authority: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// etcdLeaf is the certificate (DER) and key of a member at ip (also its
// client certificate toward its peers), or of a client (ip nil).
func etcdLeaf(password string, ip net.IP) ([]byte, ed25519.PrivateKey, *x509.Certificate, error) {
	return etcdCert(password, "leaf", "splitbrain", ip)
}

// etcdCert is a certificate of the run's authority with key purpose and
// common name cn.
func etcdCert(password, purpose, cn string, ip net.IP) ([]byte, ed25519.PrivateKey, *x509.Certificate, error) {
	ca, caKey, err := etcdCA(password)
	if err != nil {
		return nil, nil, nil, err
	}
	key := etcdKey(password, purpose)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    etcdValidity[0],
		NotAfter:     etcdValidity[1],
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{EtcdServerName},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if ip != nil && !ip.IsLoopback() {
		// Members dial their peers by address and check it.
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	der, err := x509.CreateCertificate(nil, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("etcd: a certificate of the run: %w", err)
	}
	return der, key, ca, nil
}

// etcdFiles are a member's TLS files, by name.
func etcdFiles(c ServerConfig) (map[string]string, error) {
	var ip net.IP
	if c.Member != nil {
		ip = net.ParseIP(c.Member.HostAddr())
	}
	der, key, ca, err := etcdLeaf(c.Password, ip)
	if err != nil {
		return nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		etcdCAFile:   string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})),
		etcdCertFile: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		etcdKeyFile:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})),
	}, nil
}

// EtcdTLS is a client's TLS configuration for a run with password: its
// certificate of the run's authority, and members checked against it.
func EtcdTLS(password string) (*tls.Config, error) {
	der, key, ca, err := etcdLeaf(password, nil)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		RootCAs:      pool,
		ServerName:   EtcdServerName,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// EtcdClientPEM is a client's TLS material for a run with password, as
// PEM: the run's authority, the client's certificate and its key (PKCS #8,
// ed25519) — for a lock client in another process (a driver), which gets
// them as files. Its certificate names no common name: etcd 3.4's gRPC
// gateway, which a client without gRPC talks to, refuses a request whose
// client certificate names one ("CommonName of client sending a request
// against gateway will be ignored and not used as expected": with
// client-cert-auth, etcd would take it for the user), so the client
// authenticates with the run's user and password alone.
func EtcdClientPEM(password string) (ca, cert, key []byte, err error) {
	der, k, caCert, err := etcdCert(password, "driver", "", nil)
	if err != nil {
		return nil, nil, nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
}
