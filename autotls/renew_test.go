package autotls

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/pebbletest"
	"github.com/reapergw/reaper/internal/testwait"
)

// serveTLS completes the handshake of every connection to ln with cfg, then
// closes it: enough for a client to read the certificate served.
func serveTLS(t *testing.T, ln net.Listener, cfg *tls.Config) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				tls.Server(c, cfg).Handshake()
			}()
		}
	}()
}

// servedCert is the certificate the gateway serves for name, verified against
// roots.
func servedCert(t *testing.T, addr, name string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: name, RootCAs: roots})
	if err != nil {
		t.Fatalf("handshake for %s: %v", name, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0]
}

// A certificate is renewed in the background before it expires, and the new one
// is served: pebble issues certificates valid for 30 s, and the manager checks
// every second.
func TestManager_RenewsBeforeExpiryAgainstPebble(t *testing.T) {
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const validity = 30 * time.Second
	pebble := pebbletest.Start(t, pebbletest.Options{
		HTTPPort: httpLn.Addr().(*net.TCPAddr).Port, TLSPort: tlsLn.Addr().(*net.TCPAddr).Port, Validity: validity,
	})
	pem, err := os.ReadFile(pebble.CARootFile)
	if err != nil {
		t.Fatal(err)
	}
	dirRoots := x509.NewCertPool()
	dirRoots.AppendCertsFromPEM(pem)
	logs := &logtest.Buffer{}
	m, err := New(Options{
		CA: pebble.DirectoryURL, Roots: dirRoots, HTTP01: true,
		HTTPAddr: httpLn.Addr().String(), TLSAddr: tlsLn.Addr().String(),
		Storage:            &certmagic.FileStorage{Path: t.TempDir()},
		Logger:             logs.Logger(slog.LevelDebug),
		RenewCheckInterval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	srv := &http.Server{Handler: m.HTTPHandler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(httpLn)
	t.Cleanup(func() { srv.Close() })
	serveTLS(t, tlsLn, m.TLSConfig())

	m.SetHosts([]string{"renew.test"})
	roots := pebble.IssuerRoots(t)
	first := servedCert(t, tlsLn.Addr().String(), "renew.test", roots) // waits for the first certificate
	if life := first.NotAfter.Sub(first.NotBefore); life > validity+time.Second {
		t.Fatalf("pebble issued a certificate valid for %v, want %v", life, validity)
	}
	var renewed *x509.Certificate
	testwait.For(t, 2*validity, "a renewed certificate served", func() bool {
		c := servedCert(t, tlsLn.Addr().String(), "renew.test", roots)
		if c.SerialNumber.Cmp(first.SerialNumber) != 0 {
			renewed = c
			return true
		}
		return false
	})
	if !renewed.NotBefore.After(first.NotBefore) || renewed.DNSNames[0] != "renew.test" {
		t.Errorf("renewed certificate %v (from %v, names %v); the first was from %v", renewed.SerialNumber, renewed.NotBefore, renewed.DNSNames, first.NotBefore)
	}
	if !time.Now().Before(first.NotAfter) {
		t.Errorf("the renewed certificate came at %v, after the first expired (%v)", time.Now(), first.NotAfter)
	}
	if !strings.Contains(logs.String(), "certificate renewed") {
		t.Errorf("no 'certificate renewed' line:\n%s", logs.String())
	}
	if n := pebble.Orders(); n != 2 {
		t.Errorf("pebble took %d orders, want 2 (the certificate, its renewal)", n)
	}
}
