package driver

import (
	"fmt"
	"os"
	"path/filepath"

	"splitbrain/cluster"
)

// writeTLS writes a client's TLS material for the run's etcd members
// (cluster.EtcdClientPEM, drawn from the run's password) into a private
// folder of its own: in the run's registry entry when the driver has one
// (reaped with it, should the harness die), else in the temporary folder.
// The key is the run's, so the folder is the harness's user's alone
// (0700, files 0600).
func writeTLS(cfg Config) (*TLSFiles, error) {
	ca, cert, key, err := cluster.EtcdClientPEM(cfg.Password)
	if err != nil {
		return nil, fmt.Errorf("TLS material for etcd: %w", err)
	}
	parent := ""
	if cfg.Live != nil {
		parent = cfg.Live.Dir()
	}
	// MkdirTemp makes the folder 0700.
	dir, err := os.MkdirTemp(parent, "tls-"+cfg.Client+"-")
	if err != nil {
		return nil, fmt.Errorf("TLS material for etcd: %w", err)
	}
	files := &TLSFiles{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "cert.pem"),
		KeyFile: filepath.Join(dir, "key.pem"), ServerName: cluster.EtcdServerName}
	for path, data := range map[string][]byte{files.CAFile: ca, files.CertFile: cert, files.KeyFile: key} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("TLS material for etcd: %w", err)
		}
	}
	return files, nil
}

// removeTLS removes what writeTLS wrote, if anything.
func removeTLS(files *TLSFiles) {
	if files != nil {
		_ = os.RemoveAll(filepath.Dir(files.CAFile))
	}
}
