package leader

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

// TLS is the mutual TLS of a cluster: this node's certificate and key, and the certificate authorities that
// sign the certificate of every node (one CA, or several while one replaces another). With it, Raft
// connections and internal calls are encrypted, and both ends of each connection check the other's
// certificate against the CAs:
//
//   - the end that connects checks that the other's certificate is signed by the CAs, valid now, allowed
//     for TLS servers, and names the host it dialled: an IP address needs an IP subject alternative name, a
//     host name a DNS one (the host of a peer's raft_addr for Raft, of its api_addr for internal calls);
//   - the end that accepts checks that the other's certificate is signed by the CAs, valid now and allowed
//     for TLS clients. It checks no name: a node connects from whichever of its addresses the system picks.
//
// So every node's certificate serves both ways. The cluster secret still proves membership on top of it
// (the handshake of handshake.go inside the TLS connection, and the signature of every internal call): TLS
// authenticates hosts and protects the traffic, the secret says the host belongs to this cluster.
//
// Raft needs TLS 1.3 (every node is reaper); the admin listener, which operators' tools and load balancers
// also reach, takes TLS 1.2 as well. A TLS is read once, at start: replacing the files takes a restart.
type TLS struct {
	cert tls.Certificate // with Leaf set
	cas  *x509.CertPool
}

// LoadTLS reads this node's certificate (certFile: PEM, the certificate first, then any intermediate
// certificates), its private key (keyFile: PEM) and the cluster's CAs (caFile: PEM, one certificate or
// more). It checks that the key is the certificate's, and that the certificate is valid now, signed by the
// CAs and allowed for TLS servers and clients alike. It does not block. The error, if any, is a conf.List
// of every problem found, at the paths "cert", "key" and "ca".
func LoadTLS(certFile, keyFile, caFile string) (*TLS, error) {
	var errs conf.Errors
	certPEM, certProblem := readPEM(certFile, "certificate")
	keyPEM, keyProblem := readPEM(keyFile, "private key")
	cas, caErr := LoadCAs(caFile)
	for _, p := range []struct{ path, problem string }{{"cert", certProblem}, {"key", keyProblem}, {"ca", errText(caErr)}} {
		if p.problem != "" {
			errs.Add(p.path, "%s", p.problem)
		}
	}
	if errs.Len() > 0 {
		return nil, errs.Err()
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		errs.Add("key", "%s", pairProblem(keyFile, certFile, err))
		return nil, errs.Err()
	}
	if cert.Leaf == nil { // set by X509KeyPair unless GODEBUG=x509keypairleaf=0
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			errs.Add("cert", "%s holds a certificate that cannot be parsed: %s", strconv.Quote(certFile), err)
			return nil, errs.Err()
		}
	}
	if problem := verifyOwn(cert, cas, strconv.Quote(caFile), time.Now()); problem != "" {
		errs.Add("cert", "%s %s", strconv.Quote(certFile), problem)
		return nil, errs.Err()
	}
	return &TLS{cert: cert, cas: cas}, nil
}

// LoadCAs reads a PEM bundle of CA certificates (one or more), such as cluster.tls.ca: the CAs a client
// of the cluster's TLS listeners trusts. The error says what is wrong with the file, without a field path.
func LoadCAs(caFile string) (*x509.CertPool, error) {
	data, problem := readPEM(caFile, "certificate")
	if problem != "" {
		return nil, errors.New(problem)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no certificate that can be parsed", strconv.Quote(caFile))
	}
	return pool, nil
}

// readPEM reads file and checks that it holds a PEM block of the kind ("certificate" or "private key"). It
// returns what is wrong otherwise.
func readPEM(file, kind string) ([]byte, string) {
	if file == "" {
		return nil, "is required with tls"
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, conf.Unreadable(file, err)
	}
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, strconv.Quote(file) + " holds no PEM " + kind
		}
		if kind == "certificate" && b.Type == "CERTIFICATE" || kind == "private key" && strings.HasSuffix(b.Type, "PRIVATE KEY") {
			return data, ""
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// pairProblem says why tls.X509KeyPair refused the pair.
func pairProblem(keyFile, certFile string, err error) string {
	if strings.Contains(err.Error(), "does not match") {
		return fmt.Sprintf("%s is not the private key of the certificate in %s", strconv.Quote(keyFile), strconv.Quote(certFile))
	}
	return fmt.Sprintf("%s and %s are not a usable pair: %s", strconv.Quote(keyFile), strconv.Quote(certFile),
		strings.TrimPrefix(err.Error(), "tls: "))
}

// verifyOwn checks this node's certificate as the other nodes will, except for its names; it returns what
// is wrong, to follow the certificate file's name, or "". caName names the CAs' file in the message.
func verifyOwn(cert tls.Certificate, cas *x509.CertPool, caName string, now time.Time) string {
	leaf := cert.Leaf
	switch {
	case now.Before(leaf.NotBefore):
		return "is not valid before " + leaf.NotBefore.UTC().Format(time.RFC3339) + " (is this machine's clock right?)"
	case now.After(leaf.NotAfter):
		return "expired on " + leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	for _, use := range []struct {
		usage x509.ExtKeyUsage
		name  string
	}{{x509.ExtKeyUsageServerAuth, "server"}, {x509.ExtKeyUsageClientAuth, "client"}} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: cas, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{use.usage}})
		var unknown x509.UnknownAuthorityError
		var invalid x509.CertificateInvalidError
		switch {
		case err == nil:
		case errors.As(err, &unknown):
			return "is not signed by a CA of " + caName
		case errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage:
			return "is not allowed for TLS " + use.name + " authentication: every node's certificate serves both ways " +
				"(give it extendedKeyUsage serverAuth and clientAuth, or none)"
		default:
			return "cannot be verified against " + caName + ": " + err.Error()
		}
	}
	return ""
}

// Names are the host names and IP addresses this node's certificate is valid for, as written in it.
func (t *TLS) Names() []string {
	names := slices.Clone(t.cert.Leaf.DNSNames)
	for _, ip := range t.cert.Leaf.IPAddresses {
		names = append(names, ip.String())
	}
	return names
}

// Covers reports whether this node's certificate is valid for host, an IP address or a host name: whether
// a node that dials host accepts it.
func (t *TLS) Covers(host string) bool {
	return t.cert.Leaf.VerifyHostname(host) == nil
}

// NotAfter is when this node's certificate expires.
func (t *TLS) NotAfter() time.Time { return t.cert.Leaf.NotAfter }

// AdminConfig is the TLS configuration of the admin listener, which serves operators (/api/…, with the admin
// token; /healthz and /readyz, open) and the other nodes (/internal/…) on one port: this node's certificate,
// TLS 1.2 or later, a client certificate optional but, when one is sent, checked against the CAs. API.Internal
// refuses a call that came without a checked client certificate.
func (t *TLS) AdminConfig() *tls.Config {
	return t.serverConfig(tls.VersionTLS12, tls.VerifyClientCertIfGiven)
}

// serverConfig is the configuration of a listener that presents this node's certificate, and checks its
// clients' certificates against the CAs as auth says.
func (t *TLS) serverConfig(minVersion uint16, auth tls.ClientAuthType) *tls.Config {
	return &tls.Config{
		MinVersion:   minVersion,
		Certificates: []tls.Certificate{t.cert},
		ClientAuth:   auth,
		ClientCAs:    t.cas,
	}
}

// clientConfig is the configuration of a connection to another node, to its Raft listener or its admin
// listener: TLS 1.3, this node's certificate sent, the other's checked against the CAs and serverName (the
// host dialled). http.Transport sets serverName from the URL when it is empty.
func (t *TLS) clientConfig(serverName string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// Always sent, even when the listener names other CAs than its issuer: the listener then says in its
		// log that it refused a certificate of another CA, not that none came.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &t.cert, nil },
		RootCAs:              t.cas,
		ServerName:           serverName,
	}
}

// accept runs the TLS handshake of an incoming Raft connection, under timeout: TLS 1.3, a client certificate
// signed by the CAs required. Errors wrap ErrHandshake.
func (t *TLS) accept(conn net.Conn, timeout time.Duration) (net.Conn, error) {
	return handshakeTLS(tls.Server(conn, t.serverConfig(tls.VersionTLS13, tls.RequireAndVerifyClientCert)), timeout)
}

// dial runs the TLS handshake of a Raft connection to address (host:port), under timeout: the listener's
// certificate must name host. Errors wrap ErrHandshake.
func (t *TLS) dial(conn net.Conn, address string, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	return handshakeTLS(tls.Client(conn, t.clientConfig(host)), timeout)
}

// handshakeTLS runs c's TLS handshake under timeout, and clears the deadline after it.
func handshakeTLS(c *tls.Conn, timeout time.Duration) (net.Conn, error) {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("%w: set deadline: %w", ErrHandshake, err)
	}
	if err := c.Handshake(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHandshake, explainTLS(err))
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("%w: clear deadline: %w", ErrHandshake, err)
	}
	return c, nil
}

// explainTLS adds to an error of a TLS connection's handshakes the likely cause an operator can fix. A
// refusal by the peer arrives as an alert, with TLS 1.3 at the dialer's first read (our handshake's) rather
// than in its TLS handshake: the listener checks the dialer's certificate after the dialer's side is done.
func explainTLS(err error) error {
	var record tls.RecordHeaderError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "remote error":
		return fmt.Errorf("%w (the peer refused this node's certificate: is it signed by a CA of the peer's cluster.tls.ca, valid now, and does it name this node's hosts?)", err)
	case errors.As(err, &record):
		return fmt.Errorf("%w (the peer does not speak TLS: is cluster.tls set on every node?)", err)
	case errors.As(err, &unknown):
		return fmt.Errorf("%w (the peer's certificate is not signed by a CA of cluster.tls.ca)", err)
	case errors.As(err, &host):
		return fmt.Errorf("%w (a node's certificate must name the hosts the others dial: those of its raft_addr and api_addr)", err)
	}
	return err
}
