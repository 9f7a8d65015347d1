package redistest

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/certtest"
)

// serverCert is a certificate for 127.0.0.1, written to dir for the server, with
// the pool that trusts it for clients.
type serverCert struct {
	certFile, keyFile string
	pool              *x509.CertPool
}

func newServerCert(t testing.TB, dir string) *serverCert {
	t.Helper()
	ca := certtest.NewCA(t, "redistest CA")
	pair := ca.Issue(t, "redistest", certtest.Options{Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	certFile, keyFile := pair.Files(t, dir, "tls")
	return &serverCert{certFile: certFile, keyFile: keyFile, pool: ca.Pool()}
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
