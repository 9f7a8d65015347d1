package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// serverCert is a self-signed certificate for 127.0.0.1, written to dir for the
// server, with the pool that trusts it for clients.
type serverCert struct {
	certFile, keyFile string
	pool              *x509.CertPool
}

func newServerCert(dir string) (*serverCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &serverCert{
		certFile: filepath.Join(dir, "tls.crt"),
		keyFile:  filepath.Join(dir, "tls.key"),
		pool:     x509.NewCertPool(),
	}
	c.pool.AddCert(cert)
	if err := os.WriteFile(c.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

// TLSConfig is the client configuration that trusts the server's certificate; nil
// unless the server was started with Options.TLS.
func (s *Server) TLSConfig() *tls.Config {
	if s.cert == nil {
		return nil
	}
	return &tls.Config{RootCAs: s.cert.pool, MinVersion: tls.VersionTLS12}
}

// dialer connects to the server as Do does: over TLS when the server wants it.
func (s *Server) dialer() func(addr string, timeout time.Duration) (net.Conn, error) {
	cfg := s.TLSConfig()
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		d := &net.Dialer{Timeout: timeout}
		if cfg == nil {
			return d.Dial("tcp", addr)
		}
		return tls.DialWithDialer(d, "tcp", addr, cfg)
	}
}
