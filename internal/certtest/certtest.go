// Package certtest makes certificates for tests: a certificate authority, and
// certificates it signs for chosen names, dates and uses, as PEM and as files.
// Keys are ECDSA P-256, fast enough to make a few per test.
//
// Only tests import it.
package certtest

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
	"testing"
	"time"
)

// CA is a certificate authority that signs test certificates.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte // the CA's certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA named name, valid from an hour ago for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, PEM: encode("CERTIFICATE", der), key: key}
}

// Pool is a pool that holds the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Options describe a certificate. The zero value is a certificate for the IP
// 127.0.0.1, valid from an hour ago for a day, for TLS servers and clients.
type Options struct {
	IPs       []string // IP subject alternative names
	DNS       []string // DNS subject alternative names
	NotBefore time.Time
	NotAfter  time.Time
	Usages    []x509.ExtKeyUsage // default: server and client authentication
}

// Pair is a certificate and its private key.
type Pair struct {
	CertPEM, KeyPEM []byte
	Leaf            *x509.Certificate
}

// Issue makes a certificate named name, signed by the CA.
func (ca *CA) Issue(t testing.TB, name string, o Options) Pair {
	t.Helper()
	if len(o.IPs) == 0 && len(o.DNS) == 0 {
		o.IPs = []string{"127.0.0.1"}
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	if o.Usages == nil {
		o.Usages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		DNSNames:     o.DNS,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  o.Usages,
	}
	for _, ip := range o.IPs {
		parsed := net.ParseIP(ip)
		if parsed == nil {
			t.Fatalf("certtest: %q is not an IP", ip)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, parsed)
	}
	key := newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Pair{CertPEM: encode("CERTIFICATE", der), KeyPEM: encode("PRIVATE KEY", keyDER), Leaf: leaf}
}

// TLS is the pair as a tls.Certificate.
func (p Pair) TLS(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Files writes the certificate and the key into dir as <name>.crt and <name>.key
// and returns their paths.
func (p Pair) Files(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	return Write(t, dir, name+".crt", p.CertPEM), Write(t, dir, name+".key", p.KeyPEM)
}

// Write writes data into dir/name, readable by its owner only, and returns the path.
func Write(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func encode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
